#!/usr/bin/env bash
# The reproductions for A2CiD2 (--algorithm acid) and edge-activated asynchronous
# ADMM (--algorithm async-admm), in starling-sim; one line per run on stdout
# (docs/explanations/algorithms/asynchronous.md).
#
#   bench/async_pairwise.sh acid-averaging   consensus distance after T local steps, pure
#                                            averaging (step 1e-12), ring of 16 and 32
#   bench/async_pairwise.sh acid-training    a9a logistic (lambda 1e-4), 3000 local steps,
#                                            batch 8, seeds 1-3: rel_gap and consensus
#   bench/async_pairwise.sh admm-rho         a9a logistic (lambda 1e-2), 16 nodes ring,
#                                            rho in {0.1, 1, 10}: local steps to 1e-6 and 1e-8
#   STARLING_BUILD_DIR  build folder (default ./build); DATA  a9a (default ../shared/data/a9a)
set -euo pipefail
cd "$(dirname "$0")/.."
sim=${STARLING_BUILD_DIR:-build}/node/starling-sim
data=${DATA:-../shared/data/a9a}
[[ -x $sim ]] || { echo "async_pairwise.sh: $sim not found: run scripts/build.sh first" >&2; exit 2; }
[[ -f $data ]] || { echo "async_pairwise.sh: $data not found (set DATA)" >&2; exit 2; }
common=(--problem logistic --data "$data" --format libsvm --topology ring -q)

case "${1:-}" in
acid-averaging)
  for nodes in 16 32; do
    for run in "swarmsgd 2" "acid 2" "swarmsgd 1"; do
      read -r algorithm h <<<"$run"
      line="nodes $nodes $algorithm H=$h consensus"
      for t in 100 200 400 800; do
        c=$("$sim" "${common[@]}" --algorithm "$algorithm" --local-steps "$h" --l2 1e-4 \
          --nodes "$nodes" --seed 1 --iterations "$t" --batch 1 --step 1e-12 --x0 uniform \
          --log-every "$t" 2>/dev/null | awk '/^consensus/{print $2}')
        line="$line T=$t:$c"
      done
      echo "$line"
    done
  done
  ;;
acid-training)
  for nodes in 16 32; do
    for run in "swarmsgd 4" "acid 4" "swarmsgd 2" "acid 2" "swarmsgd 1"; do
      read -r algorithm h <<<"$run"
      for seed in 1 2 3; do
        "$sim" "${common[@]}" --algorithm "$algorithm" --local-steps "$h" --l2 1e-4 \
          --nodes "$nodes" --seed "$seed" --iterations 3000 --batch 8 --log-every 3000 \
          --reference-optimum auto 2>/dev/null |
          awk -v p="nodes $nodes $algorithm H=$h seed $seed" \
            '/^rel_gap/{g=$2} /^consensus/{c=$2} /^comm_rounds/{r=$2}
             END{print p, "rel_gap", g, "consensus", c, "exchanges_per_node", r}'
      done
    done
  done
  ;;
admm-rho)
  for rho in 0.1 1 10; do
    "$sim" "${common[@]}" --algorithm async-admm --admm-rho "$rho" --l2 1e-2 --nodes 16 \
      --seed 1 --iterations 20000 --log-every 50 --reference-optimum auto --stop-at-gap 1e-8 \
      2>/dev/null |
      awk -v p="rho $rho" '/^iterations_to_rel_gap_1e-6/{a=$2} /^iterations_to_rel_gap_1e-8/{b=$2}
        /^rel_gap/{g=$2} /^comm_rounds/{r=$2} /^seconds/{s=$2}
        END{print p, "to_1e-6", a, "to_1e-8", b, "rel_gap", g, "exchanges_per_node", r, "s", s}'
  done
  ;;
*)
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
