#!/usr/bin/env bash
# Installs what the demo needs (scripts/install-deps.sh --demo), builds the two binaries it runs
# (starlingd and starling-probe; scripts/test.sh builds everything), and runs the demo: 8
# starlingd processes on loopback (127.0.0.1-8), SwarmSGD on a 2x4 torus, multinomial logistic
# regression on Fashion-MNIST with a non-i.i.d. Dirichlet(0.5) label split, 26000 local steps of
# mini-batch 16 per node with a cosine step schedule from 0.4. Each node starts a local step only
# once it has completed 2 merges per step so far (--merge-pace 2), reports the mean of its models
# over its last 25% of steps (--tail-average 0.25) and sends its model rounded to float32
# (--compression f32: half the bytes to encrypt and copy). docs/results/demo.md explains the
# choices and gives the figures of record. On a 2-core machine the run takes about two minutes;
# the first run also solves the centralized reference beside the daemons (about a minute of CPU)
# and caches it (~/.cache/starling, or $XDG_CACHE_HOME/starling). The launcher shows live
# progress and ends by printing the test accuracy reached next to the centralized solver's.
# Run folder: ./runs/demo. Extra arguments go to examples/launch_local.py (e.g. --nodes 16
# --topology ring).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --demo
# A fresh build folder leaves out the test suite and the benchmarks (GoogleTest is not installed
# for the demo); one that scripts/test.sh configured keeps them.
config=()
[[ -f build/CMakeCache.txt ]] || config=(-DSTARLING_BUILD_TESTS=OFF -DSTARLING_BUILD_BENCH=OFF)
scripts/build.sh --targets "starlingd starling-probe" "${config[@]}"
fmnist=/usr/share/datasets/fashion-mnist
exec python3 examples/launch_local.py --nodes 8 --topology torus --out runs/demo \
  --algorithm swarmsgd --problem multinomial --l2 1e-4 \
  --data "$fmnist/train-images-idx3-ubyte.gz" --test-data "$fmnist/t10k-images-idx3-ubyte.gz" \
  --format idx --partition dirichlet:0.5 --iterations 26000 --batch 16 --local-steps 1 \
  --step 0.4 --step-schedule cosine --merge-pace 2 --tail-average 0.25 --compression f32 \
  --reference-tolerance 1e-6 "$@"
