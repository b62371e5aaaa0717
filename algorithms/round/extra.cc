#include "algorithms/round/extra.h"

#include <stdexcept>

#include "algorithms/round/neighbor_mix.h"
#include "algorithms/round/round_method.h"

namespace starling::algorithms {

Extra::Extra(const NodeSetup& setup, double step, const GossipQuantParams& gossip)
    : setup_(setup), step_(step), x_(setup.x0) {
  if (gossip.bits > 0) {
    gossip_.emplace(setup_, x_.size(), 1, gossip);
    gossip_->Encode(x_);
  }
}

void Extra::Advance(const std::vector<const Vec*>& inbox) {
  CheckInbox(setup_, inbox, x_.size());
  if (gossip_) {
    gossip_->Receive(inbox);
    gossip_->Mix(x_, 0, &wx_);
  } else {
    MixSegment(setup_, x_, inbox, 0, x_.size(), &wx_);
  }
  setup_.problem->Gradient(x_, &grad_);
  if (gossip_) gossip_->Commit();
  passes_ += 1.0;
  if (iteration_ == 0) {
    next_ = wx_ - step_ * grad_;
  } else {
    next_ = x_ + wx_ - 0.5 * (x_prev_ + wx_prev_) - step_ * (grad_ - grad_prev_);
  }
  x_prev_.swap(x_);
  x_.swap(next_);
  wx_prev_.swap(wx_);
  grad_prev_.swap(grad_);
  ++iteration_;
  if (gossip_) gossip_->Encode(x_);
}

AlgorithmCounters Extra::counters() const { return {iteration_, iteration_, passes_}; }

bool Extra::SaveState(AlgorithmState* s) const {
  *s = AlgorithmState();
  s->algorithm = name();
  s->ints = {iteration_};
  s->reals = {passes_};
  s->vectors = {x_, x_prev_, wx_prev_, grad_prev_};
  if (gossip_) gossip_->Save(s);
  return true;
}

void Extra::LoadState(const AlgorithmState& s) {
  CheckStateShape(s, name(), 1, 1, 4 + (gossip_ ? gossip_->StateVectors() : 0), 0);
  if (s.vectors[0].size() != x_.size()) throw std::invalid_argument("checkpoint: wrong dimension");
  if (gossip_) gossip_->Load(s, 4);
  iteration_ = s.ints[0];
  passes_ = s.reals[0];
  x_ = s.vectors[0];
  x_prev_ = s.vectors[1];
  wx_prev_ = s.vectors[2];
  grad_prev_ = s.vectors[3];
}

namespace {

std::unique_ptr<RoundAlgorithm> MakeExtra(const RoundOptions& options, const NodeSetup& setup) {
  return std::make_unique<Extra>(setup, ResolveStep(options),
                                 GossipQuantParamTable().Read(options.params));
}

}  // namespace

const RoundMethod& ExtraMethod() {
  static const RoundMethod method =
      RoundMethod("extra", MakeExtra).DefaultStep(0.5).Params(GossipQuantParamTable());
  return method;
}

}  // namespace starling::algorithms
