// The divergence criterion every driver applies (docs/explanations/architecture.md): a run has
// diverged when an objective it watches is no longer finite or has grown far past its starting
// value, or when the model's norm has exploded. The simulator watches the global objective f(x-bar)
// and the root-mean-square of the node models' norms; a daemon watches its local objective f_i(x_i)
// and its own model's norm. Both stop with exit 4 and "try a smaller --step".
//
// Thresholds, from the values at the start (f_0 = the objective, r_0 = the norm) and the run's
// own first move (r_1 = the norm of the first model checked that differs from the start):
//   objective:  f > kObjectiveFactor * (|f_0| + 1)      (1e3: a mean logistic loss of 1e3 is a
//               margin of -1e3 on the average sample; no converging run comes near it)
//   model norm: ||x|| > kNormFactor * (S + 1), S = max(r_0, r_1)   (1e8)
// The norm's threshold is scale-free: a problem whose answer is large (least squares with the
// target in large units, ||x*|| ~ 1e9) takes a first step of its own scale (a gradient step from
// x0 moves by step * ||grad f(x0)||, which grows with the answer), so its converging run stays
// far below 1e8 x that scale; a diverging run grows without bound past it (and its objective
// usually crosses its limit first). Until the first move, S = r_0. The "+ 1" is an absolute
// margin that keeps the tests meaningful when f_0 or r_0 is 0.
#pragma once

#include <optional>
#include <string>

namespace starling::node {

class DivergenceGuard {
 public:
  static constexpr double kObjectiveFactor = 1e3;
  static constexpr double kNormFactor = 1e8;

  // The values at the run's starting point; a non-finite start is itself divergence (Check says
  // so at once).
  // `objective_name` names it in the reasons ("the objective", "the local objective").
  DivergenceGuard(double start_objective, double start_norm,
                  std::string objective_name = "the objective");

  // Nullopt while the run looks sane; otherwise why not, in words (e.g. "the objective 2.7e+04
  // is above 1e3 x (|f(x0)| + 1) = 1.69e+03"), for the error message. `objective` may be
  // nullopt where the caller did not evaluate it this time (only the norm is checked then).
  // The first finite norm that differs from the start's sets the scale S (see above).
  std::optional<std::string> Check(std::optional<double> objective, double norm);

  double objective_limit() const { return objective_limit_; }
  double norm_limit() const { return norm_limit_; }
  double norm_scale() const { return norm_scale_; }

 private:
  double start_objective_, start_norm_;
  std::string objective_name_;
  double objective_limit_;
  double norm_scale_;   // S
  bool moved_ = false;  // S includes the first move
  double norm_limit_;
};

}  // namespace starling::node
