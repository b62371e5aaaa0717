#include "capi/external_gradient.h"

#include <stdexcept>

namespace starling::capi {

void GradientHandover::Request(const Vec& x, Vec* g) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (interrupted_) throw algorithms::GradientInterrupted("the caller stopped the node");
  x_ = x;
  requested_ = true;
  seen_ = given_ = false;
  changed_.notify_all();
  changed_.wait(lock, [&] { return given_ || interrupted_; });
  requested_ = seen_ = false;
  if (!given_) throw algorithms::GradientInterrupted("the caller stopped the node");
  given_ = false;
  *g = g_;
  ++taken_;
}

void GradientHandover::SetFinal(const Vec& x) {
  std::lock_guard<std::mutex> lock(mutex_);
  final_ = x;
  has_final_ = true;
  changed_.notify_all();
}

void GradientHandover::End() {
  std::lock_guard<std::mutex> lock(mutex_);
  ended_ = true;
  changed_.notify_all();
}

void GradientHandover::Interrupt() {
  std::lock_guard<std::mutex> lock(mutex_);
  interrupted_ = true;
  changed_.notify_all();
}

bool GradientHandover::Requested() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return requested_;
}

bool GradientHandover::has_final() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return has_final_;
}

int64_t GradientHandover::taken() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return taken_;
}

double ExternalProblem::Value(const Vec& /*x*/) const {
  throw std::logic_error("the caller's objective has no value here (only gradients)");
}

void ExternalProblem::HessianVector(const Vec&, const Vec&, Vec*) const {
  throw std::logic_error("the caller's objective has no Hessian here (only gradients)");
}

double ExternalProblem::SmoothnessBound() const {
  throw std::logic_error("the caller's objective has no smoothness bound: give --step");
}

bool IsExternalRoundMethod(const std::string& algorithm) {
  return algorithm == "dgd" || algorithm == "dpsgd" || algorithm == "gradient-tracking";
}

const char* ExternalRoundMethods() { return "dgd, dpsgd, gradient-tracking"; }

}  // namespace starling::capi
