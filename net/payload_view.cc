#include "net/payload_view.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "net/payload.h"

namespace starling::net {

namespace {

// The shape check of every payload, then the receiver's dimension.
bool CheckShapeAndDim(const Payload& payload, uint32_t dim, Reject* reject) {
  if (!CheckPayloadShape(payload, reject)) return false;
  if (payload.dim == dim) return true;
  reject->reason = RejectReason::kWrongDimension;
  reject->detail =
      "payload dim " + std::to_string(payload.dim) + ", expected " + std::to_string(dim);
  return false;
}

}  // namespace

size_t SparseView::size() const { return entries.size() / kTopKEntryBytes; }

uint32_t SparseView::index(size_t i) const {
  uint32_t index;
  std::memcpy(&index, entries.data() + i * kTopKEntryBytes, 4);
  return index;
}

double SparseView::value(size_t i) const {
  double value;
  std::memcpy(&value, entries.data() + i * kTopKEntryBytes + 4, 8);
  return value;
}

void SparseView::ScatterInto(double* out) const {
  std::memset(out, 0, sizeof(double) * dim);
  for (size_t i = 0; i < size(); ++i) out[index(i)] = value(i);
}

uint32_t CrossPolytopeView::code(size_t i) const { return CrossPolytopeCode(codes, bits, i); }
uint32_t RangeCodesView::code(size_t i) const { return CrossPolytopeCode(codes, bits, i); }

std::optional<PayloadView> PayloadReader::Read(const Payload& payload, uint32_t dim, Reject* reject,
                                               double* dense_into) {
  if (!CheckShapeAndDim(payload, dim, reject)) return std::nullopt;
  switch (payload.encoding) {
    case Encoding::kFloat64:
    case Encoding::kFloat32: {
      // The one scan for NaN/Inf, with the copy when there is one.
      if (dense_into != nullptr) {
        if (!PayloadToDoubles(payload, dense_into, dim, reject)) return std::nullopt;
        return DenseView{dense_into, dim};
      }
      const double* values = ReadDoubles(payload, dim, &scratch_, reject);
      if (values == nullptr) return std::nullopt;
      return DenseView{values, dim};
    }
    case Encoding::kLattice:
      return LatticeView{dim,           LatticeBits(payload.modulus),
                         payload.scale, payload.modulus,
                         payload.check, payload.bytes};
    case Encoding::kTopK:
      if (!CheckPayloadValues(payload, reject)) return std::nullopt;
      return SparseView{dim, payload.check, payload.bytes};
    case Encoding::kCrossPolytope:
      if (!CheckPayloadValues(payload, reject)) return std::nullopt;
      return CrossPolytopeView{dim,           payload.modulus, CrossPolytopeCodeBits(dim),
                               payload.scale, payload.check,   payload.bytes};
    case Encoding::kRangeCodes:
      if (!CheckPayloadValues(payload, reject)) return std::nullopt;
      return RangeCodesView{dim, static_cast<int>(payload.modulus), payload.scale, payload.bytes};
  }
  // CheckPayloadShape refuses unknown encodings.
  return std::nullopt;
}

std::optional<UncheckedDenseView> PayloadReader::ReadDenseUnchecked(const Payload& payload,
                                                                   uint32_t dim, Reject* reject) {
  if (payload.encoding != Encoding::kFloat64 && payload.encoding != Encoding::kFloat32) {
    reject->reason = RejectReason::kBadEncoding;
    reject->detail = std::string("a ") + EncodingName(payload.encoding) +
                     " payload where a float64 or float32 vector is expected";
    return std::nullopt;
  }
  if (!CheckShapeAndDim(payload, dim, reject)) return std::nullopt;
  // The shape check established that the bytes hold exactly dim values of the encoding.
  const char* p = payload.bytes.data();
  if (payload.encoding == Encoding::kFloat64) {
    if (reinterpret_cast<uintptr_t>(p) % alignof(double) == 0) {
      // A little-endian binary64 array (payload.cc checks the host at compile time), aligned,
      // in storage without a declared type (a ZeroMQ frame): readable as doubles.
      return UncheckedDenseView{reinterpret_cast<const double*>(p), dim};
    }
    scratch_.resize(dim);
    std::memcpy(scratch_.data(), p, sizeof(double) * dim);
    return UncheckedDenseView{scratch_.data(), dim};
  }
  scratch_.resize(dim);
  for (size_t i = 0; i < dim; ++i) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    scratch_[i] = static_cast<double>(f);  // NaN and Inf stay so, for the consumer to refuse
  }
  return UncheckedDenseView{scratch_.data(), dim};
}

}  // namespace starling::net
