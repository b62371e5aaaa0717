# Checks of an installed Starling that tests/install_test.sh (cmake --install --prefix) and
# tests/package_test.sh (the Debian package) share. Source it; each check runs in the current
# folder, prints one line saying what it saw, and calls `fail MESSAGE` (the caller's) on a
# mismatch. The caller defines as_user: a command prefix that runs a command as a user of that
# installation would (its PATH, a HOME of its own, nothing of the source or build tree).

# `import starling` loads the libstarling of the installation under PREFIX, found by itself.
check_python_import() {  # PREFIX
  local library
  library=$(as_user /usr/bin/python3 -c 'import starling; print(starling.library().path)') ||
    fail "python3 -c 'import starling' failed with the package installed under $1"
  [[ $(readlink -f "$library") == "$1"/lib/* ]] ||
    fail "import starling loaded $library, not the library installed under $1/lib"
  echo "python3: import starling loads $library"
}

# A C program compiled and linked with `pkg-config --cflags --libs starling`, run: it includes
# the installed header and calls the installed library, which must refuse options without a
# cluster by naming --cluster. Extra arguments go before the program (e.g. env LD_LIBRARY_PATH=).
check_c_program() {  # [RUN_PREFIX...]
  cat >abi.c <<'C'
#include <starling/starling.h>
#include <stdio.h>
int main(void) {
  const char* argv[] = {"--iterations", "10"};
  starling_node* node = NULL;
  int code = starling_create(2, argv, &node);
  printf("ABI %d, starling_create: %d (%s)\n", STARLING_ABI_VERSION, code, starling_last_error());
  return code == STARLING_E_ARGUMENT ? 0 : 1;
}
C
  local flags out
  flags=$(as_user pkg-config --cflags --libs starling) || fail "pkg-config --cflags --libs starling failed"
  # shellcheck disable=SC2086  # pkg-config's words are separate arguments
  as_user cc abi.c -o abi $flags || fail "cc abi.c $flags failed"
  out=$(as_user "$@" ./abi) || fail "the C program over libstarling failed: $out"
  grep -q -- "--cluster" <<<"$out" || fail "libstarling's error does not name --cluster: $out"
  echo "C program with '$flags': $out"
}

# starling-launch runs three daemons over ipc (no ports to collide on) with the installed
# starlingd found beside itself, and starling-report writes the run's report.
check_launcher() {  # BIN_DIR DATA_FILE FEATURES
  local t0=$SECONDS
  as_user timeout 300 starling-launch --nodes 3 --topology ring --out launch --transport ipc \
    --no-plots --no-snapshots --reference-optimum none --timeout-s 240 --algorithm extra \
    --problem logistic --l2 1e-2 --data "$2" --format libsvm --features "$3" --iterations 40 \
    >launch.log 2>&1 || fail "starling-launch exited with $? (launch.log: $(tail -n 3 launch.log))"
  grep -q "^$1/starlingd " launch/command.txt ||
    fail "starling-launch did not run $1/starlingd: $(grep starlingd launch/command.txt | head -n 1)"
  as_user starling-report launch >report.log 2>&1 || fail "starling-report failed: $(tail -n 3 report.log)"
  [[ -s launch/report.md ]] || fail "starling-report wrote no launch/report.md"
  echo "starling-launch: 3 daemons over ipc with $1/starlingd in $((SECONDS - t0)) s; starling-report wrote report.md"
}

# A small LIBSVM data set (6 features) made by awk with a fixed seed.
write_data() {  # FILE
  awk 'BEGIN { srand(11); for (r = 0; r < 600; r++) { s = 0; line = "";
         for (k = 1; k <= 6; k++) { v = rand() * 2 - 1; s += v * (k % 3 - 1); line = line " " k ":" v }
         print (s > 0 ? "+1" : "-1") line } }' >"$1"
}
