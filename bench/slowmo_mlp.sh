#!/usr/bin/env bash
# Issue 21 item 4: SlowMo (arXiv:1910.00643) on top of local SGD with gossip averaging, on the MLP
# of Fashion-MNIST: test accuracy at an equal number of local steps with and without it.
#   bench/slowmo_mlp.sh OUTDIR [LOCAL_STEPS]
# 8 nodes on a torus, Dirichlet(0.5) shards, batch 32, step 0.05, tau 8, K = 2 gossip rounds per
# average; SlowMo beta in {0 (off), 0.5, 0.7} with alpha 1. Prints a markdown table.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SIM="${STARLING_BUILD:-$ROOT/build}/node/starling-sim"
F="${STARLING_FMNIST_DIR:-/usr/share/datasets/fashion-mnist}"
OUT="$1"
STEPS="${2:-1000}"
TAU=8
K=2
mkdir -p "$OUT"
# The constructor takes period 0's local steps; each K rounds end a period and start the next.
ROUNDS=$(((STEPS / TAU - 1) * K))
echo "| SlowMo | local steps | comm rounds | test accuracy | objective |"
echo "|---|---:|---:|---:|---:|"
for beta in 0 0.5 0.7; do
  m="$OUT/slowmo-beta$beta.jsonl"
  "$SIM" -q --algorithm local-sgd --problem mlp --l2 1e-4 --data "$F/train-images-idx3-ubyte.gz" \
    --test-data "$F/t10k-images-idx3-ubyte.gz" --nodes 8 --topology torus \
    --partition dirichlet:0.5 --seed 1 --batch 32 --x0 small --step 0.05 --local-tau $TAU \
    --local-gossip $K --slowmo-beta "$beta" --slowmo-alpha 1 --iterations "$ROUNDS" \
    --log-every "$ROUNDS" --metrics "$m" >/dev/null 2>"$OUT/slowmo-beta$beta.err"
  /usr/bin/python3 -c "
import json,sys
m=[json.loads(l) for l in open('$m') if '\"iter\"' in l][-1]
label='off' if '$beta'=='0' else 'beta $beta, alpha 1'
print(f\"| {label} | $STEPS | {m['comm_rounds']} | {m['test_accuracy']:.4f} | {m['objective']:.4f} |\")"
done
