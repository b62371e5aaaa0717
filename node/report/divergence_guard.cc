#include "node/report/divergence_guard.h"

#include <algorithm>
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
      norm_scale_(std::abs(start_norm)),
      norm_limit_(kNormFactor * (norm_scale_ + 1.0)) {}

std::optional<std::string> DivergenceGuard::Check(std::optional<double> objective, double norm) {
  if (!std::isfinite(start_objective_) || !std::isfinite(start_norm_)) {
    return "the starting point's objective or norm is not finite";
  }
  if (!std::isfinite(norm)) return "the model is no longer finite";
  if (!moved_ && norm != start_norm_) {
    moved_ = true;
    norm_scale_ = std::max(norm_scale_, norm);
    norm_limit_ = kNormFactor * (norm_scale_ + 1.0);
  }
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
           " x (S + 1) = " + Format(norm_limit_) + " (S = " + Format(norm_scale_) +
           ", the larger of the norms at the start and after the first move)";
  }
  return std::nullopt;
}

}  // namespace starling::node
