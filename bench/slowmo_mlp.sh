#!/usr/bin/env bash
# SlowMo (arXiv:1910.00643) on the MLP of Fashion-MNIST: test accuracy at an equal
# number of gradient steps per node with and without it, on two base methods.
#   bench/slowmo_mlp.sh OUTDIR [STEPS]
# 8 nodes on a torus (2x4), Dirichlet(0.5) shards, batch 32, step 0.05, tau 8, seed 1. Prints two
# markdown tables:
#   local SGD (--algorithm local-sgd), K = 2 gossip rounds per average, SlowMo beta in
#     {0 (off), 0.5, 0.7} with alpha 1;
#   D-PSGD (--algorithm dpsgd) against SlowMo over D-PSGD (--algorithm slowmo-dpsgd): every tau
#     D-PSGD iterations an exact average over the BFS spanning tree (2 x height 3 = 6 rounds) or K
#     = 2 gossip rounds, then the slow momentum step; beta 0 with alpha 1 is the periodic average
#     alone; and D-PSGD with 0.05/(1-0.7) as its step, a control for the larger effective step;
#   SwarmSGD (--algorithm swarmsgd, H = 2 local steps per exchange it initiates) against SlowMo
#     over SwarmSGD (--algorithm slowmo-swarmsgd, node-local outer step every tau local steps
#     [DERIVED]), and the same control. Pairwise runs: STEPS local steps per node, comm rounds =
#     the exchanges per node the simulator reports.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SIM="${STARLING_BUILD:-$ROOT/build}/node/starling-sim"
F="${STARLING_FMNIST_DIR:-/usr/share/datasets/fashion-mnist}"
OUT="$1"
STEPS="${2:-1000}"
TAU=8
K=2
TREE_ROUNDS=6 # 2 x the height (3) of the BFS tree of the 2x4 torus from node 0
mkdir -p "$OUT"

# [STEP=S] run NAME LABEL ROUNDS ARGS...: one run of ROUNDS communication rounds, one table row.
run() {
  local name="$1" label="$2" rounds="$3"
  shift 3
  local m="$OUT/$name.jsonl"
  "$SIM" -q --problem mlp --l2 1e-4 --data "$F/train-images-idx3-ubyte.gz" \
    --test-data "$F/t10k-images-idx3-ubyte.gz" --nodes 8 --topology torus \
    --partition dirichlet:0.5 --seed 1 --batch 32 --x0 small --step "${STEP:-0.05}" \
    --iterations "$rounds" --log-every "$rounds" --metrics "$m" "$@" >/dev/null 2>"$OUT/$name.err"
  /usr/bin/python3 -c "
import json
m=[json.loads(l) for l in open('$m') if '\"iter\"' in l][-1]
print(f\"| $label | $STEPS | {m['comm_rounds']} | {m['test_accuracy']:.4f} | {m['objective']:.4f} |\")"
}

echo "Local SGD (tau $TAU, K $K gossip rounds per average):"
echo
echo "| SlowMo | local steps | comm rounds | test accuracy | objective |"
echo "|---|---:|---:|---:|---:|"
# The constructor takes period 0's local steps; each K rounds end a period and start the next.
ROUNDS=$(((STEPS / TAU - 1) * K))
for beta in 0 0.5 0.7; do
  label="beta $beta, alpha 1"
  [ "$beta" = 0 ] && label=off
  run "slowmo-beta$beta" "$label" "$ROUNDS" --algorithm local-sgd --local-tau $TAU \
    --local-gossip $K --slowmo-beta "$beta" --slowmo-alpha 1
done
# The control for the larger effective step of beta 0.7 (see D-PSGD's below).
STEP=0.16667 run local-step3.3x "off, step 0.05/(1-0.7)" "$ROUNDS" --algorithm local-sgd \
  --local-tau $TAU --local-gossip $K

echo
echo "D-PSGD and SlowMo over D-PSGD (tau $TAU):"
echo
echo "| method | gradient steps | comm rounds | test accuracy | objective |"
echo "|---|---:|---:|---:|---:|"
PERIODS=$((STEPS / TAU))
run dpsgd "D-PSGD" "$STEPS" --algorithm dpsgd
# A control: beta 0.7 makes the slow step about alpha / (1 - beta) = 3.3 times the base step along
# a steady direction, so D-PSGD with that larger step tells a gain of the momentum from one of the
# step alone.
STEP=0.16667 run dpsgd-step3.3x "D-PSGD, step 0.05/(1-0.7)" "$STEPS" --algorithm dpsgd
for avg in exact gossip; do
  if [ "$avg" = exact ]; then
    per=$((TAU + TREE_ROUNDS))
    opts=(--local-exact 1)
  else
    per=$((TAU + K))
    opts=(--local-gossip $K)
  fi
  for beta in 0 0.5 0.7; do
    label="slowmo-dpsgd $avg, beta $beta, alpha 1"
    [ "$beta" = 0 ] && label="D-PSGD + $avg average every $TAU (beta 0)"
    run "slowmo-dpsgd-$avg-beta$beta" "$label" $((PERIODS * per)) --algorithm slowmo-dpsgd \
      --local-tau $TAU "${opts[@]}" --slowmo-beta "$beta" --slowmo-alpha 1
  done
done

echo
echo "SwarmSGD and SlowMo over SwarmSGD (H 2, tau $TAU):"
echo
echo "| method | local steps | exchanges per node | test accuracy | objective |"
echo "|---|---:|---:|---:|---:|"
run swarmsgd "SwarmSGD" "$STEPS" --algorithm swarmsgd --local-steps 2
STEP=0.16667 run swarmsgd-step3.3x "SwarmSGD, step 0.05/(1-0.7)" "$STEPS" --algorithm swarmsgd \
  --local-steps 2
for beta in 0 0.5 0.7; do
  run "slowmo-swarmsgd-beta$beta" "slowmo-swarmsgd, beta $beta, alpha 1" "$STEPS" \
    --algorithm slowmo-swarmsgd --local-steps 2 --swarm-slowmo-tau $TAU \
    --swarm-slowmo-beta "$beta" --swarm-slowmo-alpha 1
done
