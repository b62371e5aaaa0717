#include "algorithms/pairwise/checked_merge.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace starling::algorithms {
namespace {

constexpr uint64_t kExponent = 0x7ff0000000000000ull;

}  // namespace

// Branch-free over the whole vector so that the compiler vectorizes it: the exponent bits of
// each received value are OR-ed into a word whose top bit becomes 1 iff some exponent was all
// ones (NaN or Inf), as net/payload.cc's scan does. The common case is a finite vector, so an
// early exit would buy nothing.
bool AddScaledDifferenceIfFinite(const double* x, const double* s, const double* t, double c,
                                 double* out, size_t n) {
  uint64_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const double v = s[i];
    uint64_t u;
    std::memcpy(&u, &v, sizeof u);
    bad |= (u & kExponent) + (uint64_t{1} << 52);
    out[i] = x[i] + c * (v - t[i]);
  }
  return (bad >> 63) == 0;
}

size_t FirstNonFinite(const double* s, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(s[i])) return i;
  }
  return n;
}

}  // namespace starling::algorithms
