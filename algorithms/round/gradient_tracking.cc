#include "algorithms/round/gradient_tracking.h"

#include <stdexcept>

#include "algorithms/round/neighbor_mix.h"
#include "algorithms/round/round_method.h"

namespace starling::algorithms {

GradientTracking::GradientTracking(const NodeSetup& setup, double step,
                                   const GossipQuantParams& gossip)
    : setup_(setup), step_(step), x_(setup.x0) {
  if (gossip.bits > 0) gossip_.emplace(setup_, x_.size(), 2, gossip);
  setup_.problem->Gradient(x_, &grad_);
  passes_ = 1.0;
  y_ = grad_;
  RefreshOutgoing();
}

void GradientTracking::RefreshOutgoing() {
  const Eigen::Index d = x_.size();
  outgoing_.resize(2 * d);
  outgoing_.head(d) = x_ - step_ * y_;
  outgoing_.tail(d) = y_;
  if (gossip_) gossip_->Encode(outgoing_);
}

void GradientTracking::Advance(const std::vector<const Vec*>& inbox) {
  const Eigen::Index d = x_.size();
  CheckInbox(setup_, inbox, 2 * d);
  if (gossip_) {
    gossip_->Receive(inbox);
    gossip_->Mix(outgoing_, 0, &mixed_x_);
    gossip_->Mix(outgoing_, 1, &mixed_y_);
  } else {
    MixSegment(setup_, outgoing_, inbox, 0, d, &mixed_x_);
    MixSegment(setup_, outgoing_, inbox, d, d, &mixed_y_);
  }
  // The gradient before any member changes: a problem may throw here (GradientInterrupted, the
  // C ABI's caller stopping) and the state must stay the one before this Advance.
  setup_.problem->Gradient(mixed_x_, &new_grad_);
  if (gossip_) gossip_->Commit();
  x_ = mixed_x_;
  passes_ += 1.0;
  y_ = mixed_y_ + new_grad_ - grad_;
  grad_.swap(new_grad_);
  ++iteration_;
  RefreshOutgoing();
}

AlgorithmCounters GradientTracking::counters() const {
  return {2 * iteration_, 2 * iteration_, passes_};
}

bool GradientTracking::SaveState(AlgorithmState* s) const {
  *s = AlgorithmState();
  s->algorithm = name();
  s->ints = {iteration_};
  s->reals = {passes_};
  s->vectors = {x_, y_, grad_};
  if (gossip_) gossip_->Save(s);
  return true;
}

void GradientTracking::LoadState(const AlgorithmState& s) {
  CheckStateShape(s, name(), 1, 1, 3 + (gossip_ ? gossip_->StateVectors() : 0), 0);
  if (s.vectors[0].size() != x_.size()) throw std::invalid_argument("checkpoint: wrong dimension");
  // The copies first (Load checks before it changes anything); RefreshOutgoing then encodes the
  // saved message again, from the same payload against the same copies.
  if (gossip_) gossip_->Load(s, 3);
  iteration_ = s.ints[0];
  passes_ = s.reals[0];
  x_ = s.vectors[0];
  y_ = s.vectors[1];
  grad_ = s.vectors[2];
  RefreshOutgoing();
}

namespace {

std::unique_ptr<RoundAlgorithm> MakeGradientTracking(const RoundOptions& options,
                                                     const NodeSetup& setup) {
  return std::make_unique<GradientTracking>(setup, ResolveStep(options),
                                            GossipQuantParamTable().Read(options.params));
}

}  // namespace

// 1/L (was 0.5/L): bench/step_sweep.py found the best fixed step of the grid c/L at c = 2 on
// a9a (logistic), on the OPTRA least-squares instance and on the Network-DANE synthetic (kappa =
// 10), c = 4 diverging on the first two, so 0.5/L was 4x below the best and 1/L is within 2x
// with a margin of 2 to the measured stability limit (bench/step_sweep.py).
const RoundMethod& GradientTrackingMethod() {
  static const RoundMethod method = RoundMethod("gradient-tracking", MakeGradientTracking)
                                        .DefaultStep(1.0)
                                        .Params(GossipQuantParamTable());
  return method;
}

}  // namespace starling::algorithms
