#!/usr/bin/env bash
# Regenerates one of the paper experiments (docs/results/) from scratch:
#   bench/reproduce.sh NAME OUTDIR
# NAME: optra-ls | optra-vs-apmc | dane-synthetic | a9a | swarm-fmnist | dq | dq-gossip
# Writes OUTDIR/NAME.jsonl (every metrics line, with "run" naming the run), OUTDIR/NAME.md (a
# table of when each run reached each threshold, next to the paper's numbers) and plots
# OUTDIR/NAME*.png. Raw per-run metrics go to OUTDIR/raw/. Needs a build (scripts/build.sh; set
# STARLING_BUILD to use another build folder) and ../shared/data beside the checkout.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${STARLING_BUILD:-$ROOT/build}"
SIM="$BUILD/node/starling-sim"
DATA="${STARLING_SHARED_DATA:-$ROOT/../shared/data}"
PY=/usr/bin/python3
REPORT="$ROOT/bench/tools/report.py"

usage() {
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}
[[ $# -eq 2 ]] || usage
NAME="$1"
OUT="$2"
case "$NAME" in
  optra-ls | optra-vs-apmc | dane-synthetic | a9a | swarm-fmnist | dq | dq-gossip) ;;
  *) echo "reproduce.sh: unknown experiment '$NAME'" >&2; usage ;;
esac
[[ "$NAME" == dq* || -x "$SIM" ]] || { echo "reproduce.sh: $SIM not found: run scripts/build.sh first" >&2; exit 2; }
[[ -x "$PY" ]] || { echo "reproduce.sh: $PY not found (Debian's python3 with numpy and matplotlib)" >&2; exit 2; }
mkdir -p "$OUT/raw"
RAW="$OUT/raw"

# Runs starling-sim quietly into $RAW/LABEL.jsonl, printing one progress line.
sim() {
  local label="$1"
  shift
  local start=$SECONDS
  if ! "$SIM" -q --metrics "$RAW/$label.jsonl" "$@" >"$RAW/$label.txt" 2>"$RAW/$label.err"; then
    echo "reproduce.sh: run $label failed:" >&2
    cat "$RAW/$label.err" >&2
    exit 1
  fi
  echo "  $label: $(grep -E '^(bregman|rel_gap|test_accuracy) ' "$RAW/$label.txt" | tr '\n' ' ')($((SECONDS - start)) s)"
}

OPTRA_DIR="$DATA/optra-least-squares"
optra_instance() {
  for f in rows.csv laplacian.csv x0.csv x_opt.csv; do
    [[ -f "$OPTRA_DIR/$f" ]] || { echo "reproduce.sh: $OPTRA_DIR/$f missing" >&2; exit 2; }
  done
  # The daemons take the instance without --x-star (the metric is computed from their models).
  OPTRA_BASE=(--problem least-squares --l2 0 --data "$OPTRA_DIR/rows.csv" --format csv
    --partition column:0 --label-column 1 --loss-scale 2 --laplacian "$OPTRA_DIR/laplacian.csv"
    --nodes 20 --x0 "$OPTRA_DIR/x0.csv")
  OPTRA_OPTS=("${OPTRA_BASE[@]}" --x-star "$OPTRA_DIR/x_opt.csv")
}

case "$NAME" in
optra-ls)
  optra_instance
  echo "optra-ls: OPTRA on the authors' least-squares instance, nu = 100, 2K = 4, T = 20000"
  sim optra "${OPTRA_OPTS[@]}" --algorithm optra --optra-nu 100 --optra-inner 4 \
    --iterations 20000 --log-every 5
  "$PY" "$REPORT" --name "$NAME" --outdir "$OUT" --metric bregman \
    --thresholds 1e-2,1e-4,1e-6 --paper "optra=1945 / 7780,6203 / 24812,16399 / 65596" \
    --title "OPTRA, the authors' least-squares instance" optra="$RAW/optra.jsonl"
  # Both gaps at every logged iteration against the authors' saved curve (their evaluate.m metric,
  # bench/data/optra_saved_bregman.csv): a table every 1000 iterations and the largest relative
  # difference over all checkpoints.
  "$PY" - "$RAW/optra.jsonl" "$ROOT/bench/data/optra_saved_bregman.csv" <<'PYEOF' | tee -a "$OUT/$NAME.md"
import json, sys
rows = {r["iter"]: r for r in map(json.loads, open(sys.argv[1])) if "iter" in r}
saved = {}
for line in open(sys.argv[2]):
    if not line.startswith("#"):
        k, v = line.split(",")
        saved[int(k)] = float(v)
print("\n| iteration | Bregman gap, general | as evaluate.m | the authors' saved run (evaluate.m) "
      "| rel. diff., general | rel. diff., evaluate.m |\n|---|---|---|---|---|---|")
rel = lambda a, b: abs(a - b) / b
for k in sorted(saved):
    if k in rows and (k % 1000 == 0 or k in (5, 100, 1945)):
        g, m = rows[k]["bregman"], rows[k]["bregman_evaluate_m"]
        print("| %d | %.10g | %.10g | %.10g | %.1e | %.1e |" % (k, g, m, saved[k], rel(g, saved[k]), rel(m, saved[k])))
common = [k for k in saved if k in rows]
worst = lambda key: max((rel(rows[k][key], saved[k]), k) for k in common)
print("\nOver all %d common checkpoints, the largest relative difference from the saved run: "
      "general gap %.2e (at k = %d), evaluate.m gap %.2e (at k = %d)\n" % ((len(common),) + worst("bregman") + worst("bregman_evaluate_m")))
PYEOF
  # The same run in 20 starlingd processes, for 1000 of the T = 20000 iterations; the daemons'
  # final models are scored by an independent numpy Bregman gap against the simulator's.
  echo "optra-ls: 20 starlingd processes, 1000 iterations of the T = 20000 run"
  sim optra-1000 "${OPTRA_OPTS[@]}" --algorithm optra --iterations 1000 --horizon 20000 --log-every 1000
  "$PY" - "$OPTRA_DIR/laplacian.csv" "$RAW/optra-edges.txt" <<'PYEOF'
import numpy as np, sys
lap = np.loadtxt(sys.argv[1], delimiter=",", comments="#")
with open(sys.argv[2], "w") as f:
    for i in range(len(lap)):
        for j in range(i + 1, len(lap)):
            if lap[i, j] != 0:
                f.write("%d %d\n" % (i, j))
PYEOF
  rm -rf "$OUT/daemons"
  "$PY" "$ROOT/examples/launch_local.py" --nodes 20 --topology "file:$RAW/optra-edges.txt" \
    --out "$OUT/daemons" --no-plots --reference-optimum none "${OPTRA_BASE[@]}" \
    --algorithm optra --iterations 1000 --horizon 20000 >"$RAW/daemons.txt" 2>&1 ||
    { echo "reproduce.sh: the daemons failed; see $RAW/daemons.txt" >&2; tail -20 "$RAW/daemons.txt" >&2; exit 1; }
  "$PY" - "$OPTRA_DIR" "$OUT/daemons" "$RAW/optra-1000.jsonl" <<'PYEOF' | tee -a "$OUT/$NAME.md"
import json, sys
import numpy as np
d, run, simfile = sys.argv[1:4]
rows = np.loadtxt(d + "/rows.csv", delimiter=",", comments="#")
xs = np.loadtxt(d + "/x_opt.csv", delimiter=",", comments="#").reshape(-1)
total, fmin, f_star = 0.0, 0.0, 0.0
for i in range(20):
    a, b = rows[rows[:, 0] == i, 2:], rows[rows[:, 0] == i, 1]
    x = np.loadtxt("%s/model-%d.txt" % (run, i)).reshape(-1)
    g = 2 * a.T @ (a @ xs - b)  # grad f_i(x*)
    # The general Bregman distance sum_i f_i(x_i) - f_i(x*) - <g_i, x_i - x*>, as starling-sim
    # computes it; the authors' evaluate.m drops sum_i <g_i, x*>, which is 0 only if x* is exact.
    fmin += np.sum((a @ xs - b) ** 2) - g @ xs
    f_star += np.sum((a @ xs - b) ** 2)  # the fmin of evaluate.m
    total += np.sum((a @ x - b) ** 2) - g @ x
gap, gap_m = abs(total - fmin), abs(total - f_star)
last = [json.loads(l) for l in open(simfile)][-1]
sim, sim_m = last["bregman"], last["bregman_evaluate_m"]
print("\n20 starlingd processes, 1000 iterations of the T = 20000 run: Bregman gap %.9g; "
      "the simulator: %.9g (relative difference %.1e); as evaluate.m: %.9g against the "
      "simulator's %.9g (relative difference %.1e); the authors' saved run: 0.108141058\n"
      % (gap, sim, abs(gap - sim) / sim, gap_m, sim_m, abs(gap_m - sim_m) / sim_m))
PYEOF
  ;;

optra-vs-apmc)
  optra_instance
  echo "optra-vs-apmc: OPTRA against APM-C (and EXTRA, gradient tracking) on the authors' least-squares instance"
  sim optra "${OPTRA_OPTS[@]}" --algorithm optra --iterations 20000 --log-every 1
  sim apm-c "${OPTRA_OPTS[@]}" --algorithm apm-c --iterations 20000 --log-every 1
  sim extra-1e-5 "${OPTRA_OPTS[@]}" --algorithm extra --step 1e-5 --iterations 20000 --log-every 10
  sim diging-1e-5 "${OPTRA_OPTS[@]}" --algorithm gradient-tracking --step 1e-5 --iterations 20000 --log-every 10
  sim extra-tuned "${OPTRA_OPTS[@]}" --algorithm extra --iterations 20000 --log-every 10
  "$PY" "$REPORT" --name "$NAME" --outdir "$OUT" --metric bregman --thresholds 1e-2,1e-4,1e-6 \
    --paper "optra=1945 / 7780,6203 / 24812,16399 / 65596" \
    --paper "apm-c=1870 / 19842,5565 / 68401,12266 / 165810" \
    --title "OPTRA vs APM-C, EXTRA, DIGing on the authors' least-squares instance" \
    optra="$RAW/optra.jsonl" apm-c="$RAW/apm-c.jsonl" extra-1e-5="$RAW/extra-1e-5.jsonl" \
    diging-1e-5="$RAW/diging-1e-5.jsonl" "extra-0.5/L"="$RAW/extra-tuned.jsonl"
  "$PY" - "$OUT/$NAME.jsonl" <<'PYEOF' | tee -a "$OUT/$NAME.md"
import json, sys
runs = {}
for r in map(json.loads, open(sys.argv[1])):
    runs.setdefault(r["run"], []).append(r)
def comm(run, t):
    return next((r["comm_rounds"] for r in runs[run] if r["bregman"] <= t), None)
for t in (1e-2, 1e-4, 1e-6):
    o, a = comm("optra", t), comm("apm-c", t)
    if o and a:
        print("communications to %g: APM-C / OPTRA = %.2f (the paper: %s)"
              % (t, a / o, {1e-2: "2.54", 1e-4: "2.76", 1e-6: "2.53"}[t]))
PYEOF
  ;;

dane-synthetic)
  echo "dane-synthetic: Network-DANE/SVRG/SARAH against EXTRA, gradient tracking, DGD"
  rm -f "$OUT/$NAME.jsonl" "$OUT/$NAME.md"
  first=1
  for kappa in 10 1e4; do
    "$PY" "$ROOT/bench/tools/dane_synthetic.py" "$RAW/synthetic-$kappa.csv" --kappa "$kappa" --seed 1
    common=(--problem least-squares --l2 0 --data "$RAW/synthetic-$kappa.csv" --format csv
      --partition column:0 --label-column 1 --loss-scale 0.001 --nodes 20 --x0 uniform --seed 1
      --reference-optimum auto --stop-at-gap 1e-11 --log-every 1)
    mu=$([[ $kappa == 10 ]] && echo 5e-10 || echo 5e-6)
    budget=$([[ $kappa == 10 ]] && echo 3000 || echo 5000)
    labels=()
    for topo in er:0.3 grid:5x4 ring star; do
      # The reference experiments' mu and SVRG step per topology (the authors' code).
      case "$topo" in
        er:0.3) tmu=$mu eta=0.1 ;;
        grid:5x4) tmu=10 eta=0.01 ;;
        ring) tmu=50 eta=0.005 ;;
        star) tmu=1 eta=0.025 ;;
      esac
      if [[ $kappa != 10 && $topo != er:0.3 ]]; then continue; fi
      t="${topo%%:*}"
      sim "k$kappa-$t-dane" "${common[@]}" --topology "$topo" --algorithm network-dane --dane-mu "$tmu" --iterations 300
      labels+=("network-dane ($t)=$RAW/k$kappa-$t-dane.jsonl")
      if [[ $topo == er:0.3 ]]; then
        for k in 2 3; do
          sim "k$kappa-$t-dane-mix$k" "${common[@]}" --topology "$topo" --algorithm network-dane --dane-mu "$tmu" --mix-rounds "$k" --iterations 300
          labels+=("network-dane n_mix=$k ($t)=$RAW/k$kappa-$t-dane-mix$k.jsonl")
        done
      fi
      # eta/L with L = 1 nominally; --step takes the absolute value, so scale by the run's L.
      # The run's smoothness bound L, from the banner of the DANE run.
      L=$(grep -o 'L = [0-9.e+-]*' "$RAW/k$kappa-$t-dane.err" | head -1 | cut -d' ' -f3)
      [[ -n "$L" ]] || { echo "reproduce.sh: no L in $RAW/k$kappa-$t-dane.err" >&2; exit 1; }
      step=$("$PY" -c "print($eta / $L)")
      sim "k$kappa-$t-svrg" "${common[@]}" --topology "$topo" --algorithm network-svrg --inner-steps 50 --batch 1 --step "$step" --iterations "$budget"
      sim "k$kappa-$t-sarah" "${common[@]}" --topology "$topo" --algorithm network-sarah --inner-steps 50 --batch 1 --step "$step" --iterations "$budget"
      labels+=("network-svrg ($t)=$RAW/k$kappa-$t-svrg.jsonl" "network-sarah ($t)=$RAW/k$kappa-$t-sarah.jsonl")
      if [[ $topo == er:0.3 ]]; then
        sim "k$kappa-$t-extra" "${common[@]}" --topology "$topo" --algorithm extra --iterations "$budget"
        sim "k$kappa-$t-extra1" "${common[@]}" --topology "$topo" --algorithm extra --step "$("$PY" -c "print(1 / $L)")" --iterations "$budget"
        sim "k$kappa-$t-gt" "${common[@]}" --topology "$topo" --algorithm gradient-tracking --step "$("$PY" -c "print(0.1 / $L)")" --iterations "$budget"
        sim "k$kappa-$t-dgd" "${common[@]}" --topology "$topo" --algorithm dgd --iterations "$budget"
        labels+=("extra 0.5/L ($t)=$RAW/k$kappa-$t-extra.jsonl" "extra 1/L ($t)=$RAW/k$kappa-$t-extra1.jsonl"
          "gradient-tracking 0.1/L ($t)=$RAW/k$kappa-$t-gt.jsonl" "dgd 0.5/L ($t)=$RAW/k$kappa-$t-dgd.jsonl")
      fi
    done
    append=()
    [[ $first == 1 ]] || append=(--append)
    first=0
    # The reference numbers are the paper's, re-implemented (kappa = 10, ER(0.3), MH).
    refs=()
    if [[ $kappa == 10 ]]; then
      refs=(--paper "network-dane (er)=33,129-131" --paper "network-svrg (er)=33,122"
        --paper "extra 1/L (er)=55,99" --paper "extra 0.5/L (er)=113,204"
        --paper "gradient-tracking 0.1/L (er)=575,1040" --paper "network-dane n_mix=2 (er)=14,46"
        --paper "network-dane n_mix=3 (er)=9,26-27")
    fi
    "$PY" "$REPORT" --name "$NAME" --outdir "$OUT" "${append[@]}" --plot "$NAME-kappa$kappa" \
      --metric rel_gap --thresholds 1e-6,1e-10 --ref-label "reference implementation" "${refs[@]}" \
      --title "Synthetic least squares (n = 20, m = 1000, d = 40), kappa = $kappa" "${labels[@]}"
  done
  ;;

a9a)
  [[ -f "$DATA/a9a" ]] || { echo "reproduce.sh: $DATA/a9a missing" >&2; exit 2; }
  echo "a9a: logistic regression, lambda = 1e-4, 20 nodes, ER(0.3), i.i.d. and by-label splits"
  rm -f "$OUT/$NAME.jsonl" "$OUT/$NAME.md"
  first=1
  for split in iid label; do
    common=(--problem logistic --l2 1e-4 --data "$DATA/a9a" --format libsvm --features 123
      --partition "$split" --nodes 20 --topology er:0.3 --seed 1 --reference-optimum auto
      --stop-at-gap 1e-11 --log-every 1)
    sim "$split-dane" "${common[@]}" --algorithm network-dane --dane-mu 1e-3 --iterations 300
    sim "$split-svrg" "${common[@]}" --algorithm network-svrg --inner-steps 120 --batch 1 --iterations 3000
    sim "$split-sarah" "${common[@]}" --algorithm network-sarah --inner-steps 120 --batch 1 --iterations 3000
    sim "$split-extra" "${common[@]}" --algorithm extra --iterations 3000
    # The table's "gradient tracking, 0.5/L": half its default 1/L, for comparison.
    L=$(grep -o 'L = [0-9.e+-]*' "$RAW/$split-dane.err" | head -1 | cut -d' ' -f3)
    sim "$split-gt" "${common[@]}" --algorithm gradient-tracking --iterations 3000 \
      --step "$("$PY" -c "print(0.5 / $L)")"
    sim "$split-dgd" "${common[@]}" --algorithm dgd --iterations 3000
    append=()
    [[ $first == 1 ]] || append=(--append)
    first=0
    "$PY" "$REPORT" --name "$NAME" --outdir "$OUT" "${append[@]}" --plot "$NAME-$split" \
      --metric rel_gap --thresholds 1e-6,1e-10 --title "a9a, lambda = 1e-4, 20 nodes, $split split" \
      network-dane="$RAW/$split-dane.jsonl" network-svrg="$RAW/$split-svrg.jsonl" \
      network-sarah="$RAW/$split-sarah.jsonl" extra="$RAW/$split-extra.jsonl" \
      gradient-tracking="$RAW/$split-gt.jsonl" dgd="$RAW/$split-dgd.jsonl"
  done
  ;;

swarm-fmnist)
  F="${STARLING_FMNIST_DIR:-/usr/share/datasets/fashion-mnist}"
  [[ -f "$F/train-images-idx3-ubyte.gz" ]] || { echo "reproduce.sh: $F: Fashion-MNIST missing (apt-get install dataset-fashion-mnist)" >&2; exit 2; }
  echo "swarm-fmnist: SwarmSGD on Fashion-MNIST, full precision vs lattice codes, top-k and vqSGD, and CHOCO-SGD top-k"
  steps="${SWARM_STEPS:-2000}"
  runs=()
  for problem in multinomial mlp; do
    common=(--problem "$problem" --l2 1e-4 --data "$F/train-images-idx3-ubyte.gz"
      --test-data "$F/t10k-images-idx3-ubyte.gz" --nodes 8 --topology torus --partition dirichlet:0.5
      --seed 1 --batch 32 --iterations "$steps" --log-every 100)
    if [[ $problem == mlp ]]; then common+=(--x0 small --step 0.05); else common+=(--step 0.1); fi
    sim "$problem-full" "${common[@]}" --algorithm swarmsgd
    sim "$problem-lattice8" "${common[@]}" --algorithm swarmsgd --compression lattice:8:1e-3
    sim "$problem-lattice4" "${common[@]}" --algorithm swarmsgd --compression lattice:4:1e-2
    sim "$problem-lattice4-tight" "${common[@]}" --algorithm swarmsgd --compression lattice:4:3e-3
    # Top-k with error feedback, 10% of the coordinates: inside SwarmSGD's exchanges (public
    # copies per edge, gamma = k/d), and CHOCO-SGD (round-based, public copies).
    d=$(grep -o 'd = [0-9]*' "$RAW/$problem-full.err" | head -1 | cut -d' ' -f3)
    sim "$problem-swarm-top10pct" "${common[@]}" --algorithm swarmsgd --compression topk:$((d / 10))
    sim "$problem-choco-top10pct" "${common[@]}" --algorithm choco-sgd --top-k $((d / 10)) --choco-gamma 0.1
    # vqSGD's cross-polytope quantizer on the same public copies (--compression vq:S, gamma =
    # delta/2 with delta = S/(d - 1 + S)): S = d/10 and d/2 samples of 1 + ceil(log2 d) bits.
    sim "$problem-swarm-vq10pct" "${common[@]}" --algorithm swarmsgd --compression vq:$((d / 10))
    sim "$problem-swarm-vq50pct" "${common[@]}" --algorithm swarmsgd --compression vq:$((d / 2))
    # The synchronous baseline: D-PSGD, every neighbour every round, full precision.
    sim "$problem-dpsgd" "${common[@]}" --algorithm dpsgd
    runs+=("$problem-full" "$problem-lattice8" "$problem-lattice4" "$problem-lattice4-tight"
      "$problem-swarm-top10pct" "$problem-choco-top10pct" "$problem-swarm-vq10pct"
      "$problem-swarm-vq50pct" "$problem-dpsgd")
  done
  "$PY" - "$OUT" "$NAME" "$RAW" "${runs[@]}" <<'PYEOF'
import json, os, sys
out, name, raw, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
data = {r: [json.loads(l) for l in open(os.path.join(raw, r + ".jsonl"))] for r in runs}
with open(os.path.join(out, name + ".jsonl"), "w") as f:
    for r, rows in data.items():
        for row in rows:
            f.write(json.dumps(dict(row, run=r, bits=8 * row["bytes"])) + "\n")
lines = ["| run | test accuracy | bits sent (all nodes) | bits vs full precision | decode failures |",
         "|---|---|---|---|---|"]
for r, rows in data.items():
    full = data[r.split("-")[0] + "-full"][-1]["bytes"]
    last = rows[-1]
    lines.append("| %s | %.4f | %.3g | %.3f | %s |" % (r, last.get("test_accuracy", float("nan")),
                 8 * last["bytes"], last["bytes"] / full, last.get("decode_failures", "-")))
text = "### SwarmSGD on Fashion-MNIST, 8 nodes (2x4 torus), Dirichlet(0.5) split\n\n" + "\n".join(lines) + "\n"
open(os.path.join(out, name + ".md"), "w").write(text)
print(text)
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(0)
fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
for ax, problem in zip(axes, ("multinomial", "mlp")):
    for r, rows in data.items():
        if not r.startswith(problem + "-"):
            continue
        pts = [(8 * q["bytes"], q["test_accuracy"]) for q in rows if "test_accuracy" in q and q["bytes"] > 0]
        ax.semilogx([p[0] for p in pts], [p[1] for p in pts], label=r[len(problem) + 1:])
    ax.set_title(problem)
    ax.set_xlabel("bits sent (all nodes)")
    ax.set_ylabel("test accuracy")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(os.path.join(out, name + ".png"), dpi=110)
print("wrote " + os.path.join(out, name + ".png"))
PYEOF
  ;;
dq)
  # Differential quantization, one channel: contraction factor against bits (starling-bench-dq;
  # no simulator, no data).
  DQ="$BUILD/bench/starling-bench-dq"
  [[ -x "$DQ" ]] || { echo "reproduce.sh: $DQ not found: build target starling-bench-dq" >&2; exit 2; }
  : >"$OUT/dq.md"
  for cfg in "100 500" "3 30" "1.5 15"; do
    set -- $cfg
    echo "dq: kappa $1, T $2"
    "$DQ" --kappa "$1" --steps "$2" | tee -a "$OUT/dq.md"
    "$DQ" --kappa "$1" --steps "$2" --csv >"$RAW/dq-kappa$1.csv"
  done
  "$PY" - "$OUT" "$RAW" <<'PYEOF'
import csv, glob, os, sys
out, raw = sys.argv[1], sys.argv[2]
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(0)
files = sorted(glob.glob(os.path.join(raw, "dq-kappa*.csv")))
fig, axes = plt.subplots(1, len(files), figsize=(5 * len(files), 4))
for ax, f in zip(axes, files):
    rows = list(csv.DictReader(open(f)))
    bits = [int(r["bits"]) for r in rows]
    for key, label in (("gd", "GD (unquantized)"), ("dq", "DQ-GD"), ("naive", "naive quantized GD")):
        ax.plot(bits, [float(r[key]) for r in rows], marker="o", label=label)
    ax.plot(bits, [max(float(r["sigma_gd"]), 2.0 ** -b) for r, b in zip(rows, bits)], "k:",
            label="max(sigma_GD, 2^-R)")
    ax.set_title(os.path.basename(f)[3:-4].replace("kappa", "kappa = "))
    ax.set_xlabel("bits per coordinate R")
    ax.set_ylabel("contraction factor")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(os.path.join(out, "dq.png"), dpi=110)
print("wrote " + os.path.join(out, "dq.png"))
PYEOF
  ;;
dq-gossip)
  # Quantized gossip: DGD, gradient tracking, EXTRA with naive vs differential quantized gossip on the
  # synthetic data (kappa = 10, 20 nodes, ER(0.3)); starling-bench-dq-gossip, no simulator runs.
  DQG="$BUILD/bench/starling-bench-dq-gossip"
  [[ -x "$DQG" ]] || { echo "reproduce.sh: $DQG not found: build target starling-bench-dq-gossip" >&2; exit 2; }
  "$PY" "$ROOT/bench/tools/dane_synthetic.py" "$RAW/synthetic-10.csv" --kappa 10 --seed 1
  "$DQG" --data "$RAW/synthetic-10.csv" --iterations 400 --curves "$RAW/dq-gossip.csv" | tee "$OUT/dq-gossip.md"
  "$PY" - "$OUT" "$RAW" <<'PYEOF'
import csv, os, sys
out, raw = sys.argv[1], sys.argv[2]
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(0)
runs = {}
for r in csv.DictReader(open(os.path.join(raw, "dq-gossip.csv"))):
    key = (r["method"], r["quantizer"], int(r["bits"]))
    runs.setdefault(key, ([], []))
    if int(r["iteration"]) == 0:
        continue  # nothing sent yet
    runs[key][0].append(float(r["total_bits"]))
    runs[key][1].append(float(r["error"]))
methods = ["dgd", "gradient-tracking", "extra"]
fig, axes = plt.subplots(1, len(methods), figsize=(5 * len(methods), 4))
for ax, m in zip(axes, methods):
    x, y = runs[(m, "none", 0)]
    ax.loglog(x, y, "k-", label="unquantized (64 bits)")
    for bits, color in ((2, "C0"), (4, "C1"), (8, "C2")):
        for q, style in (("differential", "-"), ("naive", "--")):
            if (m, q, bits) in runs:
                x, y = runs[(m, q, bits)]
                ax.loglog(x, y, style, color=color, label="%s R=%d" % (q, bits))
    ax.set_title(m)
    ax.set_xlabel("total bits sent (all nodes, counted: R d + 64 per vector)")
    ax.set_ylabel("||X_t - X_fp|| / ||X_0 - X_fp||")
    ax.set_ylim(1e-12, 3)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
fig.tight_layout()
fig.savefig(os.path.join(out, "dq-gossip.png"), dpi=110)
print("wrote " + os.path.join(out, "dq-gossip.png"))
PYEOF
  ;;
esac
[[ "$NAME" != dq ]] || { echo "wrote $OUT/dq.md and $OUT/dq.png"; exit 0; }
[[ "$NAME" != dq-gossip ]] || { echo "wrote $OUT/dq-gossip.md and $OUT/dq-gossip.png"; exit 0; }
echo "wrote $OUT/$NAME.jsonl, $OUT/$NAME.md and plots in $OUT"
