#!/usr/bin/env bash
# Runs the test suite under load: one CPU hog per core for the whole time, and the suite with
# `ctest -j4 --timeout 900` RUNS times in a row (argument, default 1) in ./build (built with
# scripts/build.sh first if it does not exist). Every test must hold under load: this is how we
# check it. The hogs are stopped on exit, however the script ends. Prints the tests
# that failed in each run; exits non-zero if any run failed. Each run's full output is kept in
# build/loaded-run-K.log.
#
# `scripts/loaded_test.sh --run COMMAND [ARGS...]` runs COMMAND once beside the hogs instead and
# exits with its status (.ci/run: the README's test command, scripts/test.sh, under load).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() {
  echo "usage: scripts/loaded_test.sh [RUNS]   (RUNS: a positive integer, default 1)" >&2
  echo "       scripts/loaded_test.sh --run COMMAND [ARGS...]" >&2
  exit 2
}
command=()
runs=1
if [[ ${1:-} == --run ]]; then
  shift
  (($#)) || usage
  command=("$@")
else
  runs="${1:-1}"
  [[ "$runs" =~ ^[1-9][0-9]*$ ]] || usage
  [[ -d build ]] || scripts/build.sh
fi

hogs=()
stop_hogs() {
  for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${hogs[@]}"; do wait "$pid" 2>/dev/null || true; done
  hogs=()
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM
cores="$(nproc)"
for _ in $(seq "$cores"); do
  ( trap - EXIT; while :; do :; done ) &
  hogs+=("$!")
done

if ((${#command[@]})); then
  echo "loaded_test: $cores CPU hogs running (pids ${hogs[*]}) beside: ${command[*]}"
  start=$(date +%s)
  status=0
  "${command[@]}" || status=$?
  echo "loaded_test: '${command[*]}' exited with $status after $(($(date +%s) - start)) s beside $cores CPU hogs"
  exit "$status"
fi

echo "loaded_test: $cores CPU hogs running (pids ${hogs[*]}); $runs run(s) of ctest -j4"
failed_runs=0
summary=()
for run in $(seq "$runs"); do
  log="build/loaded-run-$run.log"
  rm -f build/Testing/Temporary/LastTestsFailed.log
  start=$(date +%s)
  if (cd build && ctest --output-on-failure -j4 --timeout 900) >"$log" 2>&1; then
    summary+=("run $run: passed ($(( $(date +%s) - start )) s)")
  else
    failed_runs=$((failed_runs + 1))
    failed="$(sed 's/^[0-9]*://' build/Testing/Temporary/LastTestsFailed.log 2>/dev/null |
      tr '\n' ' ')"
    summary+=("run $run: FAILED ($(( $(date +%s) - start )) s): ${failed:-see $log}")
  fi
  echo "${summary[-1]}  [$(grep -E '^[0-9]+% tests passed' "$log" || echo 'no ctest summary')]"
done

echo "loaded_test: $((runs - failed_runs)) of $runs run(s) passed"
printf '  %s\n' "${summary[@]}"
[[ "$failed_runs" -eq 0 ]]
