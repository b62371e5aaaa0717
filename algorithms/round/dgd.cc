#include "algorithms/round/dgd.h"

#include <stdexcept>

#include "algorithms/round/neighbor_mix.h"

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

bool Dgd::SaveState(AlgorithmState* s) const {
  *s = AlgorithmState();
  s->algorithm = name();
  s->ints = {iteration_};
  s->reals = {oracle_.passes()};
  s->vectors = {x_};
  s->texts = {oracle_.SaveEngine()};
  return true;
}

void Dgd::LoadState(const AlgorithmState& s) {
  CheckStateShape(s, name(), 1, 1, 1, 1);
  if (s.vectors[0].size() != x_.size()) throw std::invalid_argument("checkpoint: wrong dimension");
  iteration_ = s.ints[0];
  x_ = s.vectors[0];
  oracle_.LoadEngine(s.texts[0], s.reals[0]);
}

}  // namespace starling::algorithms
