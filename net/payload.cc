#include "net/payload.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace starling::net {

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "net/ sends host doubles as little-endian bytes; port the byte copies for this host."
#endif
static_assert(sizeof(double) == 8 && sizeof(float) == 4, "IEEE-754 binary64/binary32 expected");

namespace {

constexpr uint64_t kExp64 = 0x7ff0000000000000ULL;
constexpr uint32_t kExp32 = 0x7f800000U;

// Non-finite means an all-ones exponent. Adding one exponent unit to the masked exponent carries
// into the sign bit exactly in that case, so OR-ing these sums and testing the top bit checks a
// whole vector with adds and ORs only: that vectorizes with baseline SSE2, which has no 64-bit
// compare.
inline uint64_t NonFiniteBit64(uint64_t bits) { return (bits & kExp64) + (uint64_t{1} << 52); }
inline uint32_t NonFiniteBit32(uint32_t bits) { return (bits & kExp32) + (uint32_t{1} << 23); }
inline bool AnyNonFinite64(uint64_t accumulated) { return (accumulated >> 63) != 0; }
inline bool AnyNonFinite32(uint32_t accumulated) { return (accumulated >> 31) != 0; }

bool Fail(Reject* reject, RejectReason reason, std::string detail) {
  if (reject != nullptr) {
    reject->reason = reason;
    reject->detail = std::move(detail);
  }
  return false;
}

// The float64 loops are the codec's hot path (decode within half of memcpy's throughput,
// docs/results/codec.md). On x86-64 with GCC they are also compiled for AVX-512 and AVX2 and picked
// at load time, which doubles their speed when the data is in cache; elsewhere they are plain code.
// Not under the sanitizers: the ifunc resolvers run during relocation, before the sanitizer
// runtime is initialized, and their instrumentation crashes TSan builds at start-up.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define STARLING_NET_HOT_LOOP __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define STARLING_NET_HOT_LOOP
#endif

// Loops below are branch-free over the whole vector so that the compiler vectorizes them; the
// common case is that everything is finite, so an early exit would buy nothing.
STARLING_NET_HOT_LOOP bool AllFinite64(const char* p, size_t n) {
  uint64_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t u;
    std::memcpy(&u, p + 8 * i, 8);
    bad |= NonFiniteBit64(u);
  }
  return !AnyNonFinite64(bad);
}

// One pass that copies and checks together, so that the data is read once.
STARLING_NET_HOT_LOOP bool CopyFinite64(const char* p, double* out, size_t n) {
  uint64_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t u;
    std::memcpy(&u, p + 8 * i, 8);
    bad |= NonFiniteBit64(u);
    std::memcpy(out + i, &u, 8);
  }
  return !AnyNonFinite64(bad);
}

bool AllFinite32(const char* p, size_t n) {
  uint32_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, p + 4 * i, 4);
    bad |= NonFiniteBit32(u);
  }
  return !AnyNonFinite32(bad);
}

// First non-finite position, for the reject detail only.
size_t FirstNonFinite64(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    double v;
    std::memcpy(&v, p + 8 * i, 8);
    if (!std::isfinite(v)) return i;
  }
  return n;
}

size_t FirstNonFinite32(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    float v;
    std::memcpy(&v, p + 4 * i, 4);
    if (!std::isfinite(v)) return i;
  }
  return n;
}

std::string LengthDetail(const Payload& payload, uint64_t expected) {
  return std::to_string(payload.bytes.size()) + " bytes for " + EncodingName(payload.encoding) +
         " dim " + std::to_string(payload.dim) + ", expected " + std::to_string(expected);
}

bool CheckTopKValues(const Payload& payload, Reject* reject) {
  const char* p = payload.bytes.data();
  const size_t k = payload.bytes.size() / kTopKEntryBytes;
  int64_t previous = -1;
  for (size_t i = 0; i < k; ++i, p += kTopKEntryBytes) {
    uint32_t index;
    double value;
    std::memcpy(&index, p, 4);
    std::memcpy(&value, p + 4, 8);
    if (static_cast<int64_t>(index) <= previous || index >= payload.dim) {
      return Fail(reject, RejectReason::kBadSparse,
                  "top-k entry " + std::to_string(i) + " has index " + std::to_string(index) +
                      (index >= payload.dim ? " >= dim " + std::to_string(payload.dim)
                                            : " after index " + std::to_string(previous)));
    }
    if (!std::isfinite(value)) {
      return Fail(reject, RejectReason::kNonFinite,
                  "top-k entry " + std::to_string(i) + " value is not finite");
    }
    previous = index;
  }
  return true;
}

// Packed codes fill `used` bits of payload.bytes (whose length CheckPayloadShape checked); the
// high bits of the last byte beyond them must be 0, so that one message has one encoding.
bool CheckUnusedBitsZero(const Payload& payload, uint64_t used, Reject* reject) {
  if (used % 8 != 0) {
    const uint8_t last = static_cast<uint8_t>(payload.bytes.back());
    if ((last >> (used % 8)) != 0) {
      return Fail(reject, RejectReason::kBadField,
                  std::string(EncodingName(payload.encoding)) +
                      " codes: the unused bits of the last byte are not 0");
    }
  }
  return true;
}

bool CheckCrossPolytopeCodes(const Payload& payload, Reject* reject) {
  const int bits = CrossPolytopeCodeBits(payload.dim);
  const uint64_t limit = 2 * uint64_t{payload.dim};
  for (uint32_t i = 0; i < payload.modulus; ++i) {
    const uint32_t code = CrossPolytopeCode(payload.bytes, bits, i);
    if (code >= limit) {
      return Fail(reject, RejectReason::kBadSparse,
                  "cross-polytope code " + std::to_string(i) + " is " + std::to_string(code) +
                      " >= 2 dim = " + std::to_string(limit));
    }
  }
  return CheckUnusedBitsZero(payload, uint64_t{payload.modulus} * bits, reject);
}

}  // namespace

int CrossPolytopeCodeBits(uint32_t dim) {
  int index_bits = 0;
  while (index_bits < 32 && (uint64_t{1} << index_bits) < dim) ++index_bits;
  return 1 + index_bits;
}

uint32_t MaxCrossPolytopeSamples(uint32_t dim) { return std::max<uint32_t>(dim, 64); }

uint64_t CrossPolytopeBytes(uint32_t dim, uint32_t samples) {
  return (uint64_t{samples} * CrossPolytopeCodeBits(dim) + 7) / 8;
}

uint32_t CrossPolytopeCode(std::string_view bytes, int bits, size_t i) {
  // Bits [i * bits, (i + 1) * bits), least significant first: at most 33 bits, within 5 bytes.
  const uint64_t first = uint64_t{i} * bits;
  const size_t byte = first / 8;
  const size_t end = std::min(bytes.size(), (first + bits + 7) / 8);
  uint64_t acc = 0;
  for (size_t b = byte; b < end; ++b) {
    acc |= uint64_t{static_cast<uint8_t>(bytes[b])} << (8 * (b - byte));
  }
  return static_cast<uint32_t>((acc >> (first % 8)) & ((uint64_t{1} << bits) - 1));
}

uint64_t RangeCodesBytes(uint32_t dim, uint32_t bits) { return (uint64_t{dim} * bits + 7) / 8; }

int LatticeBits(uint32_t modulus) {
  if (modulus < kMinLatticeModulus || modulus > kMaxLatticeModulus) return 0;
  if ((modulus & (modulus - 1)) != 0) return 0;
  int bits = 0;
  while ((1u << bits) != modulus) ++bits;
  return bits;
}

uint64_t LatticeBytes(uint32_t dim, uint32_t modulus) {
  const int bits = LatticeBits(modulus);
  return (static_cast<uint64_t>(dim) * static_cast<uint64_t>(bits) + 7) / 8;
}

bool CheckPayloadShape(const Payload& payload, Reject* reject) {
  const uint64_t size = payload.bytes.size();
  const uint64_t dim = payload.dim;
  if (!std::isfinite(payload.scale)) {
    return Fail(reject, RejectReason::kNonFinite, "scale is not finite");
  }
  if (payload.encoding != Encoding::kLattice && payload.encoding != Encoding::kCrossPolytope &&
      payload.encoding != Encoding::kRangeCodes && (payload.scale != 0.0 || payload.modulus != 0)) {
    return Fail(reject, RejectReason::kBadField,
                std::string("scale and modulus must be 0 for ") + EncodingName(payload.encoding));
  }
  if ((payload.encoding == Encoding::kFloat64 || payload.encoding == Encoding::kFloat32) &&
      payload.check != 0) {
    return Fail(reject, RejectReason::kBadField,
                std::string("check must be 0 for ") + EncodingName(payload.encoding));
  }
  switch (payload.encoding) {
    case Encoding::kFloat64:
      if (size != 8 * dim)
        return Fail(reject, RejectReason::kBadLength, LengthDetail(payload, 8 * dim));
      return true;
    case Encoding::kFloat32:
      if (size != 4 * dim)
        return Fail(reject, RejectReason::kBadLength, LengthDetail(payload, 4 * dim));
      return true;
    case Encoding::kLattice: {
      if (LatticeBits(payload.modulus) == 0) {
        return Fail(reject, RejectReason::kBadModulus,
                    "lattice modulus " + std::to_string(payload.modulus) +
                        " is not a power of two in [2, 65536]");
      }
      if (payload.scale < 0.0) {
        return Fail(reject, RejectReason::kBadField, "lattice scale is negative");
      }
      const uint64_t expected = LatticeBytes(payload.dim, payload.modulus);
      if (size != expected) {
        return Fail(reject, RejectReason::kBadLength, LengthDetail(payload, expected));
      }
      return true;
    }
    case Encoding::kTopK:
      if (size % kTopKEntryBytes != 0 || size / kTopKEntryBytes > dim) {
        return Fail(reject, RejectReason::kBadLength,
                    std::to_string(size) + " bytes for topk dim " + std::to_string(dim) +
                        ", expected a multiple of 12 of at most " +
                        std::to_string(kTopKEntryBytes * dim));
      }
      return true;
    case Encoding::kCrossPolytope: {
      // Codes of dim <= 2^30 fit 32 bits (2 dim <= 2^31), as the quantizer's do.
      if (dim == 0 || dim > (uint64_t{1} << 30)) {
        return Fail(reject, RejectReason::kBadField,
                    "cross-polytope dim " + std::to_string(dim) + " outside [1, 2^30]");
      }
      if (payload.scale < 0.0) {
        return Fail(reject, RejectReason::kBadField, "cross-polytope norm is negative");
      }
      if (payload.modulus < 1 || payload.modulus > MaxCrossPolytopeSamples(payload.dim)) {
        return Fail(reject, RejectReason::kBadField,
                    "cross-polytope samples " + std::to_string(payload.modulus) +
                        " outside [1, " + std::to_string(MaxCrossPolytopeSamples(payload.dim)) +
                        "]");
      }
      const uint64_t expected = CrossPolytopeBytes(payload.dim, payload.modulus);
      if (size != expected) {
        return Fail(reject, RejectReason::kBadLength, LengthDetail(payload, expected));
      }
      return true;
    }
    case Encoding::kRangeCodes: {
      if (dim == 0 || dim > kMaxRangeCodesDim) {
        return Fail(reject, RejectReason::kBadField,
                    "range-codes dim " + std::to_string(dim) + " outside [1, 2^30]");
      }
      if (payload.scale < 0.0) {
        return Fail(reject, RejectReason::kBadField, "range-codes range is negative");
      }
      if (payload.modulus < 1 || payload.modulus > kMaxRangeCodeBits) {
        return Fail(reject, RejectReason::kBadField,
                    "range-codes bits " + std::to_string(payload.modulus) + " outside [1, " +
                        std::to_string(kMaxRangeCodeBits) + "]");
      }
      if (payload.check != 0) {
        return Fail(reject, RejectReason::kBadField, "check must be 0 for range-codes");
      }
      const uint64_t expected = RangeCodesBytes(payload.dim, payload.modulus);
      if (size != expected) {
        return Fail(reject, RejectReason::kBadLength, LengthDetail(payload, expected));
      }
      return true;
    }
  }
  return Fail(reject, RejectReason::kBadEncoding,
              "unknown encoding " + std::to_string(static_cast<int>(payload.encoding)));
}

bool CheckPayloadValues(const Payload& payload, Reject* reject) {
  const char* p = payload.bytes.data();
  switch (payload.encoding) {
    case Encoding::kFloat64: {
      const size_t n = payload.bytes.size() / 8;
      if (!AllFinite64(p, n)) {
        return Fail(reject, RejectReason::kNonFinite,
                    "float64 entry " + std::to_string(FirstNonFinite64(p, n)) + " is not finite");
      }
      return true;
    }
    case Encoding::kFloat32: {
      const size_t n = payload.bytes.size() / 4;
      if (!AllFinite32(p, n)) {
        return Fail(reject, RejectReason::kNonFinite,
                    "float32 entry " + std::to_string(FirstNonFinite32(p, n)) + " is not finite");
      }
      return true;
    }
    case Encoding::kLattice:
      return true;
    case Encoding::kTopK:
      return CheckTopKValues(payload, reject);
    case Encoding::kCrossPolytope:
      return CheckCrossPolytopeCodes(payload, reject);
    case Encoding::kRangeCodes:
      // Every R-bit code is a cell of the quantizer (< 2^R); only the padding can be wrong.
      return CheckUnusedBitsZero(payload, uint64_t{payload.dim} * payload.modulus, reject);
  }
  return Fail(reject, RejectReason::kBadEncoding,
              "unknown encoding " + std::to_string(static_cast<int>(payload.encoding)));
}

bool CheckPayload(const Payload& payload, Reject* reject) {
  return CheckPayloadShape(payload, reject) && CheckPayloadValues(payload, reject);
}

Payload Float64Payload(const double* x, uint32_t dim) {
  Payload payload;
  payload.encoding = Encoding::kFloat64;
  payload.dim = dim;
  payload.bytes = std::string_view(reinterpret_cast<const char*>(x), 8 * size_t{dim});
  return payload;
}

Payload Float32Payload(const double* x, uint32_t dim, std::string* storage) {
  storage->resize(4 * size_t{dim});
  char* out = storage->data();
  for (uint32_t i = 0; i < dim; ++i) {
    double v = x[i];
    if (std::isfinite(v)) v = std::clamp(v, -double{FLT_MAX}, double{FLT_MAX});
    const float f = static_cast<float>(v);
    std::memcpy(out + 4 * size_t{i}, &f, 4);
  }
  Payload payload;
  payload.encoding = Encoding::kFloat32;
  payload.dim = dim;
  payload.bytes = *storage;
  return payload;
}

Payload LatticePayload(uint32_t dim, double scale, uint32_t modulus, std::string_view codes,
                       uint64_t check) {
  Payload payload;
  payload.encoding = Encoding::kLattice;
  payload.dim = dim;
  payload.scale = scale;
  payload.modulus = modulus;
  payload.check = check;
  payload.bytes = codes;
  return payload;
}

Payload CrossPolytopePayload(uint32_t dim, double norm, uint32_t samples, std::string_view codes,
                             uint64_t check) {
  Payload payload;
  payload.encoding = Encoding::kCrossPolytope;
  payload.dim = dim;
  payload.scale = norm;
  payload.modulus = samples;
  payload.check = check;
  payload.bytes = codes;
  return payload;
}

Payload RangeCodesPayload(uint32_t dim, double range, uint32_t bits, std::string_view codes) {
  Payload payload;
  payload.encoding = Encoding::kRangeCodes;
  payload.dim = dim;
  payload.scale = range;
  payload.modulus = bits;
  payload.bytes = codes;
  return payload;
}

Payload TopKPayload(uint32_t dim, const std::vector<uint32_t>& indices,
                    const std::vector<double>& values, std::string* storage) {
  if (indices.size() != values.size()) {
    throw std::invalid_argument("TopKPayload: indices and values differ in length");
  }
  storage->resize(kTopKEntryBytes * indices.size());
  char* out = storage->data();
  for (size_t i = 0; i < indices.size(); ++i, out += kTopKEntryBytes) {
    if (indices[i] >= dim || (i > 0 && indices[i] <= indices[i - 1])) {
      throw std::invalid_argument("TopKPayload: indices must be strictly increasing and < dim");
    }
    std::memcpy(out, &indices[i], 4);
    std::memcpy(out + 4, &values[i], 8);
  }
  Payload payload;
  payload.encoding = Encoding::kTopK;
  payload.dim = dim;
  payload.bytes = *storage;
  return payload;
}

bool PayloadToDoubles(const Payload& payload, double* out, size_t out_size, Reject* reject) {
  if (payload.encoding != Encoding::kFloat64 && payload.encoding != Encoding::kFloat32) {
    return Fail(reject, RejectReason::kBadEncoding,
                std::string("cannot read ") + EncodingName(payload.encoding) +
                    " payload as doubles; it needs its compressor");
  }
  if (!CheckPayloadShape(payload, reject)) return false;
  if (out_size != payload.dim) {
    return Fail(reject, RejectReason::kWrongDimension,
                "payload dim " + std::to_string(payload.dim) + ", destination holds " +
                    std::to_string(out_size));
  }
  const char* p = payload.bytes.data();
  const size_t n = payload.dim;
  if (payload.encoding == Encoding::kFloat64) {
    if (!CopyFinite64(p, out, n)) {
      return Fail(reject, RejectReason::kNonFinite,
                  "float64 entry " + std::to_string(FirstNonFinite64(p, n)) + " is not finite");
    }
    return true;
  }
  uint32_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, p + 4 * i, 4);
    bad |= NonFiniteBit32(u);
    float f;
    std::memcpy(&f, &u, 4);
    out[i] = static_cast<double>(f);
  }
  if (AnyNonFinite32(bad)) {
    return Fail(reject, RejectReason::kNonFinite,
                "float32 entry " + std::to_string(FirstNonFinite32(p, n)) + " is not finite");
  }
  return true;
}

const double* ReadDoubles(const Payload& payload, size_t dim, std::vector<double>* scratch,
                          Reject* reject) {
  const char* p = payload.bytes.data();
  const bool in_place = payload.encoding == Encoding::kFloat64 &&
                        reinterpret_cast<uintptr_t>(p) % alignof(double) == 0;
  if (!in_place) {
    // dim is the caller's (trusted) size: sizing scratch to it first is safe, and
    // PayloadToDoubles checks encoding, shape and dimension before it writes.
    scratch->resize(dim);
    return PayloadToDoubles(payload, scratch->data(), dim, reject) ? scratch->data() : nullptr;
  }
  if (!CheckPayloadShape(payload, reject)) return nullptr;
  if (payload.dim != dim) {
    Fail(reject, RejectReason::kWrongDimension,
         "payload dim " + std::to_string(payload.dim) + ", destination holds " +
             std::to_string(dim));
    return nullptr;
  }
  if (!AllFinite64(p, dim)) {
    Fail(reject, RejectReason::kNonFinite,
         "float64 entry " + std::to_string(FirstNonFinite64(p, dim)) + " is not finite");
    return nullptr;
  }
  // The bytes are a little-endian binary64 array (checked at compile time above) in storage
  // without a declared type (a ZeroMQ frame), aligned for double: readable as doubles.
  return reinterpret_cast<const double*>(p);
}

bool PayloadToDoubles(const Payload& payload, std::vector<double>* out, Reject* reject) {
  // Check before resizing so that a hostile dim cannot make us allocate: a payload that passes
  // the shape check has dim entries actually present in its bytes.
  if (payload.encoding != Encoding::kFloat64 && payload.encoding != Encoding::kFloat32) {
    return PayloadToDoubles(payload, nullptr, 0, reject);
  }
  if (!CheckPayloadShape(payload, reject)) return false;
  out->resize(payload.dim);
  return PayloadToDoubles(payload, out->data(), out->size(), reject);
}

bool UnpackTopK(const Payload& payload, std::vector<uint32_t>* indices, std::vector<double>* values,
                Reject* reject) {
  if (payload.encoding != Encoding::kTopK) {
    return Fail(reject, RejectReason::kBadEncoding,
                std::string("expected a topk payload, got ") + EncodingName(payload.encoding));
  }
  if (!CheckPayload(payload, reject)) return false;
  const size_t k = payload.bytes.size() / kTopKEntryBytes;
  indices->resize(k);
  values->resize(k);
  const char* p = payload.bytes.data();
  for (size_t i = 0; i < k; ++i, p += kTopKEntryBytes) {
    std::memcpy(&(*indices)[i], p, 4);
    std::memcpy(&(*values)[i], p + 4, 8);
  }
  return true;
}

}  // namespace starling::net
