#!/usr/bin/env bash
# Installs dependencies, builds, and runs the main demo: EXTRA over 8 simulated nodes on a ring,
# binary logistic regression on Fashion-MNIST (classes 0-4 vs 5-9, lambda = 1e-4), with the
# relative gap to the centralized optimum and the test accuracy. Output goes to ./runs/demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
out=runs/demo
mkdir -p "$out"
fmnist=/usr/share/datasets/fashion-mnist
build/node/starling-sim --algorithm extra --problem logistic --l2 1e-4 \
  --data "$fmnist/train-images-idx3-ubyte.gz" --test-data "$fmnist/t10k-images-idx3-ubyte.gz" \
  --format idx --partition iid --nodes 8 --topology ring --iterations 1500 --seed 1 \
  --reference-optimum auto --metrics "$out/metrics.jsonl" "$@"
echo "metrics: $out/metrics.jsonl"
