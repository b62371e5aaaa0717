#!/usr/bin/env bash
# Installs Starling's dependencies from Debian's archive (Debian 12), skipping the apt calls when
# everything is already there. Runs as root or through sudo.
#   scripts/install-deps.sh          everything: the build, the test suite and CI's extra runs
#   scripts/install-deps.sh --demo   only what scripts/demo.sh needs: the compilers and libraries
#                                    of starlingd and starling-probe, Fashion-MNIST, and numpy and
#                                    matplotlib for the launcher's plots
set -euo pipefail

demo=(build-essential cmake pkg-config libzmq3-dev cppzmq-dev libeigen3-dev
  libboost-program-options-dev libmsgpack-cxx-dev libspdlog-dev zlib1g-dev
  dataset-fashion-mnist python3 python3-numpy python3-matplotlib)
# The test suite's own: GoogleTest, the launchers' process managers (Open MPI, Slurm with munge),
# PyTorch and the Python packaging tools (the Python front end's tests), clang-14 (sanitizer
# builds and the fuzzer), network namespaces and nftables (the multi-host test), a headless
# browser (the run report's page test), and help2man (the man pages of cmake/man.cmake).
tests=(libgtest-dev libgmock-dev libbenchmark-dev help2man
  openmpi-bin slurm-wlm munge
  python3-torch python3-setuptools python3-pip
  clang-14 libclang-rt-14-dev
  iproute2 nftables
  chromium)

case "${1:-}" in
  --demo) packages=("${demo[@]}") ;;
  "") packages=("${demo[@]}" "${tests[@]}") ;;
  *) echo "install-deps: unknown argument '$1' (expected nothing or --demo)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
