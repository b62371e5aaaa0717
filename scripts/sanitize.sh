#!/usr/bin/env bash
# Sanitizer builds of the test suite:
#   scripts/sanitize.sh asan   ASan + UBSan (g++, -O0): the tests of everything that parses or
#                              validates input and of the state machines (ASAN_TESTS below),
#                              into build-asan/
#   scripts/sanitize.sh tsan   TSan: the tests of the threaded parts (the CURVE guard's ZAP and
#                              handshake-monitor thread next to the poll loop, the zero-copy send
#                              buffers that ZeroMQ's I/O thread frees, daemons on loopback), into
#                              build-tsan/
#   scripts/sanitize.sh        both
#   --build-only / --run-only  first argument: only build the sanitized binaries, or only run the
#                              tests of binaries built before (.ci/run builds them at the lowest
#                              priority while the suite runs, then runs them)
# Any sanitizer report fails the test that triggered it (halt_on_error, and the daemons that
# tests start are built with the same flags, so their reports fail them too).
set -euo pipefail
cd "$(dirname "$0")/.."
steps=(build run)
case ${1:-} in
  --build-only) steps=(build); shift ;;
  --run-only) steps=(run); shift ;;
esac
modes=("$@")
((${#modes[@]})) || modes=(asan tsan)
jobs=$(nproc)

# The ASan run covers the code that reads untrusted or user-given bytes (codec, transport and
# CURVE, data readers, cluster/edge/matrix files, command lines), the pairwise exchange and the
# compressors, with real daemons where the test starts them (spray, CURVE, CLI errors). Left to
# scripts/test.sh at full speed, to keep CI within its time (each sanitizer build costs minutes on
# two cores): the numerical reproductions, the other state-machine tests, and the multi-daemon
# integration, fault and crash runs, which exercise the same transport code.
ASAN_TESTS=(codec_test readers_test topology_test explicit_inputs_test exchange_driver_test
  compression_test send_path_test curve_test spray_test cli_errors_test zero_copy_exchange_test
  payload_view_test)
ASAN_TESTS+=(prometheus_exporter_test)  # the monitor's HTTP server reads bytes from anyone
ASAN_TARGETS=(starlingd starling-sim starling-probe "${ASAN_TESTS[@]}")
# The threaded parts: the CURVE guard's ZAP and handshake-monitor thread beside the poll loop, the
# send buffers that ZeroMQ's I/O thread frees, the algorithms' snapshots it sends and releases
# (zero-copy exchanges), and real daemons under attack (spray). The
# round-based and SwarmSGD daemon runs take 60-90 s each under TSan and use the same transport.
TSAN_TESTS='TransportSecurity|CurveTest|Spray|SendBuffers|TransportDataPath|ZeroCopyExchange'
TSAN_TARGETS=(starlingd curve_test spray_test zero_copy_exchange_test)
[[ -f tests/send_path_test.cc ]] && TSAN_TARGETS+=(send_path_test)
TSAN_TESTS+='|PrometheusExporter\.'  # its serving thread beside the monitor's Update calls
TSAN_TARGETS+=(prometheus_exporter_test)

# clang++-14 (installed for the fuzzer anyway) rather than g++: on this code it compiles an ASan +
# UBSan -O0 build in about 0.45 of g++'s CPU time (g++'s UBSan instrumentation is the slow part)
# and a TSan -O1 build in about 0.75, and the builds are nearly all of these stages.
SANITIZE_CXX=${SANITIZE_CXX:-clang++-14}

step() { [[ " ${steps[*]} " == *" $1 "* ]]; }  # is step $1 (build or run) asked for?

configure_and_build() {  # dir, flags, targets...
  local dir=$1 flags=$2
  shift 2
  step build || return 0
  command -v "$SANITIZE_CXX" >/dev/null ||
    { echo "sanitize: $SANITIZE_CXX not found (scripts/install-deps.sh installs clang-14)" >&2; exit 1; }
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DSTARLING_BUILD_BENCH=OFF \
    -DCMAKE_CXX_COMPILER="$SANITIZE_CXX" \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null
  cmake --build "$dir" -j "$jobs" ${1:+--target "$@"}
}

# Runs each test program, $jobs at a time (several start daemons and mostly wait), each into its
# own log; prints the log of every one that failed and fails if any did.
run_in_parallel() {  # logdir, tests...
  local logdir=$1 t failed=()
  shift
  step run || return 0
  mkdir -p "$logdir"
  rm -f "$logdir"/*.failed  # a previous run's verdicts
  for t in "$@"; do
    while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
    echo "sanitize: asan $t"
    (ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0 \
      UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      timeout 900 "build-asan/tests/$t" --gtest_brief=1 >"$logdir/$t.log" 2>&1 ||
      echo "exit $?" >>"$logdir/$t.log.failed") &
  done
  wait
  for t in "$@"; do
    if [[ -f $logdir/$t.log.failed ]]; then
      failed+=("$t")
      echo "sanitize: asan $t FAILED ($(cat "$logdir/$t.log.failed")); its output:"
      cat "$logdir/$t.log"
    fi
  done
  ((${#failed[@]} == 0)) || { echo "sanitize: asan failed: ${failed[*]}" >&2; return 1; }
}

for mode in "${modes[@]}"; do
  start=$SECONDS
  case $mode in
    asan)
      # -O0: the build is nearly all of this stage (the tests run in ~60 s), and -O0 compiles the
      # Eigen-heavy files in ~0.6 of -O1's CPU time; -g1 keeps line numbers in reports at no cost.
      flags="-O0 -g1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
      configure_and_build build-asan "$flags" "${ASAN_TARGETS[@]}"
      run_in_parallel build-asan/asan-logs "${ASAN_TESTS[@]}"
      ;;
    tsan)
      flags="-O1 -g1 -fno-omit-frame-pointer -fsanitize=thread"
      configure_and_build build-tsan "$flags" "${TSAN_TARGETS[@]}"
      step run && (cd build-tsan &&
        TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/../scripts/tsan-suppressions.txt" \
        ctest --output-on-failure -j "$jobs" --timeout 900 -R "$TSAN_TESTS")
      ;;
    *)
      echo "sanitize: unknown mode '$mode' (asan or tsan)" >&2
      exit 2
      ;;
  esac
  echo "sanitize: $mode (${steps[*]}) passed in $((SECONDS - start)) s"
done
