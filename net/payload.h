// Byte rules of payload vectors (see Encoding in envelope.h), their checks, and conversions
// between payloads and plain arrays.
//
// The codec only carries and validates bytes. Lattice codes are produced and interpreted by the
// compressor in algorithms/; here only their length and parameters are checked. All functions
// are thread-compatible (no shared state) and never throw unless stated otherwise. The wire is
// little-endian; this code assumes a little-endian host (checked at compile time) so that
// float64 payloads are a plain copy of the doubles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "net/envelope.h"
#include "net/reject.h"

namespace starling::net {

inline constexpr uint32_t kMinLatticeModulus = 2;
inline constexpr uint32_t kMaxLatticeModulus = 1u << 16;
inline constexpr size_t kTopKEntryBytes = 12;  // uint32 index + binary64 value

// Bits per lattice code, log2(modulus); 0 if modulus is not a power of two in [2, 2^16].
int LatticeBits(uint32_t modulus);
// ceil(dim * LatticeBits(modulus) / 8); 0 for an invalid modulus.
uint64_t LatticeBytes(uint32_t dim, uint32_t modulus);

// Cross-polytope payloads (Encoding::kCrossPolytope, envelope.h): bits per code, 1 +
// ceil(log2 dim) (dim >= 1); the largest S a payload of dimension dim may carry; its byte count.
int CrossPolytopeCodeBits(uint32_t dim);
uint32_t MaxCrossPolytopeSamples(uint32_t dim);
uint64_t CrossPolytopeBytes(uint32_t dim, uint32_t samples);
// Code i (< samples) of packed cross-polytope codes of `bits` bits each (also range codes':
// bits <= 32, the same layout); the caller has checked that bytes holds them (CheckPayloadShape).
uint32_t CrossPolytopeCode(std::string_view bytes, int bits, size_t i);

// Range-coded payloads (Encoding::kRangeCodes, envelope.h): bits per code in [1, 30], dim in
// [1, 2^30]; the byte count ceil(dim * bits / 8). A code is read with CrossPolytopeCode's
// bit reader (the same LSB-first layout), RangeCodesView::code in payload_view.h.
inline constexpr uint32_t kMaxRangeCodeBits = 30;
inline constexpr uint64_t kMaxRangeCodesDim = uint64_t{1} << 30;
uint64_t RangeCodesBytes(uint32_t dim, uint32_t bits);

// O(1) checks: known encoding; scale finite (and >= 0 for kLattice, kCrossPolytope and
// kRangeCodes, 0 otherwise); modulus valid for kLattice, a sample count in [1,
// MaxCrossPolytopeSamples(dim)] for kCrossPolytope (whose dim must be >= 1), bits in [1, 30] for
// kRangeCodes (dim in [1, 2^30], check 0), 0 otherwise; byte length consistent with encoding and
// dim (kTopK: a whole number of entries, at most dim of them). On failure returns false and, if
// reject is non-null, fills it (detail names the field; no index prefix).
bool CheckPayloadShape(const Payload& payload, Reject* reject);
// O(bytes) checks, assuming CheckPayloadShape passed: every float64/float32/top-k value finite
// (kNonFinite); top-k indices strictly increasing and < dim (kBadSparse); cross-polytope codes
// < 2 dim (kBadSparse) and the unused bits of their last byte 0 (kBadField), as for range codes
// (whose every R-bit code is valid). Lattice codes are not inspected: every code of the right
// width is valid.
bool CheckPayloadValues(const Payload& payload, Reject* reject);
// Both of the above.
bool CheckPayload(const Payload& payload, Reject* reject);

// --- Building payloads to send. The returned payload views memory owned by the caller, which
// must stay alive and unchanged until the envelope is encoded.

// Views x[0..dim) as a float64 payload: no copy.
Payload Float64Payload(const double* x, uint32_t dim);
// Rounds x[0..dim) to binary32 into *storage (replacing its contents) and views it. Finite values
// beyond the float range saturate to +-FLT_MAX so that the message is not rejected; NaN and Inf
// stay as they are (and the receiver rejects them).
Payload Float32Payload(const double* x, uint32_t dim, std::string* storage);
// Views already packed lattice codes (produced by the compressor), with its side information.
Payload LatticePayload(uint32_t dim, double scale, uint32_t modulus, std::string_view codes,
                       uint64_t check = 0);
// Views already packed cross-polytope codes (S = samples of them, packed as envelope.h says)
// with the norm ||g|| of the quantized vector.
Payload CrossPolytopePayload(uint32_t dim, double norm, uint32_t samples, std::string_view codes,
                             uint64_t check = 0);
// Views already packed range codes (dim codes of `bits` bits, envelope.h) with their range r.
Payload RangeCodesPayload(uint32_t dim, double range, uint32_t bits, std::string_view codes);
// Packs k = indices.size() entries into *storage (replacing its contents) and views it. indices
// must be strictly increasing and < dim, values.size() == indices.size(); violations throw
// std::invalid_argument (a local bug, never network input).
Payload TopKPayload(uint32_t dim, const std::vector<uint32_t>& indices,
                    const std::vector<double>& values, std::string* storage);

// --- Reading received payloads. These re-check what they read, so they are safe on any payload.

// Writes the dim values of a kFloat64 or kFloat32 payload to out[0..out_size); out_size must equal
// payload.dim. Rejects other encodings (kBadEncoding), an inconsistent length (kBadLength), a size
// mismatch (kWrongDimension) and NaN/Inf (kNonFinite); on failure out's contents are unspecified.
bool PayloadToDoubles(const Payload& payload, double* out, size_t out_size, Reject* reject);
// The same checks, but without a copy where possible: returns the dim values of a kFloat64
// payload in place when its bytes are 8-byte aligned (as a payload received out of line, in a
// frame of its own, is), after one read-only pass over them for NaN/Inf; otherwise (unaligned
// bytes, kFloat32) converts them into *scratch (resized to dim) and returns scratch->data().
// Returns nullptr and fills *reject on failure. The pointer is valid while the payload's bytes
// (and *scratch) are, e.g. for Eigen::Map<const Eigen::VectorXd>(p, dim) in the handler.
const double* ReadDoubles(const Payload& payload, size_t dim, std::vector<double>* scratch,
                          Reject* reject);
// As PayloadToDoubles above, into a vector resized to payload.dim.
bool PayloadToDoubles(const Payload& payload, std::vector<double>* out, Reject* reject);
// Unpacks a kTopK payload into parallel arrays (resized to k). Same checks as CheckPayload.
bool UnpackTopK(const Payload& payload, std::vector<uint32_t>* indices, std::vector<double>* values,
                Reject* reject);

}  // namespace starling::net
