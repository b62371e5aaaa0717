#include "algorithms/pairwise/checked_merge.h"

#include <cmath>

namespace starling::algorithms {

bool AddScaledDifferenceIfFinite(const double* x, const double* s, const double* t, double c,
                                 double* out, size_t n) {
  return MapIfFinite(s, out, n, [x, t, c](double v, size_t i) { return x[i] + c * (v - t[i]); });
}

size_t FirstNonFinite(const double* s, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(s[i])) return i;
  }
  return n;
}

}  // namespace starling::algorithms
