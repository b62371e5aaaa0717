#!/usr/bin/env bash
# `cmake --install BUILD_DIR --prefix P` into a temporary prefix, then used as a host would use
# it: every file a host needs is there (the list below is written by hand, from what a user is
# told to expect in docs/how-to/install.md), nothing installed names the source or the build tree
# (no path in any file, no RUNPATH), the launcher links resolve into share/starling/,
# `import starling` loads the prefix's own libstarling with no environment variable but
# PYTHONPATH, a C program builds with `pkg-config --cflags --libs starling` and runs, and
# starling-launch runs three installed daemons. The prefix is then moved elsewhere, and the
# Python package and the launcher still find their files (everything is found by relative paths).
#
# Usage: install_test.sh SOURCE_DIR BUILD_DIR (the binaries and libstarling built).
set -euo pipefail

source_dir=$(cd "${1:?usage: install_test.sh SOURCE_DIR BUILD_DIR}" && pwd)
build_dir=$(cd "${2:?usage: install_test.sh SOURCE_DIR BUILD_DIR}" && pwd)
fail() { echo "install_test: FAILED: $*" >&2; exit 1; }
# shellcheck source=tests/installed_checks.sh
source "$source_dir/tests/installed_checks.sh"

work=$(mktemp -d /tmp/starling-install-test-XXXXXX)
cleanup() {
  local code=$?
  [[ -n ${STARLING_KEEP_INSTALL_WORK:-} ]] && echo "kept $work" || rm -rf "$work"
  exit $code
}
trap cleanup EXIT
trap 'exit 130' INT TERM

prefix=$work/prefix
cmake --install "$build_dir" --prefix "$prefix" >"$work/install.log" 2>&1 ||
  fail "cmake --install failed: $(tail -n 5 "$work/install.log")"
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
[[ -n $libdir ]] || fail "$build_dir/CMakeCache.txt has no CMAKE_INSTALL_LIBDIR"
abi=$(sed -n 's/^#define STARLING_ABI_VERSION \([0-9]*\)$/\1/p' "$source_dir/capi/starling.h")
python_dir=lib/python3/dist-packages/starling
expected=(bin/starlingd bin/starling-sim bin/starling-probe bin/starling-launch
  bin/starling-launch-mpi bin/starling-launch-ssh bin/starling-report
  "$libdir/libstarling.so.$abi" "$libdir/libstarling.so" include/starling/starling.h
  "$libdir/pkgconfig/starling.pc"
  share/starling/launch_local.py share/starling/launch_progress.py share/starling/daemon_warnings.py
  share/starling/launch_workers.py share/starling/launch_mpi.sh share/starling/launch_ssh.sh
  share/starling/run_report.py share/starling/plot_run.py share/starling/plot_inference.py
  share/starling/starling.sbatch
  "$python_dir/__init__.py" "$python_dir/node.py" "$python_dir/_lib.py" "$python_dir/launch.py"
  "$python_dir/torch.py")
for path in "${expected[@]}"; do
  [[ -e $prefix/$path ]] || fail "cmake --install did not install $path (or it is a broken link)"
done
for command in starling-launch starling-launch-mpi starling-launch-ssh starling-report; do
  [[ $(readlink -f "$prefix/bin/$command") == "$prefix"/share/starling/* ]] ||
    fail "bin/$command does not lead into share/starling/: $(readlink "$prefix/bin/$command")"
done
[[ $(readelf -d "$prefix/$libdir/libstarling.so.$abi" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p') == "libstarling.so.$abi" ]] ||
  fail "libstarling's SONAME is not libstarling.so.$abi"
echo "installed: ${#expected[@]} expected paths present, SONAME libstarling.so.$abi"

# Nothing names the source or the build tree (also inside the binaries), and no RUNPATH.
if grep -rl -e "$source_dir" -e "$build_dir" "$prefix" >"$work/refs.txt"; then
  fail "installed files name the source or build tree: $(tr '\n' ' ' <"$work/refs.txt")"
fi
for elf in "$prefix"/bin/starlingd "$prefix"/bin/starling-sim "$prefix"/bin/starling-probe \
           "$prefix/$libdir/libstarling.so.$abi"; do
  ! readelf -d "$elf" | grep -Eq 'RUNPATH|RPATH' || fail "$elf has a RUNPATH: $(readelf -d "$elf" | grep PATH)"
done
echo "no installed file names $source_dir or $build_dir; no RUNPATH"

# Used from a folder outside both trees, with only the prefix on PATH and PYTHONPATH.
mkdir -p "$work/home" "$work/run"
cd "$work/run"
as_user() {
  env -i PATH="$prefix/bin:/usr/bin:/bin" HOME="$work/home" LANG=C.UTF-8 \
    PYTHONPATH="$prefix/lib/python3/dist-packages" PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig" "$@"
}
check_python_import "$prefix"
check_c_program env LD_LIBRARY_PATH="$prefix/$libdir"
write_data data.svm
check_launcher "$prefix/bin" data.svm 6

# Moved: the same files under another prefix find each other there.
mv "$prefix" "$work/moved"
prefix=$work/moved
check_python_import "$prefix"
as_user starling-launch --help >/dev/null || fail "the moved starling-launch --help failed"
echo "install_test: PASSED"
