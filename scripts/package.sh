#!/usr/bin/env bash
# Builds Starling's Debian package, starling_VERSION_ARCH.deb (VERSION: project(VERSION) in
# CMakeLists.txt), from what `cmake --install` installs (cmake/install.cmake; the package's control
# data: cmake/package.cmake), then checks it with lintian when lintian is installed.
#
# Usage: scripts/package.sh [--build-dir DIR] [--out DIR]
#   --build-dir DIR  the build tree to package (default build-package: configured Release
#                    without tests and benchmarks if new); it is brought up to date first
#   --out DIR        where the .deb goes (default DIR/package)
# Needs dpkg-dev (dpkg-shlibdeps) and file (scripts/install-deps.sh installs them, and lintian).
# Prints the .deb's path on its last line. Exit code 0, or 1 if a step failed.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-package
out=""
while (($#)); do
  case $1 in
    --build-dir) build=${2:?--build-dir needs a folder}; shift 2 ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "package.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for tool in dpkg-shlibdeps file; do
  command -v "$tool" >/dev/null ||
    { echo "package.sh: no $tool (apt-get install dpkg-dev file, or scripts/install-deps.sh)" >&2; exit 1; }
done
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSTARLING_BUILD_TESTS=OFF \
    -DSTARLING_BUILD_BENCH=OFF >/dev/null
fi
cmake --build "$build" -j "$(nproc)"
build=$(cd "$build" && pwd)
out=$(mkdir -p "${out:-$build/package}" && cd "${out:-$build/package}" && pwd)
# The changelog's date: the last commit's, so that packing the same tree twice gives the same
# changelog (a tree outside git: now).
if [[ -z ${SOURCE_DATE_EPOCH:-} ]] && git rev-parse --git-dir >/dev/null 2>&1; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
  export SOURCE_DATE_EPOCH
fi
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$out" >"$out/cpack.log" 2>&1 ||
  { echo "package.sh: cpack failed; its log ($out/cpack.log):" >&2; tail -n 30 "$out/cpack.log" >&2; exit 1; }
rm -rf "$out/_CPack_Packages"
version=$(sed -n 's/^project(starling VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
deb=$out/starling_${version}_$(dpkg --print-architecture).deb
[[ -f $deb ]] || { echo "package.sh: cpack did not write $deb; its log: $out/cpack.log" >&2; exit 1; }
echo "package.sh: $(du -k "$deb" | cut -f1) KiB; $(dpkg-deb -f "$deb" Depends | sed 's/^/Depends: /')"
if command -v lintian >/dev/null; then
  echo "package.sh: lintian:"
  lintian --fail-on none "$deb" | sed 's/^/  /'
else
  echo "package.sh: no lintian here: the package was not checked (apt-get install lintian)"
fi
echo "$deb"
