// Parameters of the noisy linear diffusion (algorithms/round/diffusion.h), apart so that the
// simulator's inference runs and the tests can use them without including the algorithm.
#pragma once

namespace starling::algorithms {

struct DiffusionParams {
  double rho = 0.75;
  double c = 0.9;
  double sigma = 1.0;
  int max_degree = 0;  // d_max of the whole graph, >= 1

  // Throws std::invalid_argument naming the option (--rho, --c) for values outside (0, 1), a
  // sigma that is not positive, or max_degree < 1.
  void Validate() const;
  double EdgeWeight() const { return rho * c / max_degree; }
  double SelfWeight(int degree) const { return rho * (1.0 - c * degree / max_degree); }
};

}  // namespace starling::algorithms
