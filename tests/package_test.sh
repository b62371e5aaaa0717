#!/usr/bin/env bash
# The Debian package, installed for real: build it (scripts/package.sh over BUILD_DIR) or take
# $STARLING_DEB, check it with lintian, `dpkg -i` it, run Starling with nothing but the installed
# commands, then `dpkg -r` and `dpkg -P` it and check that nothing is left behind.
#
# The run is what a user does on a host with the package and nothing else: PATH=/usr/bin:/bin, a
# fresh HOME, a working folder outside the source and build trees. Keys from the installed
# `starlingd --keygen`, a cluster file written by hand, three daemons and the monitor over TCP on
# loopback addresses of their own; `python3 -c 'import starling'` finding the installed
# libstarling; a C program compiled and linked with `pkg-config --cflags --libs starling`; the
# installed launcher (starling-launch) and report (starling-report).
# Removal: the paths under /usr, /etc, /var/lib and /opt after `dpkg -P` are exactly those before
# `dpkg -i` (dpkg's own status files aside), so no file of the package or of its running stays.
#
# Usage: package_test.sh SOURCE_DIR BUILD_DIR. Needs root (it installs into /usr); exits 77
# (CTest's skip) with a message when not root, without dpkg, or when a package named starling is
# already installed (the test would replace and remove it).
set -euo pipefail

source_dir=$(cd "${1:?usage: package_test.sh SOURCE_DIR BUILD_DIR}" && pwd)
build_dir=$(cd "${2:?usage: package_test.sh SOURCE_DIR BUILD_DIR}" && pwd)
skip() { echo "SKIP: $*"; exit 77; }
# shellcheck source=tests/installed_checks.sh
source "$source_dir/tests/installed_checks.sh"
fail() { echo "package_test: FAILED: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || skip "installing the package into /usr needs root"
command -v dpkg >/dev/null || skip "no dpkg: not a Debian system"
if dpkg-query -W -f='${Status}' starling 2>/dev/null | grep -q installed; then
  skip "a package named starling is installed already; remove it first (dpkg -r starling)"
fi

work=$(mktemp -d /tmp/starling-package-test-XXXXXX)
pids=()
installed=0
cleanup() {
  local code=$?
  # SIGTERM: timeout passes it on to the command it runs.
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if ((installed)); then dpkg -P starling >/dev/null 2>&1 || true; fi
  if [[ $code -ne 0 && $code -ne 77 ]]; then
    echo "package_test: exit $code; last lines of each log:"
    for f in "$work"/*.log "$work"/run/*.log; do [[ -f $f ]] && { echo "== $f"; tail -n 8 "$f"; }; done
  fi
  [[ -n ${STARLING_KEEP_PACKAGE_WORK:-} ]] && echo "kept $work" || rm -rf "$work"
  exit $code
}
trap cleanup EXIT
trap 'exit 130' INT TERM
seconds() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(seconds)" 'BEGIN { printf "%.1f", b - a }'; }
started=$(seconds)

# 1. The package.
if [[ -n ${STARLING_DEB:-} ]]; then
  deb=$STARLING_DEB
  [[ -f $deb ]] || fail "STARLING_DEB=$deb: no such file"
else
  t0=$(seconds)
  "$source_dir/scripts/package.sh" --build-dir "$build_dir" --out "$work/deb" >"$work/package.log" 2>&1 ||
    fail "scripts/package.sh failed (its output: $work/package.log, shown below)"
  deb=$(tail -n 1 "$work/package.log")
  echo "package: built in $(since "$t0") s: $deb"
fi
version=$(sed -n 's/^project(starling VERSION \([0-9.]*\).*/\1/p' "$source_dir/CMakeLists.txt")
[[ $(basename "$deb") == "starling_${version}_$(dpkg --print-architecture).deb" ]] ||
  fail "$deb: expected the name starling_${version}_$(dpkg --print-architecture).deb"
echo "package: $(du -k "$deb" | cut -f1) KiB, $(dpkg-deb -f "$deb" Installed-Size) KiB installed"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
# Runtime libraries only (dpkg-shlibdeps), never a -dev package; Python for the Python package.
# (Debian 12's libspdlog1.10 provides libspdlog1.10-fmt9, the name its shlibs file gives.)
for want in libzmq5 'libboost-program-options1\.74\.0' 'libspdlog1\.10(-fmt9)?' libfmt9 zlib1g \
            libc6 'libstdc\+\+6' libgcc-s1 python3 python3-numpy; do
  grep -Eq "(^|, )$want( |,|$)" <<<"$depends" || fail "Depends lacks $want: $depends"
done
grep -q -- "-dev" <<<"$depends" && fail "Depends names a -dev package: $depends"
dpkg-deb -c "$deb" >"$work/contents.txt"
for member in copyright changelog.gz; do
  grep -q " ./usr/share/doc/starling/$member$" "$work/contents.txt" ||
    fail "the package has no /usr/share/doc/starling/$member"
done
if command -v lintian >/dev/null; then
  lintian --fail-on none "$deb" >"$work/lintian.log" 2>&1 || true
  echo "lintian: $(grep -c '' "$work/lintian.log") line(s)"
  sed 's/^/  /' "$work/lintian.log"
  ! grep -Eq '^[EW]: ' "$work/lintian.log" || fail "lintian reports errors or warnings (above)"
else
  echo "note: no lintian here: the package's lint was not checked (apt-get install lintian)"
fi

# 2. The file system before: every path under the trees a package may touch.
snapshot() {
  find /usr /etc /var/lib /opt -xdev 2>/dev/null |
    grep -Ev '^/var/lib/dpkg/(status|status-old|available|lock.*|triggers/.*|updates/.*)$' |
    grep -Ev '^/var/lib/(apt|systemd|ucf)/' | LC_ALL=C sort
}
# Folders the package owns must not be there yet: what an earlier install left would hide what
# this one leaves.
for folder in /usr/share/starling /usr/lib/python3/dist-packages/starling; do
  [[ ! -e $folder ]] || fail "$folder exists though no starling package is installed (left by an earlier install?): remove it and rerun"
done
snapshot >"$work/before.txt"

# 3. Install.
installed=1
dpkg -i "$deb" >"$work/dpkg-install.log" 2>&1 || fail "dpkg -i $deb failed: $(tail -n 3 "$work/dpkg-install.log")"
for command in starlingd starling-sim starling-probe starling-launch starling-launch-mpi \
               starling-launch-ssh starling-report; do
  [[ -x /usr/bin/$command ]] || fail "/usr/bin/$command is not installed"
done

# 4. A user's run with the installed commands only.
mkdir -p "$work/home" "$work/run"
cd "$work/run"
as_user() { env -i PATH=/usr/bin:/bin HOME="$work/home" LANG=C.UTF-8 "$@"; }
n=3
octet=$(($$ % 200 + 20))
port=7300
for ((i = 0; i < n; i++)); do as_user starlingd --keygen "node$i" >/dev/null; done
as_user starlingd --keygen probe >/dev/null
{
  echo "# three nodes on loopback addresses of their own, a ring"
  for ((i = 0; i < n; i++)); do
    echo "node $i tcp://127.83.$octet.$((i + 1)):$port $(tail -n 1 "node$i.pub")"
  done
  echo "probe $(tail -n 1 probe.pub)"
  for ((i = 0; i < n; i++)); do echo "edge $i $(((i + 1) % n))"; done
} >cluster.conf
write_data data.svm
run_opts=(--algorithm extra --problem logistic --l2 1e-2 --data data.svm --format libsvm
          --features 6 --seed 3 --iterations 200)
t0=$(seconds)
# Every process has a deadline of its own (timeout), so that the test ends even if one hangs.
as_user timeout 180 starling-probe monitor --cluster cluster.conf \
  --secret-key probe.key "${run_opts[@]}" --interval-ms 500 --timeout-s 150 >monitor.log 2>&1 &
monitor_pid=$!
pids+=("$monitor_pid")
# The daemons start once the monitor subscribes (its first line says "watching", as the launcher
# waits for it), and each round takes 10 ms at least, so that the monitor's connections are up
# before the nodes' first reports and it sees the whole run.
until grep -q watching monitor.log; do
  kill -0 "$monitor_pid" 2>/dev/null || fail "starling-probe monitor exited before subscribing (monitor.log)"
  (($(awk -v a="$t0" -v b="$(seconds)" 'BEGIN { print (b - a > 60) }'))) &&
    fail "waited 60 s for starling-probe monitor to say it is watching the nodes (monitor.log)"
  sleep 0.1
done
for ((i = 0; i < n; i++)); do
  as_user timeout 180 starlingd --cluster cluster.conf \
    --id "$i" --secret-key "node$i.key" "${run_opts[@]}" --final-model "model-$i.txt" \
    --compute-delay-ms 10 --give-up-s 60 --linger-s 5 >"node-$i.log" 2>&1 &
  node_pids[$i]=$!
  pids+=("$!")
done
for ((i = 0; i < n; i++)); do
  wait "${node_pids[$i]}" || fail "starlingd node $i exited with $? (waiting for its end: node-$i.log)"
  [[ $(grep -c '' "model-$i.txt") -gt 0 ]] || fail "node $i wrote no final model (model-$i.txt)"
done
wait "$monitor_pid" || fail "starling-probe monitor exited with $? (monitor.log)"
grep -q summary monitor.log || fail "the monitor printed no summary (monitor.log)"
! grep -q incomplete monitor.log || fail "the monitor missed part of the run: $(grep incomplete monitor.log)"
echo "three daemons and the monitor, installed commands only: $(since "$t0") s"

check_python_import /usr
if command -v cc >/dev/null; then
  check_c_program
else
  echo "note: no C compiler here: the pkg-config check was not run"
fi
check_launcher /usr/bin data.svm 6
cd /

# 5. Remove and purge: nothing left.
dpkg -r starling >"$work/dpkg-remove.log" 2>&1 || fail "dpkg -r starling failed: $(tail -n 3 "$work/dpkg-remove.log")"
left=$(dpkg -L starling 2>/dev/null | grep -v '^/\.$' | while read -r p; do [[ -e $p && ! -d $p ]] && echo "$p"; done || true)
[[ -z $left ]] || fail "dpkg -r left files of the package: $left"
dpkg -P starling >"$work/dpkg-purge.log" 2>&1 || fail "dpkg -P starling failed: $(tail -n 3 "$work/dpkg-purge.log")"
installed=0
snapshot >"$work/after.txt"
if ! diff "$work/before.txt" "$work/after.txt" >"$work/left.txt"; then
  echo "paths that differ after dpkg -P (> new, < gone):"
  head -n 40 "$work/left.txt"
  fail "installing, running and removing the package changed the file system"
fi
echo "removal: /usr, /etc, /var/lib and /opt as before ($(grep -c '' "$work/before.txt") paths)"
echo "package_test: PASSED in $(since "$started") s"
