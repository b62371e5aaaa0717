// What a Problem whose gradients come from outside the node (the C ABI's round-based methods,
// capi/external_gradient.h) throws from Gradient/BatchGradient when the node is asked to stop
// while it waits for the caller's gradient: no gradient will come. The round-based algorithms
// that run over such a problem (DGD/D-PSGD, gradient tracking) leave their state as it was
// before the interrupted Advance, so the node loop stops as on a signal (a checkpoint of the
// state before that step) instead of failing.
#pragma once

#include <stdexcept>

namespace starling::algorithms {

class GradientInterrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace starling::algorithms
