#!/usr/bin/env bash
# Installs every dependency (the demo's and the test suite's), builds everything, and runs the
# whole test suite with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Explicitly on: a build folder that scripts/demo.sh configured first has them off.
scripts/build.sh -DSTARLING_BUILD_TESTS=ON -DSTARLING_BUILD_BENCH=ON
cd build
# Twice the cores: most tests with daemons wait on sockets and deadlines, not on a core (the
# suite holds at -j4 beside a CPU hog on every core: scripts/loaded_test.sh).
ctest --output-on-failure -j "$((2 * $(nproc)))" --timeout 900
