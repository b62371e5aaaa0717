#include "algorithms/dgd.h"

#include "algorithms/neighbor_mix.h"

namespace starling::algorithms {

Dgd::Dgd(const NodeSetup& setup, double step, int batch_size)
    : setup_(setup),
      step_(step),
      batch_size_(batch_size),
      oracle_(setup.problem, batch_size, setup.seed),
      x_(setup.x0) {}

void Dgd::Advance(const std::vector<const Vec*>& inbox) {
  CheckInbox(setup_, inbox, x_.size());
  oracle_.Compute(x_, &grad_);
  MixSegment(setup_, x_, inbox, 0, x_.size(), &mixed_);
  x_ = mixed_ - step_ * grad_;
  ++iteration_;
}

AlgorithmCounters Dgd::counters() const {
  return {iteration_, iteration_, oracle_.passes()};
}

}  // namespace starling::algorithms
