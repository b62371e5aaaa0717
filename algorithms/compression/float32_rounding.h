// --compression f32: SwarmSGD's exchanges send the model rounded to binary32. The algorithm
// rounds the vector it sends itself (every value exactly a float), so that the wire's float32
// payload (net::Float32Payload, which clamps and rounds the same way) carries it without loss and
// a daemon's merges use the very values the simulator's do.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>

namespace starling::algorithms {

// out[i] = x[i] rounded to the nearest float (ties to even), finite values beyond the float
// range saturated to +-FLT_MAX as net::Float32Payload does; NaN and Inf stay so (the receiver's
// checked merge refuses them). out may alias x.
inline void RoundToFloat32(const double* x, size_t n, double* out) {
  for (size_t i = 0; i < n; ++i) {
    double v = x[i];
    if (std::isfinite(v)) v = std::clamp(v, -double{FLT_MAX}, double{FLT_MAX});
    out[i] = static_cast<double>(static_cast<float>(v));
  }
}

}  // namespace starling::algorithms
