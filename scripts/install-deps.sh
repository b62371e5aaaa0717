#!/usr/bin/env bash
# Installs Starling's build and run dependencies from Debian's archive (Debian 12), skipping the
# apt calls when everything is already there. Runs as root or through sudo.
set -euo pipefail

packages=(build-essential cmake pkg-config libzmq3-dev cppzmq-dev libeigen3-dev
  libboost-program-options-dev libmsgpack-cxx-dev libgtest-dev libgmock-dev libbenchmark-dev
  libspdlog-dev zlib1g-dev dataset-fashion-mnist python3-numpy python3-matplotlib
  openmpi-bin slurm-wlm munge
  python3-torch python3-setuptools python3-pip
  clang-14 libclang-rt-14-dev
  iproute2 nftables)
packages+=(chromium)  # headless browser: the run report's page test (tests/run_report_test.py)

packages+=(help2man)  # the man pages built from --help (cmake/man.cmake)
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
