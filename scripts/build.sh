#!/usr/bin/env bash
# Configures and builds Starling (Release) into ./build. Extra arguments go to cmake's configure.
# --targets "A B ...": build only these targets (scripts/demo.sh: the binaries it runs), not all.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
if [[ ${1:-} == --targets ]]; then
  read -r -a targets <<<"${2:?--targets needs a list of targets}"
  shift 2
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$(nproc)" ${targets[@]:+--target "${targets[@]}"}
