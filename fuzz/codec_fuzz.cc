// libFuzzer target for the wire codec (docs/reference/wire-protocol.md: every byte from the network
// is untrusted). Built by scripts/fuzz.sh with clang++-14 -fsanitize=fuzzer,address,undefined.
//
// Properties checked on every input, beyond "no crash, no leak, no undefined behaviour, no
// allocation beyond the limits" (which the sanitizers and libFuzzer's -rss_limit_mb check):
//   - Decode never throws and fills a reject reason on failure;
//   - a decoded envelope re-encodes, and the re-encoded bytes decode to an equal envelope;
//   - payload readers (PayloadToDoubles, ReadDoubles, UnpackTopK, PayloadReader) accept exactly
//     what CheckPayload accepts, and a cross-polytope view's codes are all < 2 dim; a range-codes
//     view's bytes are exactly its codes packed (each < 2^bits, padding 0).
// Every input is decoded as one single-frame message and, split at each kFrameSeparator, as a
// multi-frame message (protocol version 3's out-of-line payloads: first frame, then payload
// frames); a framed decode must also survive re-encoding out of line and inline.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "net/codec.h"
#include "net/payload.h"
#include "net/payload_view.h"
#include "net/reject.h"

namespace {

using starling::net::DecodeLimits;
using starling::net::Encoding;
using starling::net::Envelope;
using starling::net::Reject;
using starling::net::RejectReason;

// Never valid msgpack (0xc1 is unused), so a seed's frames are joined with it unambiguously.
constexpr std::string_view kFrameSeparator("\xc1\x46RM", 4);  // 0xc1 "FRM"

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "codec_fuzz: property violated: %s\n", what);
  std::abort();
}

void CheckOne(const char* data, size_t size, const std::string_view* frames, size_t frame_count,
              const DecodeLimits& limits) {
  Envelope envelope;
  Reject reject;
  reject.reason = RejectReason::kCount;
  if (!starling::net::Decode(data, size, frames, frame_count, limits, &envelope, &reject)) {
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
      std::vector<double> scratch;
      const double* read = starling::net::ReadDoubles(payload, payload.dim, &scratch, nullptr);
      if (read == nullptr) Fail("ReadDoubles refused a payload that Decode accepted");
      for (size_t i = 0; i < values.size(); ++i) {
        // Bit patterns, not ==: the values are finite, but -0.0 == 0.0.
        if (std::memcmp(&read[i], &values[i], sizeof(double)) != 0) {
          Fail("ReadDoubles and PayloadToDoubles disagree");
        }
      }
    } else if (payload.encoding == Encoding::kTopK) {
      std::vector<uint32_t> indices;
      std::vector<double> values;
      if (!starling::net::UnpackTopK(payload, &indices, &values, nullptr)) {
        Fail("UnpackTopK refused a payload that Decode accepted");
      }
    } else if (payload.encoding == Encoding::kCrossPolytope) {
      starling::net::PayloadReader reader;
      const auto view = reader.Read(payload, payload.dim, &reject);
      if (!view) Fail("PayloadReader refused a cross-polytope payload that Decode accepted");
      const auto& cp = std::get<starling::net::CrossPolytopeView>(*view);
      for (uint32_t i = 0; i < cp.samples; ++i) {
        if (cp.code(i) >= 2 * uint64_t{cp.dim}) Fail("a cross-polytope code >= 2 dim passed");
      }
    } else if (payload.encoding == Encoding::kRangeCodes) {
      starling::net::PayloadReader reader;
      const auto view = reader.Read(payload, payload.dim, &reject);
      if (!view) Fail("PayloadReader refused a range-codes payload that Decode accepted");
      const auto& rc = std::get<starling::net::RangeCodesView>(*view);
      if (rc.bits < 1 || rc.bits > 30 || !(rc.range >= 0.0) || rc.dim < 1) {
        Fail("a range-codes payload with bits outside [1, 30], a bad range or dim 0 passed");
      }
      // The bytes are exactly the codes packed least significant bit first, padding 0: packing
      // the codes read back gives the same bytes (so every code is < 2^bits and one message has
      // one encoding).
      std::string repacked(rc.codes.size(), '\0');
      uint64_t at = 0;
      for (uint32_t i = 0; i < rc.dim; ++i) {
        const uint32_t code = rc.code(i);
        if (code >> rc.bits != 0) Fail("a range code >= 2^bits passed");
        for (int b = 0; b < rc.bits; ++b, ++at) {
          if ((code >> b) & 1) {
            repacked[at / 8] = static_cast<char>(repacked[at / 8] | (1 << (at % 8)));
          }
        }
      }
      if (repacked != rc.codes) Fail("range-codes bytes are not the packing of their codes");
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
  // Out of line: every payload in a frame of its own.
  std::vector<uint32_t> out_of_line;
  starling::net::EncodeFramed(envelope, 0, &again, &out_of_line);
  std::vector<std::string_view> payload_frames;
  for (uint32_t i : out_of_line) payload_frames.push_back(envelope.payloads[i].bytes);
  if (!starling::net::Decode(again.data(), again.size(), payload_frames.data(),
                             payload_frames.size(), limits, &back, &reject)) {
    std::fprintf(stderr, "codec_fuzz: re-decode of frames: %s\n", reject.detail.c_str());
    Fail("re-encoded frames do not decode");
  }
  if (!(back == envelope)) Fail("decode(encode_framed(decode(x))) != decode(x)");
}

void CheckBoth(const char* data, size_t size, const DecodeLimits& limits) {
  CheckOne(data, size, nullptr, 0, limits);
  const std::string_view input(data, size);
  const size_t first = input.find(kFrameSeparator);
  if (first == std::string_view::npos) return;
  std::vector<std::string_view> frames;
  for (size_t at = first; at != std::string_view::npos;) {
    const size_t start = at + kFrameSeparator.size();
    at = input.find(kFrameSeparator, start);
    frames.push_back(input.substr(start, at == std::string_view::npos ? at : at - start));
  }
  CheckOne(data, first, frames.data(), frames.size(), limits);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* bytes = reinterpret_cast<const char*>(data);
  // The daemon's limits for a small run (so that "wrong dimension" and "oversized" paths are
  // reached by short inputs), and the codec's defaults.
  static const DecodeLimits run_limits = starling::net::LimitsForRun(16, 4);
  static const DecodeLimits defaults;
  CheckBoth(bytes, size, run_limits);
  CheckBoth(bytes, size, defaults);
  return 0;
}
