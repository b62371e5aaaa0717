#!/usr/bin/env bash
# Runs one benchmark of issue 7 from an existing build and prints its JSON lines on stdout.
# Builds nothing: configure and build first (cmake -S . -B build && cmake --build build).
#
#   bench/run.sh NAME [ARGS...]
#     NAME  codec | wire  (scale, overhead, sim-scale, time-to-accuracy: not implemented yet)
#     ARGS  passed to the benchmark (wire: [tcp|ipc|all] [dim])
#   STARLING_BUILD_DIR  build folder holding bench/ (default ./build)
set -euo pipefail

usage() {
  echo "usage: $0 codec|wire [ARGS...]   (build folder: \$STARLING_BUILD_DIR, default ./build)" >&2
}

if [[ $# -lt 1 ]]; then
  usage
  exit 2
fi
name="$1"
shift

case "${name}" in
  codec | wire) ;;
  scale | overhead | sim-scale | time-to-accuracy)
    echo "${name}: not implemented yet"
    exit 2
    ;;
  *)
    echo "unknown benchmark: ${name}" >&2
    usage
    exit 2
    ;;
esac

build_dir="${STARLING_BUILD_DIR:-./build}"
binary="${build_dir}/bench/starling-bench-${name}"
if [[ ! -x "${binary}" ]]; then
  echo "${binary} not found: build first (cmake --build ${build_dir} --target starling-bench-${name})" >&2
  exit 1
fi
exec "${binary}" "$@"
