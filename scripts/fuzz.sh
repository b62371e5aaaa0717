#!/usr/bin/env bash
# Builds the codec's libFuzzer target (fuzz/codec_fuzz.cc) with clang++-14 and
# -fsanitize=fuzzer,address,undefined into build-fuzz/, writes a seed corpus of valid messages
# (fuzz/make_corpus.cc), and fuzzes for FUZZ_SECONDS (default 60). A crash, leak, sanitizer report
# or property violation fails the script and leaves the input in build-fuzz/artifacts/.
# Usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-${FUZZ_SECONDS:-60}}
out=${FUZZ_BUILD_DIR:-build-fuzz}
cxx=${FUZZ_CXX:-clang++-14}
command -v "$cxx" >/dev/null || { echo "fuzz: $cxx not found (scripts/install-deps.sh installs clang-14)" >&2; exit 1; }
mkdir -p "$out/corpus" "$out/artifacts"
sources=(net/codec.cc net/payload.cc net/payload_view.cc net/envelope.cc net/reject.cc)
flags=(-std=c++17 -g -O1 -I. -fno-omit-frame-pointer)
echo "fuzz: building $out/codec_fuzz and $out/make_corpus"
"$cxx" "${flags[@]}" -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  fuzz/codec_fuzz.cc "${sources[@]}" -o "$out/codec_fuzz"
"$cxx" "${flags[@]}" fuzz/make_corpus.cc "${sources[@]}" -o "$out/make_corpus"
"$out/make_corpus" "$out/corpus"
echo "fuzz: running codec_fuzz for ${seconds} s"
# -rss_limit_mb: the decoder must never allocate from an unbounded declared length.
status=0
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
  "$out/codec_fuzz" -max_total_time="$seconds" -rss_limit_mb=1024 -max_len=65536 \
  -artifact_prefix="$out/artifacts/" -print_final_stats=1 "$out/corpus" >"$out/fuzz.log" 2>&1 ||
  status=$?
grep -E "^#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb" "$out/fuzz.log" || true
if [[ $status -ne 0 ]]; then
  echo "fuzz: codec_fuzz failed (exit $status); see $out/fuzz.log and $out/artifacts/" >&2
  tail -40 "$out/fuzz.log" >&2
  exit 1
fi
echo "fuzz: no crash in ${seconds} s"
