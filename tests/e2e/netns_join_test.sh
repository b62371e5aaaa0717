#!/usr/bin/env bash
# Runs formed with starlingd --join on hosts simulated by network namespaces (netns_lib.sh), each
# host with a folder of its own and nothing shared: its key pair made there, the data and the
# trust file copied in, as a user copies them to each machine.
#
#   1. EXTRA on five hosts started with --join, the first seed in the list down (no host has
#      its address); host 4 has two interfaces, its default route on a management network, so
#      --host auto publishes an address the others cannot reach: it is refused with the advice
#      to give --host, and started again 20 s after the others with --host; meanwhile a host whose
#      key the others' trust file lacks is refused and counted, a host with another --step is
#      refused naming it, and a monitor joins by a seed and reports. The models must equal the
#      simulator's bit for bit (node i of the run: the i-th key in byte order).
#   2. SwarmSGD on the five hosts by --join, watched by the monitor: its relative gap must be
#      within the bound below of the simulator's.
#   3. A rendezvous run (the one way that shares a folder) in which host 4 publishes its
#      unreachable address: its neighbours name the address, the cause and --host; host 4, which
#      reaches them but hears nothing back, stops naming its address, and they stop with it.
#
# Usage: netns_join_test.sh BUILD_DIR (with starlingd, starling-probe and
# tests/simulated_models built). Needs root, iproute2 and nftables; exits 77 with a message where
# namespaces cannot be created. Removes everything it made.
set -euo pipefail

build=$(cd "${1:?usage: netns_join_test.sh BUILD_DIR}" && pwd)
simulated=$build/tests/simulated_models
sim=$build/node/starling-sim
# shellcheck source=tests/e2e/netns_lib.sh
source "$(dirname "$0")/netns_lib.sh"
[[ -x $simulated && -x $sim ]] || { echo "netns_join_test: build simulated_models and starling-sim first" >&2; exit 1; }

subnet=10.214.$(( $$ % 200 + 20 ))
port=7000
seeds="$subnet.50:$port,$subnet.1:$port,$subnet.2:$port"  # nobody at .50: the first seed is down
hosts=(0 1 2 3 4 5 6)  # 0-4 the run, 5 a key the trust file lacks, 6 another --step
for h in "${hosts[@]}"; do add_host "${tag}h$h" "$subnet.$((h + 1))" "$h"; done
add_host "${tag}hm" "$subnet.100" 99
# Host 4's default route goes out of a second interface (a management network): --host auto
# takes that interface's address, which the hosts on the bridge have no route to.
# (A veth pair inside the namespace stands for that network: no dummy interfaces everywhere.)
ip -n "${tag}h4" link add mgmt0 type veth peer name mgmt1
ip -n "${tag}h4" addr add 192.168.99.1/24 dev mgmt0
ip -n "${tag}h4" link set mgmt1 up
ip -n "${tag}h4" link set mgmt0 up
ip -n "${tag}h4" route add default via 192.168.99.254 dev mgmt0

# Each host's folder: its key pair (made there), the data, the trust file.
write_data data.svm 1500
for h in "${hosts[@]}" m; do
  mkdir "host$h"
  cp data.svm "host$h/"
  "$daemon" --keygen "host$h/node" >/dev/null
done
{
  for h in 0 1 2 3 4 6; do echo "$(cat "host$h/node.pub") host$h"; done
  echo "$(cat hostm/node.pub) monitor"
} >trust
for h in 0 1 2 3 4 6 m; do cp trust "host$h/trust"; done
# Host 5's copy lists its own key too (the others' were not updated).
{ cat trust; echo "$(cat host5/node.pub) host5"; } >host5/trust

common=(--problem logistic --l2 1e-2 --data data.svm --format libsvm --features 8 --seed 3
        --nodes 5 --topology ring)
extra=(--algorithm extra --iterations 80 "${common[@]}")
swarm=(--algorithm swarmsgd --iterations 3000 --step 0.05 "${common[@]}")

# Starts starlingd --join on host H in its folder, output to hostH/LOG; sets `last` to its pid.
join() {  # H LOG [OPTIONS...]
  local h=$1 log=$2
  shift 2
  (cd "host$h" && exec ip netns exec "${tag}h$h" "$daemon" --join "$seeds" --trust trust \
    --secret-key node.key --port $port --final-model model.txt --join-timeout-s 120 \
    --give-up-s 120 --linger-s 10 --wait-log-s 2 "$@" >"$log" 2>&1) &
  last=$!
  pids+=("$last")
}
monitor() {  # LOG [OPTIONS...]
  local log=$1
  shift
  (cd hostm && exec ip netns exec "${tag}hm" "$probe" monitor --join "$seeds" --trust trust \
    --secret-key node.key --timeout-s 240 --progress plain --interval-ms 2000 "$@" >"$log" 2>&1) &
  last=$!
  pids+=("$last")
}
expect_exit() {  # PID CODE WHAT
  local code=0
  wait "$1" || code=$?
  [[ $code -eq $2 ]] || { echo "netns_join_test: $3 exited $code, expected $2"; exit 1; }
}
expect_line() {  # FILE TEXT WHAT
  grep -qF -- "$2" "$1" || { echo "netns_join_test: $3: no '$2' in $1"; cat "$1"; exit 1; }
  echo "  $(basename "$(dirname "$1")")/$(basename "$1"): $(grep -F -- "$2" "$1" | head -n 1 | cut -c1-400)"
}
# Waits until FILE contains TEXT (the machine may be loaded): at most SECONDS.
wait_line() {  # FILE TEXT SECONDS
  local t0
  t0=$(seconds)
  until grep -qF -- "$2" "$1" 2>/dev/null; do
    awk -v s="$(since "$t0")" -v m="$3" 'BEGIN { exit !(s > m) }' &&
      { echo "netns_join_test: no '$2' in $1 after $3 s"; cat "$1"; exit 1; }
    sleep 0.2
  done
}

# 1. EXTRA by --join.
t0=$(seconds)
declare -A node_pid
for h in 0 1 2 3; do join "$h" extra.log "${extra[@]}"; node_pid[$h]=$last; done
join 4 extra-auto.log "${extra[@]}"  # --host auto: the management network's address
auto_pid=$last
join 5 extra.log "${extra[@]}"
stranger_pid=$last
join 6 extra.log "${extra[@]}" --step 0.9
step_pid=$last
monitor extra-monitor.log "${extra[@]}"
monitor_pid=$last
expect_exit "$auto_pid" 2 "host 4 publishing its management address"
expect_exit "$stranger_pid" 2 "host 5 (key not trusted)"
expect_exit "$step_pid" 2 "host 6 (another --step)"
echo "refusals (each exit 2):"
expect_line host4/extra-auto.log "does not answer the seed" "host 4 with --host auto"
expect_line host4/extra-auto.log "start it with --host ADDRESS" "host 4 with --host auto"
expect_line host5/extra.log "it is not in that host's trust file" "host 5"
expect_line host6/extra.log "other run options: --step 0.9 here, default at the seed" "host 6"
# Host 4 again, 20 s after the others, with the address the others reach.
wait_line host0/extra.log "4 of 5 members" 60
while awk -v s="$(since "$t0")" 'BEGIN { exit !(s < 20) }'; do sleep 0.5; done
join 4 extra.log "${extra[@]}" --host "$subnet.5"
node_pid[4]=$last
for h in 0 1 2 3 4; do expect_exit "${node_pid[$h]}" 0 "host $h (EXTRA)"; done
expect_exit "$monitor_pid" 0 "the monitor (EXTRA)"
echo "EXTRA by --join: 5 hosts, the late one 20 s after the others, $(since "$t0") s in all"
expect_line host0/extra.log "join: trying seed $subnet.50:$port" "host 0"
grep -h "seed $subnet.50:$port:" host0/extra.log | head -n 1 | cut -c1-300
expect_line host0/extra.log "this node is node" "host 0"
# Hosts 5 and 6 tried host 0 after the seed that is down (or host 1, if host 0 was not up yet):
# that seed counted them.
cat host0/extra.log host1/extra.log >seeds.log
expect_line seeds.log "is not in the trust file" "the seed host 5 tried"
expect_line seeds.log "unlisted_key=1" "the seed host 5 tried"
expect_line seeds.log "other run options: --step default here, 0.9 at host6" "the seed host 6 tried"
expect_line hostm/extra-monitor.log "members found through --join" "the monitor"
expect_line hostm/extra-monitor.log "objective" "the monitor"

# Bit for bit with the simulator: node K is the host whose log says so.
"$simulated" sim-extra "${extra[@]}"
ours="" reference=""
for h in 0 1 2 3 4; do
  id=$(sed -n 's/.*this node is node \([0-9]*\)$/\1/p' "host$h/extra.log")
  cmp -s "host$h/model.txt" "sim-extra-$id.txt" ||
    { echo "netns_join_test: host $h (node $id) ended elsewhere than the simulator's node $id"; exit 1; }
  ours+="host$h/model.txt "
  reference+="sim-extra-$id.txt "
done
echo "EXTRA: every host's model equals the simulator's node bit for bit (largest relative difference $(model_difference "$reference" "$ours"))"

# 2. SwarmSGD by --join, the five at once, watched by the monitor.
t0=$(seconds)
for h in 0 1 2 3 4; do
  join "$h" swarm.log "${swarm[@]}" --host "$subnet.$((h + 1))"
  node_pid[$h]=$last
done
monitor swarm-monitor.log "${swarm[@]}" --reference-optimum auto
monitor_pid=$last
for h in 0 1 2 3 4; do expect_exit "${node_pid[$h]}" 0 "host $h (SwarmSGD)"; done
expect_exit "$monitor_pid" 0 "the monitor (SwarmSGD)"
gap=$(sed -n 's/^rel_gap //p' hostm/swarm-monitor.log | tail -n 1)
sim_gap=$("$sim" "${swarm[@]}" --reference-optimum auto 2>/dev/null | sed -n 's/^rel_gap //p' | tail -n 1)
# The bound: the daemons exchange with whichever neighbour is free, the simulator in its own
# order, so the runs differ; the relative gap of their average model must be within 3x the
# simulator's plus 0.01.
echo "SwarmSGD by --join: $(since "$t0") s, relative gap $gap, the simulator's $sim_gap"
awk -v g="$gap" -v s="$sim_gap" 'BEGIN { exit !(g != "" && s != "" && g <= 3 * s + 0.01) }' ||
  { echo "netns_join_test: SwarmSGD's gap $gap is beyond 3 x $sim_gap + 0.01"; exit 1; }

# 3. A rendezvous run in which host 4 publishes the address the others cannot reach.
mkdir -m 700 rdv
t0=$(seconds)
for h in 0 1 2 3 4; do
  ip netns exec "${tag}h$h" "$daemon" --rendezvous rdv --id "$h" --port $port "${extra[@]}" \
    --give-up-s 20 --wait-log-s 2 --rendezvous-timeout-s 60 \
    >"rdv-$h.log" 2>&1 &
  pids+=($!)
  node_pid[$h]=$!
done
for h in 0 1 2 3 4; do
  code=0
  wait "${node_pid[$h]}" || code=$?
  exit_code[$h]=$code
  echo "  node $h: exit $code after $(since "$t0") s"
done
# Node 4 reaches the others but hears nothing back: it stops (exit 2) at UnansweredSeconds (10 s
# with --give-up-s 20) naming its address; its goodbye stops its neighbours (exit 3) at once, and
# the others follow their lead; nobody waits for its own give-up.
((exit_code[4] == 2)) || { echo "netns_join_test: node 4 exited ${exit_code[4]}, not 2"; exit 1; }
for h in 0 1 2 3; do
  ((exit_code[h] == 3)) || { echo "netns_join_test: node $h exited ${exit_code[h]}, not 3"; exit 1; }
done
expect_line rdv-0.log "cannot connect to node 4 at tcp://192.168.99.1:$port (network is unreachable" "node 0"
expect_line rdv-0.log "start node 4 with --host ADDRESS" "node 0"
expect_line rdv-4.log "but has received nothing from any of them in 10 s: their answers come over connections to this node's address tcp://192.168.99.1:$port, which do not reach it; if node 4's host has several interfaces, start node 4 with --host ADDRESS" "node 4"
grep -h "node 4 stops\|left for good" rdv-4.log rdv-0.log | sed 's/^/  /'
echo "netns_join_test: PASSED"
