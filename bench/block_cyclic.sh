#!/usr/bin/env bash
# Block-cyclic data (arXiv:2002.07454). Per-block test accuracy of plain D-PSGD
# and SwarmSGD (the network's mean final model on every block) against MM-PSGD (block b's test
# rows with the mean of the nodes' predictor b),
# multinomial logistic regression on Fashion-MNIST, 8 nodes on a ring, i.i.d. shards, batch 32,
# default step 0.5/L, seed 1; 1950 iterations for B:S = 2:100 and 1980 for 5:40, so that the run
# ends in the middle of the last block of cycle 10, not at a block boundary (SwarmSGD: as many
# local steps per node, H = 1; its nodes' step counts drift apart by tens of steps, and at a
# boundary the ones ahead would already train on the next cycle's first block). Blocks are class groups floor(c B / 10).
#   bench/block_cyclic.sh OUTDIR
# Prints a markdown table; OUTDIR keeps each run's stdout.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SIM="${STARLING_BUILD:-$ROOT/build}/node/starling-sim"
F="${STARLING_FMNIST_DIR:-/usr/share/datasets/fashion-mnist}"
OUT="$1"
mkdir -p "$OUT"
echo "| B:S | method | test accuracy per block | mean over blocks | test accuracy, mean model, all rows |"
echo "|---|---|---|---:|---:|"
for spec in 2:100 5:40; do
  if [ "$spec" = 2:100 ]; then ITER=1950; else ITER=1980; fi
  for method in "dpsgd" "swarmsgd" "mm-psgd --mm-window 0" "mm-psgd --mm-window 1"; do
    tag="$(echo "$spec-$method" | tr ' :' '__')"
    # shellcheck disable=SC2086
    "$SIM" -q --algorithm $method --problem multinomial --data "$F/train-images-idx3-ubyte.gz" \
      --test-data "$F/t10k-images-idx3-ubyte.gz" --nodes 8 --topology ring --seed 1 --batch 32 \
      --block-cyclic "$spec" --iterations $ITER --log-every $ITER >"$OUT/$tag.txt" 2>"$OUT/$tag.err"
    /usr/bin/python3 - "$OUT/$tag.txt" "$spec" "$method" <<'PY'
import sys
lines = [l.split() for l in open(sys.argv[1])]
acc = [float(l[2]) for l in lines if l[0] == "block_test_accuracy"]
overall = [float(l[1]) for l in lines if l[0] == "test_accuracy"][0]
method = sys.argv[3].replace("--mm-window 0", "(W = S: every step)").replace("--mm-window 1", "(W = 1: block ends)")
if method == "dpsgd":
    method = "D-PSGD, final model"
if method == "swarmsgd":
    method = "SwarmSGD (H = 1), final model"
print(f"| {sys.argv[2]} | {method} | {' / '.join(f'{a:.3f}' for a in acc)} | {sum(acc)/len(acc):.3f} | {overall:.4f} |")
PY
  done
done
