#include "node/report/divergence_guard.h"

#include <cmath>
#include <sstream>
#include <utility>

namespace starling::node {
namespace {

std::string Format(double v) {
  std::ostringstream out;
  out.precision(4);
  out << v;
  return out.str();
}

}  // namespace

DivergenceGuard::DivergenceGuard(double start_objective, double start_norm,
                                 std::string objective_name)
    : start_objective_(start_objective),
      start_norm_(start_norm),
      objective_name_(std::move(objective_name)),
      objective_limit_(kObjectiveFactor * (std::abs(start_objective) + 1.0)),
      norm_limit_(kNormFactor * (std::abs(start_norm) + 1.0)) {}

std::optional<std::string> DivergenceGuard::Check(std::optional<double> objective,
                                                  double norm) const {
  if (!std::isfinite(start_objective_) || !std::isfinite(start_norm_)) {
    return "the starting point's objective or norm is not finite";
  }
  if (!std::isfinite(norm)) return "the model is no longer finite";
  if (objective) {
    if (!std::isfinite(*objective)) return objective_name_ + " is no longer finite";
    if (*objective > objective_limit_) {
      return objective_name_ + " " + Format(*objective) + " is above " + Format(kObjectiveFactor) +
             " x (|f(x0)| + 1) = " + Format(objective_limit_) +
             " (f(x0) = " + Format(start_objective_) + ")";
    }
  }
  if (norm > norm_limit_) {
    return "the model norm " + Format(norm) + " is above " + Format(kNormFactor) +
           " x (||x0|| + 1) = " + Format(norm_limit_);
  }
  return std::nullopt;
}

}  // namespace starling::node
