#!/usr/bin/env bash
# Topology inference from pairwise gossip with real daemons (docs/results/topology-inference.md):
# N starlingd processes on loopback (CURVE on: keys made by
# `starling-probe cluster --keys`), one starling-probe infer per sample count attached at once,
# then the simulator on the same cluster file at the same sample counts. One JSON line per probe
# and per simulator run on stdout; every daemon started here is killed (by its pid) on exit.
#
#   bench/t12_daemons.sh pairwise    --algorithm pairwise-diffusion, --tick-ms TICK_MS
#   bench/t12_daemons.sh diffusion   --algorithm diffusion (synchronous, round synchronizer)
#   bench/t12_daemons.sh live        SwarmSGD on a9a (logistic, l2 1e-4), probes --live
#   bench/t12_daemons.sh sim-pairwise | sim-diffusion | sim-live   the simulator only
#
# Environment (defaults): N (50), TOPOLOGY (er:0.1), GRAPH_SEED (1), OBSERVE (10: nodes 0..9),
# SAMPLES ("1000 3000 10000"), TICK_MS (40), SEED (1: the daemons' --seed), SIM_SEEDS (1-10),
# PORT (28700), OUT (/tmp/t12-daemons), LIVE_PERIOD_MS (5: about half a node's mean
# interval between local steps at N = 50 here), LIVE_BURN_IN_MS (10000), LIVE_ITERATIONS
# (1000000: the probes end the run), TELEMETRY_MS (2: the observed nodes' report period),
# LIVE_STAMPS (node: the probes' --live-stamps; "node arrival" attaches both sets of probes to
# the same daemons, an A/B of one run), LIVE_DAEMON_OPTIONS (none: more starlingd options for
# the live run, e.g. "--compute-delay-ms 20"),
# STARLING_BUILD_DIR (build), DATA (../shared/data/a9a).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${STARLING_BUILD_DIR:-build}/node
daemon=$build/starlingd
probe=$build/starling-probe
sim=$build/starling-sim
data=$(realpath -m "${DATA:-../shared/data/a9a}")
mode=${1:-}
n=${N:-50}
topology=${TOPOLOGY:-er:0.1}
graph_seed=${GRAPH_SEED:-1}
observe=${OBSERVE:-10}
samples=${SAMPLES:-1000 3000 10000}
tick_ms=${TICK_MS:-40}
seed=${SEED:-1}
sim_seeds=${SIM_SEEDS:-1 2 3 4 5 6 7 8 9 10}
port=${PORT:-28700}
live_period=${LIVE_PERIOD_MS:-5}
live_iterations=${LIVE_ITERATIONS:-1000000}
telemetry_ms=${TELEMETRY_MS:-2}
live_stamps=${LIVE_STAMPS:-node}
read -r -a live_daemon_options <<<"${LIVE_DAEMON_OPTIONS:-}"
live_burn_in=${LIVE_BURN_IN_MS:-10000}
out=${OUT:-/tmp/t12-daemons}/$mode-n$n-seed$seed
for b in "$daemon" "$probe" "$sim"; do
  [[ -x $b ]] || { echo "t12_daemons.sh: $b not found (build it, or set STARLING_BUILD_DIR)" >&2; exit 2; }
done
live_opts=(--algorithm swarmsgd --problem logistic --l2 1e-4 --data "$data" --format libsvm
  --partition iid --batch 16 --local-steps 1 --step 0.1)
mkdir -p "$out"
rm -rf "$out/keys"  # the cluster command refuses to overwrite keys of an earlier run
cluster=$out/cluster.conf
"$probe" cluster --nodes "$n" --topology "$topology" --seed "$graph_seed" --port "$port" \
  --keys "$out/keys" --out "$cluster" >/dev/null
last=$((observe - 1))
max_samples=0
for s in $samples; do ((s > max_samples)) && max_samples=$s; done

# One JSON line from a probe log: the estimators' accuracy, sensitivity and specificity.
probe_line() {  # LOG SAMPLES EXTRA_JSON
  python3 - "$1" "$2" "$3" <<'EOF'
import json, re, sys
log = open(sys.argv[1]).read()
rec = {"source": "daemons", "samples": int(sys.argv[2])}
rec.update(json.loads(sys.argv[3]))
for m in re.finditer(r"([a-z-]+): accuracy ([0-9.e+-]+)  sensitivity ([0-9.e+-]+)  specificity ([0-9.e+-]+)", log):
    rec[m.group(1)] = float(m.group(2))
    rec[m.group(1) + "_sens"] = float(m.group(3))
    rec[m.group(1) + "_spec"] = float(m.group(4))
m = re.search(r"([0-9]+) aligned sample pairs", log)
rec["aligned"] = int(m.group(1)) if m else None
print(json.dumps(rec))
EOF
}

# The simulator at each sample count on the same cluster file, seeds SIM_SEEDS.
run_sim() {  # KIND
  local kind=$1 s count opts
  case $kind in
  pairwise) opts=(--algorithm pairwise-diffusion --decay 0.75 --mix 0.5 --exchange-prob 1
    --period 0.5 --estimator granger,log-granger,residual) ;;
  diffusion) opts=(--algorithm diffusion --rho 0.75 --c 0.9 --estimator granger,one-lag,residual) ;;
  live) opts=("${live_opts[@]}" --infer-live --period 0.5 --burn-in 1000
    --estimator granger,log-granger,residual) ;;
  esac
  # One run at the largest count gives its log-spaced counts (1, 2, 5 x 10^k); a count not
  # among them gets a run of its own.
  for s in $sim_seeds; do
    "$sim" "${opts[@]}" --nodes "$n" --topology "file:$cluster" --observe "$observe" \
      --samples "$max_samples" --seed "$s" --metrics "$out/sim-$kind-$max_samples-$s.jsonl" >/dev/null 2>&1
    for count in $samples; do
      local f=$out/sim-$kind-$max_samples-$s.jsonl
      if ! grep -q "\"samples\":${count}[,}]" "$f"; then
        f=$out/sim-$kind-$count-$s.jsonl
        "$sim" "${opts[@]}" --nodes "$n" --topology "file:$cluster" --observe "$observe" \
          --samples "$count" --seed "$s" --metrics "$f" >/dev/null 2>&1
      fi
      python3 - "$f" "$count" "$s" "$kind" <<'EOF2'
import json, sys
rec = {"source": "sim", "kind": sys.argv[4], "samples": int(sys.argv[2]), "sim_seed": int(sys.argv[3])}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("samples") == rec["samples"] and "accuracy" in r:
        rec[r["estimator"]] = r["accuracy"]
print(json.dumps(rec))
EOF2
    done
  done
}

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# CPU seconds (user + system) of a running process, from /proc.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat" 2>/dev/null || echo 0; }

run_daemons() {  # KIND
  local kind=$1 i count dopts popts
  case $kind in
  pairwise) dopts=(--algorithm pairwise-diffusion --decay 0.75 --mix 0.5 --exchange-prob 1
    --tick-ms "$tick_ms" --iterations 1000000 --seed "$seed")
    popts=(--period 0.5 --estimator granger,log-granger,residual) ;;
  diffusion) dopts=(--algorithm diffusion --rho 0.75 --c 0.9 --iterations $((max_samples + 1000))
    --seed "$seed")
    popts=(--estimator granger,one-lag,residual) ;;
  live) dopts=("${live_opts[@]}" --iterations "$live_iterations" --seed "$seed"
    "${live_daemon_options[@]}")
    popts=(--live --period "$live_period" --burn-in "$live_burn_in" --estimator granger,log-granger,residual) ;;
  esac
  local load0 t0
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  t0=$(date +%s.%N)
  local extra
  for ((i = 0; i < n; i++)); do
    # Live: only the observed nodes report often (--telemetry-ms is not in the run id).
    extra=()
    [[ $kind == live && $i -lt $observe ]] && extra=(--telemetry-ms "$telemetry_ms")
    "$daemon" --cluster "$cluster" --id "$i" --secret-key "$out/keys/node-$i.key" \
      --give-up-s 600 --linger-s 10 "${dopts[@]}" "${extra[@]}" >"$out/node-$i.log" 2>&1 &
    pids+=($!)
  done
  local daemon_pids=("${pids[@]}") probe_pids=() probes=() stamps sopts name
  # Live: one set of probes per --live-stamps choice; the others: one set.
  for stamps in $([[ $kind == live ]] && echo "$live_stamps" || echo "-"); do
    sopts=()
    [[ $stamps != - ]] && sopts=(--live-stamps "$stamps")
    for count in $samples; do
      name=$count
      [[ $stamps != - ]] && name=$stamps-$count
      "$probe" infer --cluster "$cluster" --observe "0-$last" --samples "$count" \
        --secret-key "$out/keys/probe.key" --connect-timeout-s 180 --timeout-s 3000 \
        --plot-script "" --out "$out/probe-$name" "${popts[@]}" "${sopts[@]}" \
        >"$out/probe-$name.log" 2>&1 &
      probe_pids+=($!)
      probes+=("$name")
      pids+=($!)
    done
  done
  # Wait for each probe in turn, noting the time, the load and the daemons' CPU at each end.
  local k=0 cpu p t load
  for name in "${probes[@]}"; do
    count=${name##*-}
    stamps=${name%"$count"}
    stamps=${stamps%-}
    wait "${probe_pids[$k]}" || echo "probe $name exited $?" >&2
    t=$(date +%s.%N)
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    cpu=0
    for p in "${daemon_pids[@]}"; do cpu=$(awk -v a="$cpu" -v b="$(cpu_s "$p")" 'BEGIN{print a + b}'); done
    probe_line "$out/probe-$name.log" "$count" "$(printf '{"kind":"%s","n":%d,"tick_ms":%s,"live_stamps":%s,"seed":%d,"wall_s":%.1f,"daemon_cpu_s":%.1f,"load_start":"%s","load_end":"%s"}' \
      "$kind" "$n" "$([[ $kind == pairwise ]] && echo "$tick_ms" || echo null)" \
      "$([[ -n $stamps ]] && echo "\"$stamps\"" || echo null)" "$seed" \
      "$(awk -v a="$t0" -v b="$t" 'BEGIN{print b - a}')" "$cpu" "$load0" "$load")"
    k=$((k + 1))
  done
  local wall
  wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{print b - a}')
  for p in "${daemon_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${daemon_pids[@]}"; do wait "$p" || true; done
  pids=()
  # The daemons' closing lines: ticks, ticks without an exchange, ticks skipped running late.
  # Live: the observed nodes' exchanges started per second (one local step each).
  python3 - "$out" "$n" "$wall" "$observe" <<'EOF'
import json, re, sys
out, n, wall, observe = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
started = 0
ticks = alone = skipped = 0
worst_alone = 0.0
codes = []
for i in range(n):
    log = open(f"{out}/node-{i}.log").read()
    m = re.search(r"([0-9]+) ticks \(([0-9]+) without an exchange, ([0-9]+) skipped running late\)", log)
    if m:
        t, a, s = map(int, m.groups())
        ticks += t; alone += a; skipped += s
        worst_alone = max(worst_alone, a / max(t, 1))
    m = re.search(r"node [0-9]+: ([0-9]+) exchanges started", log)
    if m and i < observe:
        started += int(m.group(1))
print(json.dumps({"source": "daemon-logs", "wall_s": round(wall, 1), "ticks": ticks, "ticks_alone": alone,
                  "worst_alone_fraction": round(worst_alone, 4), "ticks_skipped": skipped,
                  "observed_exchanges_started_per_s": round(started / observe / wall, 1)}))
EOF
}

case $mode in
pairwise | diffusion | live) run_daemons "$mode" ;;
sim-pairwise | sim-diffusion | sim-live) run_sim "${mode#sim-}" ;;
*)
  sed -n '2,18p' "$0" >&2
  exit 2
  ;;
esac
