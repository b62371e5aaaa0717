// The Bregman gap of node models against a known minimiser: the metric of --x-star.
#pragma once

#include <functional>
#include <vector>

#include "node/config/run_setup.h"

namespace starling::node {

// The Bregman gap of ALGORITHMS.md §1.6 (the OPTRA authors' metric) for node models x_i against
// the minimiser x* of --x-star:
//   G = | sum_i f_i(x_i) - f_i(x*) - <grad f_i(x*), x_i - x*> |.
// Needs every node's problem (the simulator's setup).
class BregmanGap {
 public:
  explicit BregmanGap(const RunSetup& setup);
  // `model_of(i)` is node i's model.
  double At(const std::function<const Vec*(int)>& model_of) const;

 private:
  const RunSetup& setup_;
  double value_at_star_ = 0.0;
  std::vector<Vec> grad_at_star_;
};

}  // namespace starling::node
