#!/usr/bin/env bash
# Sanitizer builds of the test suite (issue 6):
#   scripts/sanitize.sh asan   ASan + UBSan (g++, -O1): the tests of everything that parses or
#                              validates input and of the state machines (ASAN_TESTS below),
#                              into build-asan/
#   scripts/sanitize.sh tsan   TSan: the tests of the threaded parts (the CURVE guard's ZAP and
#                              handshake-monitor thread next to the poll loop, the zero-copy send
#                              buffers that ZeroMQ's I/O thread frees, daemons on loopback), into
#                              build-tsan/
#   scripts/sanitize.sh        both
# Any sanitizer report fails the test that triggered it (halt_on_error, and the daemons that
# tests start are built with the same flags, so their reports fail them too).
set -euo pipefail
cd "$(dirname "$0")/.."
modes=("$@")
((${#modes[@]})) || modes=(asan tsan)
jobs=$(nproc)

# The ASan run covers the code that reads untrusted or user-given bytes (codec, transport and
# CURVE, data readers, cluster/edge/matrix files, command lines) and the algorithms' state
# machines, with real daemons where the test starts them. Left to scripts/test.sh at full speed,
# to keep CI within its time: the long numerical reproductions (a9a convergence, OPTRA, APM-C,
# reference solves) and the multi-daemon integration, fault and crash runs, which exercise the
# same code paths for minutes.
ASAN_TESTS=(codec_test readers_test topology_test partition_test explicit_inputs_test
  exchange_driver_test round_synchronizer_test compression_test mlp_test inference_test
  fault_injection_test mixing_test send_path_test curve_test spray_test cli_errors_test)
ASAN_TARGETS=(starlingd starling-sim starling-probe "${ASAN_TESTS[@]}")
# The threaded parts. SwarmSGD's accuracy test is left out: 6 daemons x 3000 steps under TSan's
# 5-15x slow-down would take minutes and it runs the same transport as the round-based ones.
# One round-based daemon run (EXTRA) stands for the others: each takes 60-90 s under TSan.
TSAN_TESTS='TransportSecurity|CurveTest|Spray|RoundAcrossProcesses.*extra|SendBuffers|TransportDataPath'
TSAN_TARGETS=(starlingd starling-probe curve_test spray_test daemon_integration_test)
[[ -f tests/send_path_test.cc ]] && TSAN_TARGETS+=(send_path_test)

configure_and_build() {  # dir, flags, targets...
  local dir=$1 flags=$2
  shift 2
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DSTARLING_BUILD_BENCH=OFF \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null
  cmake --build "$dir" -j "$jobs" ${1:+--target "$@"}
}

for mode in "${modes[@]}"; do
  start=$SECONDS
  case $mode in
    asan)
      flags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
      configure_and_build build-asan "$flags" "${ASAN_TARGETS[@]}"
      for t in "${ASAN_TESTS[@]}"; do
        echo "sanitize: asan $t"
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0 \
          UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
          timeout 900 "build-asan/tests/$t" --gtest_brief=1
      done
      ;;
    tsan)
      flags="-O1 -g -fno-omit-frame-pointer -fsanitize=thread"
      configure_and_build build-tsan "$flags" "${TSAN_TARGETS[@]}"
      (cd build-tsan &&
        TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/../scripts/tsan-suppressions.txt" \
        ctest --output-on-failure -j "$jobs" --timeout 900 -R "$TSAN_TESTS")
      ;;
    *)
      echo "sanitize: unknown mode '$mode' (asan or tsan)" >&2
      exit 2
      ;;
  esac
  echo "sanitize: $mode passed in $((SECONDS - start)) s"
done
