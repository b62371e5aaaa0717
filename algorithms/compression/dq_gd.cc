#include "algorithms/compression/dq_gd.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <stdexcept>

namespace starling::algorithms {

QuantizedGd::QuantizedGd(const QuantizedGdOptions& options, const Vec& x0)
    : options_(options),
      quantizer_(options.bits),
      server_(x0),
      error_(Vec::Zero(x0.size())),
      range_(options.range0) {
  if (!(options.step > 0.0) || !std::isfinite(options.step)) {
    throw std::invalid_argument("QuantizedGd: step must be positive");
  }
  if (!(options.range0 > 0.0) || !std::isfinite(options.range0)) {
    throw std::invalid_argument("QuantizedGd: range0 must be positive");
  }
  if (!(options.gamma > 0.0 && options.gamma <= 1.0)) {
    throw std::invalid_argument("QuantizedGd: gamma must be in (0, 1]");
  }
}

Vec QuantizedGd::worker_point() const {
  if (!options_.differential) return server_;
  return server_ + options_.step * error_;
}

void QuantizedGd::Step(const GradientFn& gradient) {
  if (options_.differential) {
    const Vec x = server_ + options_.step * error_;
    gradient(x, &grad_);
    u_ = grad_ - error_;
    saturated_ += quantizer_.Quantize(u_, range_, &q_);
    error_ = q_ - u_;
  } else {
    gradient(server_, &grad_);
    saturated_ += quantizer_.Quantize(grad_, range_, &q_);
  }
  server_ -= options_.step * q_;
  range_ = std::max(range_ * options_.gamma, DBL_MIN);  // never 0, even after many steps
  bits_sent_ += static_cast<long long>(options_.bits) * server_.size();
  ++steps_;
}

}  // namespace starling::algorithms
