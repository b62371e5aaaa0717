// The direction a live inference projects each node's model on (starling-probe infer --live): one
// number per sample from a model of any dimension. `starling-probe infer --live` and `starling-sim
// --infer-live` both draw it here, so that for one seed they project on the same direction.
#pragma once

#include <Eigen/Dense>
#include <cstdint>

namespace starling::topology {

// `dim` i.i.d. standard normal coordinates: Box-Muller on 53-bit uniforms of mt19937_64(seed),
// the same numbers on every platform (no std::normal_distribution, whose algorithm the standard
// leaves open).
Eigen::VectorXd ProjectionDirection(Eigen::Index dim, uint64_t seed);

}  // namespace starling::topology
