// The check for NaN/Inf fused into a merge's own pass over a received vector (issue 20; README
// "Error policy": a merge refuses a non-finite vector as a whole).
//
// The transport does not scan the float values of an exchange's vector any more
// (net/payload_view.h, PayloadReader::ReadDenseUnchecked): the algorithm reads every value of it
// in its merge anyway, so the check costs no extra pass there. The merge writes its result into
// a second buffer and commits (swaps it in) only when every received value was finite, so that a
// bad vector leaves the model untouched. Pure functions, thread-compatible, never throw.
#pragma once

#include <cstddef>

namespace starling::algorithms {

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
