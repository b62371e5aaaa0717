// libFuzzer target for the wire codec (DESIGN.md "Wire protocol": every byte from the network
// is untrusted). Built by scripts/fuzz.sh with clang++-14 -fsanitize=fuzzer,address,undefined.
//
// Properties checked on every input, beyond "no crash, no leak, no undefined behaviour, no
// allocation beyond the limits" (which the sanitizers and libFuzzer's -rss_limit_mb check):
//   - Decode never throws and fills a reject reason on failure;
//   - a decoded envelope re-encodes, and the re-encoded bytes decode to an equal envelope;
//   - payload readers (PayloadToDoubles, UnpackTopK) accept exactly what CheckPayload accepts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "net/codec.h"
#include "net/payload.h"
#include "net/reject.h"

namespace {

using starling::net::DecodeLimits;
using starling::net::Encoding;
using starling::net::Envelope;
using starling::net::Reject;
using starling::net::RejectReason;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "codec_fuzz: property violated: %s\n", what);
  std::abort();
}

void CheckOne(const char* data, size_t size, const DecodeLimits& limits) {
  Envelope envelope;
  Reject reject;
  reject.reason = RejectReason::kCount;
  if (!starling::net::Decode(data, size, limits, &envelope, &reject)) {
    if (reject.reason == RejectReason::kCount) Fail("Decode failed without a reason");
    return;
  }
  for (const auto& payload : envelope.payloads) {
    if (!starling::net::CheckPayload(payload, nullptr)) Fail("decoded payload fails CheckPayload");
    if (payload.encoding == Encoding::kFloat64 || payload.encoding == Encoding::kFloat32) {
      std::vector<double> values;
      if (!starling::net::PayloadToDoubles(payload, &values, nullptr)) {
        Fail("PayloadToDoubles refused a payload that Decode accepted");
      }
    } else if (payload.encoding == Encoding::kTopK) {
      std::vector<uint32_t> indices;
      std::vector<double> values;
      if (!starling::net::UnpackTopK(payload, &indices, &values, nullptr)) {
        Fail("UnpackTopK refused a payload that Decode accepted");
      }
    }
  }
  std::string again;
  try {
    starling::net::Encode(envelope, &again);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "codec_fuzz: Encode threw: %s\n", e.what());
    Fail("a decoded envelope does not re-encode");
  }
  Envelope back;
  if (!starling::net::Decode(again.data(), again.size(), limits, &back, &reject)) {
    std::fprintf(stderr, "codec_fuzz: re-decode: %s\n", reject.detail.c_str());
    Fail("re-encoded bytes do not decode");
  }
  if (!(back == envelope)) Fail("decode(encode(decode(x))) != decode(x)");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* bytes = reinterpret_cast<const char*>(data);
  // The daemon's limits for a small run (so that "wrong dimension" and "oversized" paths are
  // reached by short inputs), and the codec's defaults.
  static const DecodeLimits run_limits = starling::net::LimitsForRun(16, 4);
  static const DecodeLimits defaults;
  CheckOne(bytes, size, run_limits);
  CheckOne(bytes, size, defaults);
  return 0;
}
