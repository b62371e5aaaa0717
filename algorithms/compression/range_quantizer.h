// The uniform R-bit quantizer on a known range [-r, r] (the DQ paper's quantizer,
// arXiv:2002.02508), deterministic so that both ends of a channel compute the same point:
//   delta = 2 r / 2^R,  k = clamp(floor((v + r) / delta), 0, 2^R - 1),  Q(v) = -r + delta (k + 1/2)
// per coordinate. Inside the range |Q(v) - v| <= delta / 2 = r 2^-R; a coordinate outside it
// saturates (it is clamped to the extreme cell) and is counted, so a too-small range is
// detectable. The code k takes R bits on the wire.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/types.h"

namespace starling::algorithms {

class RangeQuantizer {
 public:
  // `bits` in [1, 30]; throws std::invalid_argument otherwise.
  explicit RangeQuantizer(int bits);

  int bits() const { return bits_; }
  // Q(v) with range r > 0 into *out; returns how many coordinates had |v_k| > r (saturated).
  // Equal to Encode then Decode, bit for bit.
  int Quantize(const Vec& v, double range, Vec* out) const;
  // The cells k of v's coordinates (each < 2^bits, what the wire carries) into *codes, resized
  // to v.size(); returns the saturated count as Quantize does. Throws as Quantize does.
  int Encode(const Vec& v, double range, std::vector<uint32_t>* codes) const;
  // Q's points -r + delta (k + 1/2) of n cells into out[0..n), with range r > 0 (finite) and
  // every code < 2^bits (the caller's contract: codes from Encode or from a checked payload).
  void Decode(const uint32_t* codes, Eigen::Index n, double range, double* out) const;

 private:
  int bits_;
  double levels_;  // 2^bits
};

}  // namespace starling::algorithms
