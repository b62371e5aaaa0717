// The check for NaN/Inf fused into a merge's own pass over a received vector (the error policy,
// docs/explanations/architecture.md: a merge refuses a non-finite vector as a whole).
//
// The transport does not scan the float values of an exchange's vector any more
// (net/payload_view.h, PayloadReader::ReadDenseUnchecked): the algorithm reads every value of it
// in its merge anyway, so the check costs no extra pass there. The merge writes its result into
// a second buffer and commits (swaps it in) only when every received value was finite, so that a
// bad vector leaves the model untouched. Pure functions, thread-compatible, never throw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace starling::algorithms {

// out[i] = f(s[i], i) for i < n, in one pass that also checks every s[i] for NaN/Inf. Returns
// true if every s[i] was finite; out is written either way (f's result for element i is stored
// after f has read what it needs, so out may alias f's other inputs, not s). Branch-free over the
// whole vector so that the compiler vectorizes it: the exponent bits of each received value are
// OR-ed into a word whose top bit becomes 1 iff some exponent was all ones (NaN or Inf), as
// net/payload.cc's scan does. The common case is a finite vector, so an early exit would buy
// nothing. The merges' kernels below and in the methods (async_admm.cc) are this with their
// arithmetic.
template <class F>
bool MapIfFinite(const double* s, double* out, size_t n, F f) {
  constexpr uint64_t kExponent = 0x7ff0000000000000ull;
  uint64_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const double v = s[i];
    uint64_t u;
    std::memcpy(&u, &v, sizeof u);
    bad |= (u & kExponent) + (uint64_t{1} << 52);
    out[i] = f(v, i);
  }
  return (bad >> 63) == 0;
}

// out[i] = x[i] + c * (s[i] - t[i]) for i < n, computed exactly as Eigen computes
// x + c * (s - t) (the same IEEE operations in the same order, no contraction), in one pass that
// also checks s. Returns true if every s[i] was finite; out is written either way. out may alias
// x or t (element i is read before it is written), not s.
bool AddScaledDifferenceIfFinite(const double* x, const double* s, const double* t, double c,
                                 double* out, size_t n);

// The index of the first non-finite s[i], or n if there is none (for the reject's detail: only
// called once a vector was refused).
size_t FirstNonFinite(const double* s, size_t n);

}  // namespace starling::algorithms
