#include "algorithms/compression/range_quantizer.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace starling::algorithms {

RangeQuantizer::RangeQuantizer(int bits) : bits_(bits), levels_(std::ldexp(1.0, bits)) {
  if (bits < 1 || bits > 30) {
    throw std::invalid_argument("RangeQuantizer: bits must be in [1, 30], got " +
                                std::to_string(bits));
  }
}

int RangeQuantizer::Quantize(const Vec& v, double range, Vec* out) const {
  std::vector<uint32_t> codes;
  const int saturated = Encode(v, range, &codes);
  out->resize(v.size());
  Decode(codes.data(), v.size(), range, out->data());
  return saturated;
}

int RangeQuantizer::Encode(const Vec& v, double range, std::vector<uint32_t>* codes) const {
  if (!(range > 0.0) || !std::isfinite(range)) {
    throw std::invalid_argument("RangeQuantizer: the range must be positive and finite");
  }
  const double delta = 2.0 * range / levels_;
  codes->resize(v.size());
  int saturated = 0;
  for (Eigen::Index k = 0; k < v.size(); ++k) {
    if (!(std::abs(v[k]) <= range)) ++saturated;  // NaN counts as saturated too
    double cell = std::floor((v[k] + range) / delta);
    if (!(cell >= 0.0)) cell = 0.0;
    if (cell > levels_ - 1.0) cell = levels_ - 1.0;
    (*codes)[k] = static_cast<uint32_t>(cell);  // exact: an integer in [0, 2^30)
  }
  return saturated;
}

void RangeQuantizer::Decode(const uint32_t* codes, Eigen::Index n, double range,
                            double* out) const {
  // The same delta as Encode's, so that Quantize's points are unchanged.
  const double delta = 2.0 * range / levels_;
  for (Eigen::Index k = 0; k < n; ++k) out[k] = -range + delta * (codes[k] + 0.5);
}

}  // namespace starling::algorithms
