// A received payload, checked and typed: the one way the node layer reads a vector that came
// over the network (one path for a received vector).
//
// Decode (codec.h) has checked each payload's structure: encoding, byte length against dim, the
// lattice modulus and scale, top-k entries. The transport defers the scan of float values to the
// reader, so that a received vector is read once. PayloadReader::Read does what is
// left, once per payload: the dimension the caller expects, the deferred NaN/Inf scan, and hands
// up one of five views. The node layer then only chooses what to do with it (merge a dense
// snapshot, decode lattice, cross-polytope or range codes with its compressor, scatter sparse
// entries); it never calls the byte-level helpers of payload.h itself.
//
// Views do not own bytes. A view points at one of three places: the received message (a float64
// payload read in place, lattice codes, sparse entries: valid while the envelope's bytes are,
// i.e. during the transport's handler call), the caller's `dense_into` buffer, or the reader's
// scratch (a converted dense payload: valid until the reader's next Read). Only Read makes
// views: their invariants (dim, index order and range, finite values) hold because it checked
// them, and SparseView::ScatterInto relies on them. Never throws; every failure fills *reject,
// which must not be null.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>
#include <vector>

#include "net/envelope.h"
#include "net/reject.h"

namespace starling::net {

// dim finite doubles: a float64 payload viewed in place (aligned, out of line) or converted (a
// float32 or unaligned payload).
struct DenseView {
  const double* values = nullptr;
  uint32_t dim = 0;
};

// dim doubles that passed every check of a dense payload except the scan for NaN/Inf: what a
// consumer that checks finiteness in its own pass over the values gets
// (PayloadReader::ReadDenseUnchecked). A distinct type, so that no code takes it for a DenseView,
// whose values are known finite.
struct UncheckedDenseView {
  const double* values = nullptr;
  uint32_t dim = 0;
};

// dim codes of `bits` bits each, packed as the compressor packed them; interpreting them is the
// compressor's job (algorithms/compression/).
struct LatticeView {
  uint32_t dim = 0;
  int bits = 0;  // log2(modulus), the width a code is unpacked with
  double scale = 0.0;
  uint32_t modulus = 0;
  uint64_t check = 0;
  std::string_view codes;
};

// vqSGD's cross-polytope message (Encoding::kCrossPolytope): `samples` codes, each < 2 dim, of
// `bits` bits, and the norm of the quantized vector (finite, >= 0). Decoding is the
// compressor's job (algorithms/compression/cross_polytope_quantizer.h).
struct CrossPolytopeView {
  uint32_t dim = 0;
  uint32_t samples = 0;
  int bits = 0;
  double norm = 0.0;
  uint64_t check = 0;
  std::string_view codes;  // ceil(samples * bits / 8) bytes, unused bits 0

  // Code i < samples.
  uint32_t code(size_t i) const;
};

// The quantized gossip's message (Encoding::kRangeCodes): dim codes of `bits` bits (each < 2^bits)
// on the range [-range, range] (finite, >= 0). Decoding is the quantizer's job
// (algorithms/round/quantized_gossip.h).
struct RangeCodesView {
  uint32_t dim = 0;
  int bits = 0;
  double range = 0.0;
  std::string_view codes;  // ceil(dim * bits / 8) bytes, unused bits 0

  // Code i < dim.
  uint32_t code(size_t i) const;
};

// k <= dim (index, value) entries, indices strictly increasing and < dim, values finite.
struct SparseView {
  uint32_t dim = 0;
  uint64_t check = 0;
  std::string_view entries;  // k entries of kTopKEntryBytes (payload.h): uint32 index, binary64

  size_t size() const;
  uint32_t index(size_t i) const;
  double value(size_t i) const;
  // Writes the dense vector: zeros, then the entries, into out[0..dim).
  void ScatterInto(double* out) const;
};

using PayloadView =
    std::variant<DenseView, LatticeView, SparseView, CrossPolytopeView, RangeCodesView>;

// Thread-compatible: one reader per receiving loop.
class PayloadReader {
 public:
  // Checks `payload` (structure again, O(1); its dim against `dim`; float values, and top-k
  // entries, cross-polytope and range codes' padding, which Decode also checked: k and S are small,
  // and a range-coded payload's check reads one byte) and returns its view. A dense payload goes to
  // `dense_into[0..dim)` when that is given (one pass that copies and checks), else it is viewed
  // in place when it is aligned float64 (no copy), else converted into this reader's scratch
  // (valid until the next Read). On a reject, dense_into[0..dim) may have been written.
  std::optional<PayloadView> Read(const Payload& payload, uint32_t dim, Reject* reject,
                                  double* dense_into = nullptr);
  // For a message kind whose consumer checks finiteness in its merge, in the same pass that
  // reads the values (the pairwise exchanges of a run without --compression,
  // node/drivers/exchange_wire.h): every check Read makes of a float64 or float32 payload (shape,
  // byte length, dim against `dim`) except the NaN/Inf scan, which is the consumer's duty. Other
  // encodings are refused (kBadEncoding). Viewed in place when aligned float64, else converted
  // into this reader's scratch (valid until the next read). Never throws; failures fill *reject.
  std::optional<UncheckedDenseView> ReadDenseUnchecked(const Payload& payload, uint32_t dim,
                                                       Reject* reject);

 private:
  std::vector<double> scratch_;
};

}  // namespace starling::net
