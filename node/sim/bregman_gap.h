// The Bregman gap of node models against a known minimiser: the metric of --x-star.
#pragma once

#include <functional>
#include <vector>

#include "node/config/run_setup.h"

namespace starling::node {

// The Bregman gap (the OPTRA authors' metric) for node models x_i against
// the minimiser x* of --x-star:
//   G = | sum_i f_i(x_i) - f_i(x*) - <grad f_i(x*), x_i - x*> |.
// Needs every node's problem (the simulator's setup).
class BregmanGap {
 public:
  explicit BregmanGap(const RunSetup& setup);
  // `model_of(i)` is node i's model.
  double At(const std::function<const Vec*(int)>& model_of) const;
  // The same gap exactly as the OPTRA authors' evaluate.m computes it (linear-regression folder):
  //   G_m = | sum_i ( f_i(x_i) - <grad f_i(x*), x_i> ) - fmin |,  fmin = sum_i f_i(x*) here.
  // It drops the term sum_i <grad f_i(x*), x*>, which vanishes only at an exact minimiser (about
  // 3e-9 on their instance), so it differs from At() by that constant. A separate quantity, so
  // that runs can be compared with the authors' saved curve in their own metric.
  double EvaluateMAt(const std::function<const Vec*(int)>& model_of) const;

 private:
  // sum_i f_i(x_i) - <grad f_i(x*), x_i>, the part of both gaps that depends on the models.
  double ModelPart(const std::function<const Vec*(int)>& model_of) const;

  const RunSetup& setup_;
  double value_at_star_ = 0.0;   // sum_i f_i(x*)
  double linear_at_star_ = 0.0;  // sum_i <grad f_i(x*), x*>
  std::vector<Vec> grad_at_star_;
};

}  // namespace starling::node
