#include "topology/projection.h"

#include <cmath>
#include <random>

namespace starling::topology {

Eigen::VectorXd ProjectionDirection(Eigen::Index dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  // In (0, 1]: log(u) is finite.
  const auto uniform = [&] { return (static_cast<double>(rng() >> 11) + 1.0) * 0x1.0p-53; };
  Eigen::VectorXd direction(dim);
  for (Eigen::Index c = 0; c < dim; ++c) {
    direction[c] = std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform());
  }
  return direction;
}

}  // namespace starling::topology
