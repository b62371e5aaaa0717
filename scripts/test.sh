#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd build
# Twice the cores: most tests with daemons wait on sockets and deadlines, not on a core (the
# suite holds at -j4 beside a CPU hog on every core: scripts/loaded_test.sh).
ctest --output-on-failure -j "$((2 * $(nproc)))" --timeout 900
