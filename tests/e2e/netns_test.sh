#!/usr/bin/env bash
# Multi-host end-to-end test: every starlingd runs in its own network namespace with its
# own address, the namespaces joined by a bridge like hosts on a LAN switch. CURVE keys are made
# with `starlingd --keygen` and listed in one cluster file, as a user would on real hosts, and a
# probe in a namespace of its own watches the run.
#
#   1. reference: EXTRA, no faults;
#   2. 10% packet loss on every host (nftables) and a 20 Mbit/s limit on every link (tc tbf), a
#      probe monitor watching;
#   3. a partition {0,1} | {2,3,4} (nftables drop rules) that heals after a few seconds;
#   4. the reference run again with the cluster file agreed through a shared directory
#      (starlingd --rendezvous) instead of written by hand.
# EXTRA is deterministic, so runs 2, 3 and 4 must end with the reference's models (to 1e-9): the
# network may delay and lose, but the result may not change.
#
# Usage: netns_test.sh BUILD_DIR. Needs root, iproute2 and nftables; exits 77 (CTest's skip
# code) with a message where namespaces cannot be created (netns_lib.sh). Removes everything it
# made.
set -euo pipefail

build=$(cd "${1:?usage: netns_test.sh BUILD_DIR}" && pwd)
# shellcheck source=tests/e2e/netns_lib.sh
source "$(dirname "$0")/netns_lib.sh"
n=5
subnet=10.213.$(( $$ % 200 + 20 ))
port=7100

# One namespace per host: node i at $subnet.(i+1), the probe at $subnet.100.
for ((i = 0; i < n; i++)); do add_host "${tag}n$i" "$subnet.$((i + 1))" "$i"; done
add_host "${tag}pr" "$subnet.100" 99

# Keys and the one cluster file every host reads.
{
  echo "# $n hosts on $subnet.0/24, a ring plus one chord"
  for ((i = 0; i < n; i++)); do
    key=$("$daemon" --keygen "node$i" | sed -n 's/^public key: //p')
    echo "node $i tcp://$subnet.$((i + 1)):$port $key"
  done
  echo "probe $("$daemon" --keygen probe | sed -n 's/^public key: //p')"
  for ((i = 0; i < n; i++)); do echo "edge $i $(( (i + 1) % n ))"; done
  echo "edge 0 2"
} > cluster.conf

# A small LIBSVM data set, the same for every run.
write_data data.svm 1500

run_opts=(--algorithm extra --problem logistic --l2 1e-2 --data data.svm --format libsvm
          --features 8 --seed 3)

# Starts one daemon per host; extra options follow. Sets the pids array's last n entries.
start_nodes() {  # RUN ITERATIONS [OPTIONS...]
  local run=$1 iterations=$2
  shift 2
  for ((i = 0; i < n; i++)); do
    ip netns exec "${tag}n$i" "$daemon" --cluster cluster.conf --id "$i" \
      --secret-key "node$i.key" "${run_opts[@]}" --iterations "$iterations" \
      --final-model "$run-model-$i.txt" --resend-ms 200 --give-up-s 60 --linger-s 10 "$@" \
      >"$run-node-$i.log" 2>&1 &
    pids+=($!)
    node_pids[$i]=$!
  done
}
wait_nodes() {  # RUN
  local failed=0
  for ((i = 0; i < n; i++)); do
    if ! wait "${node_pids[$i]}"; then echo "node $i of run $1 failed"; failed=1; fi
  done
  return $failed
}
# The largest relative difference between a run's models and the reference's.
compare() {  # RUN REFERENCE_RUN
  local ours="" reference="" i
  for ((i = 0; i < n; i++)); do ours+="$1-model-$i.txt "; reference+="$2-model-$i.txt "; done
  model_difference "$reference" "$ours"
}
loss_rule() {  # NS PERCENT: drop that share of packets arriving from the subnet
  ip netns exec "$1" nft add table inet starling_chaos
  ip netns exec "$1" nft add chain inet starling_chaos in '{ type filter hook input priority 0; policy accept; }'
  ip netns exec "$1" nft add rule inet starling_chaos in ip saddr "$subnet.0/24" numgen random mod 100 '<' "$2" counter drop
}
dropped() {  # NS: packets the chaos table dropped
  ip netns exec "$1" nft list table inet starling_chaos 2>/dev/null |
    sed -n 's/.*counter packets \([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }'
}
declare -a node_pids
# Over TCP a lost segment costs a retransmission time-out (200 ms or more), so the lossy run is
# kept short; the partition run is long enough for the partition to land mid-run.
iterations_loss=40
iterations_part=150

# 1. References, fault-free.
for iterations in $iterations_loss $iterations_part; do
  t0=$(seconds)
  start_nodes "ref$iterations" "$iterations"
  wait_nodes "ref$iterations"
  echo "reference: EXTRA, $n hosts, $iterations iterations, $(since "$t0") s"
done

# 2. 10% loss on every host and a 20 Mbit/s bandwidth limit on every link (tc tbf), watched by
# a probe.
for ((i = 0; i < n; i++)); do loss_rule "${tag}n$i" 10; done
shaped="20 Mbit/s tbf on every host"
for ((i = 0; i < n; i++)); do
  if ! ip netns exec "${tag}n$i" tc qdisc add dev veth0 root tbf rate 20mbit burst 32kb \
    latency 50ms 2>"$work/tbf.err"; then
    shaped="no bandwidth limit (tc tbf failed: $(head -1 "$work/tbf.err"))"
    break
  fi
done
t0=$(seconds)
start_nodes loss "$iterations_loss"
ip netns exec "${tag}pr" "$probe" monitor --cluster cluster.conf --secret-key probe.key \
  "${run_opts[@]}" --iterations "$iterations_loss" --interval-ms 1000 --timeout-s 40 \
  >loss-probe.log 2>&1 &
probe_pid=$!
pids+=($probe_pid)
wait_nodes loss
probe_code=0
wait "$probe_pid" || probe_code=$?
lost=0
for ((i = 0; i < n; i++)); do
  lost=$((lost + $(dropped "${tag}n$i")))
  ip netns exec "${tag}n$i" nft delete table inet starling_chaos
  ip netns exec "${tag}n$i" tc qdisc del dev veth0 root 2>/dev/null || true
done
diff_loss=$(compare loss "ref$iterations_loss")
rejected=$(cat loss-node-*.log | sed -n 's/.*rejected \([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
resends() { cat "$1"-node-*.log | sed -n 's/.*sent \([0-9]*\) RESENDs.*/\1/p' | awk '{ s += $1 } END { print s + 0 }'; }
echo "10% loss and $shaped: $lost packets dropped by nftables, $(since "$t0") s, messages rejected $rejected, RESENDs $(resends loss), max relative difference to the reference $diff_loss"
echo "probe (exit $probe_code): $(grep -E 'result|objective' loss-probe.log | tail -n 2 | tr '\n' ' ')"
[[ $probe_code -eq 0 ]] || { echo "the probe monitor failed"; exit 1; }

# 3. A partition {0,1} | {2,3,4} for 6 s, mid-run: both sides drop what comes from the other.
# The transport's injected delay (no netem in this kernel) makes the run last long enough.
t0=$(seconds)
start_nodes part "$iterations_part" --fault-delay-ms 10
sleep 1
for i in 0 1; do
  ip netns exec "${tag}n$i" nft add table inet starling_part
  ip netns exec "${tag}n$i" nft add chain inet starling_part in '{ type filter hook input priority 0; policy accept; }'
  for j in 2 3 4; do ip netns exec "${tag}n$i" nft add rule inet starling_part in ip saddr "$subnet.$((j + 1))" counter drop; done
done
for j in 2 3 4; do
  ip netns exec "${tag}n$j" nft add table inet starling_part
  ip netns exec "${tag}n$j" nft add chain inet starling_part in '{ type filter hook input priority 0; policy accept; }'
  for i in 0 1; do ip netns exec "${tag}n$j" nft add rule inet starling_part in ip saddr "$subnet.$((i + 1))" counter drop; done
done
sleep 6
for ((i = 0; i < n; i++)); do ip netns exec "${tag}n$i" nft delete table inet starling_part; done
healed=$(seconds)
wait_nodes part
diff_part=$(compare part "ref$iterations_part")
waits=$(cat part-node-*.log | grep -c "waiting for" || true)
echo "partition {0,1}|{2,3,4} for 6 s: healed, finished $(since "$healed") s later ($(since "$t0") s in all), $waits 'waiting for' log lines, RESENDs $(resends part), rejected $(cat part-node-*.log | sed -n 's/.*rejected \([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }'), max relative difference to the reference $diff_part"

# 4. The same reference run, but the hosts agree on the cluster file through a directory that all
# five see (starlingd --rendezvous: each makes its key pair in memory, publishes its endpoint
# with --host auto, i.e. the address of its own interface, and waits for the others), with the
# graph from --topology file: of the same edges. It must end with the reference's models.
printf 'nodes %d\n' "$n" >ring-chord.edges
for ((i = 0; i < n; i++)); do echo "$i $(( (i + 1) % n ))"; done >>ring-chord.edges
echo "0 2" >>ring-chord.edges
t0=$(seconds)
for ((i = 0; i < n; i++)); do
  ip netns exec "${tag}n$i" "$daemon" --rendezvous rdv --id "$i" --nodes "$n" --port 7200 \
    --topology file:ring-chord.edges "${run_opts[@]}" --iterations "$iterations_loss" \
    --final-model "rdv-model-$i.txt" --resend-ms 200 --give-up-s 60 --linger-s 10 \
    --rendezvous-timeout-s 60 >"rdv-node-$i.log" 2>&1 &
  pids+=($!)
  node_pids[$i]=$!
done
wait_nodes rdv
diff_rdv=$(compare rdv "ref$iterations_loss")
published=$(grep -c "^node .* tcp://$subnet\.[0-9]*:72[0-9]* " rdv/cluster.conf || true)
echo "rendezvous: $published of $n hosts in rdv/cluster.conf at their own addresses, $(since "$t0") s, max relative difference to the reference $diff_rdv"
[[ $published -eq $n ]] || { echo "netns_test: the rendezvous cluster file does not list every host at its address"; cat rdv/cluster.conf; exit 1; }

[[ $waits -gt 0 ]] || { echo "netns_test: the partition did not stall the run (it landed too late)"; exit 1; }
ok=1
for d in "$diff_loss" "$diff_part" "$diff_rdv"; do
  awk -v d="$d" 'BEGIN { exit !(d <= 1e-9) }' || ok=0
done
[[ $ok -eq 1 ]] || { echo "netns_test: a faulty run did not end with the reference's models"; exit 1; }
echo "netns_test: PASSED"
