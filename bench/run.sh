#!/usr/bin/env bash
# Runs one benchmark from an existing build and prints its JSON lines on stdout
# (progress notes and errors go to stderr). Builds nothing: configure and build first
# (cmake -S . -B build && cmake --build build).
#
#   bench/run.sh NAME [ARGS...]
#     codec             encode/decode of float64 payloads vs memcpy        [dim]
#     lattice           one lattice-quantized message, op by op, vs memcpy
#     wire              exchange over TCP/IPC vs raw cppzmq ping-pong       [tcp|ipc|all] [dim]
#                       wire shm: the shared-memory ring's round trip vs    [shm] [dim]
#                       raw ZeroMQ over TCP, its copy bandwidth vs memcpy
#     sim-scale         1,000 simulated nodes of EXTRA and SwarmSGD         [--nodes N] [--seconds S]
#     scale             8-64 starlingd processes: memory, idle CPU,         [--nodes 8,16] [--quick]
#                       exchanges/s, step time, growth with N and d
#     overhead          SwarmSGD (vs D-PSGD) blocked/compute time,      [--nodes 4,8] [--algorithms A,B]
#                       4-16 daemons, 5 ms compute per step                 [--compute-delay-ms MS] [--local-steps H]
#     time-to-accuracy  16 daemons vs one process of plain SGD              [--nodes N] [--target A]
#     stragglers        one node k times slower, wall time to gaps     [--nodes 8] [--factors 1,2,4,8]
#                       1e-4/1e-6/1e-8 per method (bench/stragglers.py)    [--methods A,B,...] [--loss P]
#                                                                           [--problem a9a|optra] [--plot PNG]
#     vs-torch          Fashion-MNIST, 8 workers: SwarmSGD and D-PSGD daemons  [--models M,M] [--steps S]
#                       vs PyTorch DDP and local SGD over gloo, same shards   [--reps R] [--quick]
#                       (bench/vs_torch.py; exit 77 without python3-torch)
#     large             d = 1e6 and 1e7 between 4 daemons:  [--dims D,D] [--nodes N]
#                       peak RSS, exchanges/s, CPU and page faults per         [--before STARLINGD]
#                       exchange; blocked/compute at d = 1e6 with 25 ms       [--compute-delay-ms MS]
#                       compute per step (bench/large_models.py)
#   STARLING_BUILD_DIR  build folder (default ./build)
# Each NAME accepts --help (the binaries: a usage line on bad arguments).
set -euo pipefail

usage() {
  sed -n '6,29p' "$0" | sed 's/^# \{0,1\}//' >&2
}

if [[ $# -lt 1 ]]; then
  echo "usage: $0 NAME [ARGS...]" >&2
  usage
  exit 2
fi
name="$1"
shift
bench_dir="$(cd "$(dirname "$0")" && pwd)"
build_dir="${STARLING_BUILD_DIR:-./build}"

run_binary() {
  local binary="${build_dir}/bench/$1"
  shift
  if [[ ! -x "${binary}" ]]; then
    echo "${binary} not found: build first (cmake --build ${build_dir} --target $(basename "${binary}")) or set STARLING_BUILD_DIR" >&2
    exit 1
  fi
  exec "${binary}" "$@"
}

case "${name}" in
  codec) run_binary starling-bench-codec "$@" ;;
  lattice) run_binary starling-bench-lattice "$@" ;;
  wire)
    if [[ "${1:-}" == shm ]]; then
      shift
      run_binary starling-bench-shm "$@"
    fi
    run_binary starling-bench-wire "$@"
    ;;
  sim-scale) run_binary starling-bench-sim-scale "$@" ;;
  scale | overhead | time-to-accuracy)
    export STARLING_BUILD_DIR="${build_dir}"
    exec python3 "${bench_dir}/cluster_bench.py" "${name}" "$@"
    ;;
  stragglers)
    export STARLING_BUILD_DIR="${build_dir}"
    exec /usr/bin/python3 "${bench_dir}/stragglers.py" "$@"
    ;;
  large)
    export STARLING_BUILD_DIR="${build_dir}"
    exec python3 "${bench_dir}/large_models.py" "$@"
    ;;
  vs-torch)
    export STARLING_BUILD_DIR="${build_dir}"
    exec /usr/bin/python3 "${bench_dir}/vs_torch.py" "$@"
    ;;
  -h | --help | help)
    echo "usage: $0 NAME [ARGS...]" >&2
    usage
    exit 0
    ;;
  *)
    echo "unknown benchmark: ${name}" >&2
    usage
    exit 2
    ;;
esac
