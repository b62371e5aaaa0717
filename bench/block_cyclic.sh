#!/usr/bin/env bash
# Issue 21 item 5: block-cyclic data (arXiv:2002.07454). Per-block test accuracy of plain D-PSGD
# (its one final model on every block) against MM-PSGD (block b's test rows with predictor b),
# multinomial logistic regression on Fashion-MNIST, 8 nodes on a ring, i.i.d. shards, batch 32,
# default step 0.5/L, 2000 iterations, seed 1. Blocks are class groups floor(c B / 10).
#   bench/block_cyclic.sh OUTDIR
# Prints a markdown table; OUTDIR keeps each run's stdout.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SIM="${STARLING_BUILD:-$ROOT/build}/node/starling-sim"
F="${STARLING_FMNIST_DIR:-/usr/share/datasets/fashion-mnist}"
OUT="$1"
ITER=2000
mkdir -p "$OUT"
echo "| B:S | method | test accuracy per block | mean over blocks | test accuracy, mean model, all rows |"
echo "|---|---|---|---:|---:|"
for spec in 2:100 5:40; do
  for method in "dpsgd" "mm-psgd --mm-window 0" "mm-psgd --mm-window 1"; do
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
print(f"| {sys.argv[2]} | {method} | {' / '.join(f'{a:.3f}' for a in acc)} | {sum(acc)/len(acc):.3f} | {overall:.4f} |")
PY
  done
done
