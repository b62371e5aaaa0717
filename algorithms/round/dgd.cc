#include "algorithms/round/dgd.h"

#include <stdexcept>

#include "algorithms/data/block_cyclic.h"
#include "algorithms/round/neighbor_mix.h"
#include "algorithms/round/round_method.h"

namespace starling::algorithms {

Dgd::Dgd(const NodeSetup& setup, ScheduledStep step, int batch_size,
         const GossipQuantParams& gossip)
    : setup_(setup),
      step_(step),
      batch_size_(batch_size),
      oracle_(setup.problem, batch_size, setup.seed),
      blocks_(BlockCyclicOf(setup)),
      x_(setup.x0) {
  if (gossip.bits > 0) {
    gossip_.emplace(setup_, x_.size(), 1, gossip);
    gossip_->Encode(x_);
  }
}

void Dgd::Advance(const std::vector<const Vec*>& inbox) {
  CheckInbox(setup_, inbox, x_.size());
  if (blocks_.active()) {
    oracle_.ComputeOn(x_, setup_.block_rows[BlockOfStep(blocks_, iteration_)], &grad_);
  } else {
    oracle_.Compute(x_, &grad_);
  }
  if (gossip_) {
    gossip_->Receive(inbox);
    gossip_->Mix(x_, 0, &mixed_);
    gossip_->Commit();
  } else {
    MixSegment(setup_, x_, inbox, 0, x_.size(), &mixed_);
  }
  x_ = mixed_ - step_.At(iteration_) * grad_;
  ++iteration_;
  if (gossip_) gossip_->Encode(x_);
}

AlgorithmCounters Dgd::counters() const { return {iteration_, iteration_, oracle_.passes()}; }

bool Dgd::SaveState(AlgorithmState* s) const {
  *s = AlgorithmState();
  s->algorithm = name();
  s->ints = {iteration_};
  s->reals = {oracle_.passes()};
  s->vectors = {x_};
  s->texts = {oracle_.SaveEngine()};
  if (gossip_) gossip_->Save(s);
  return true;
}

void Dgd::LoadState(const AlgorithmState& s) {
  CheckStateShape(s, name(), 1, 1, 1 + (gossip_ ? gossip_->StateVectors() : 0), 1);
  if (s.vectors[0].size() != x_.size()) throw std::invalid_argument("checkpoint: wrong dimension");
  if (gossip_) gossip_->Load(s, 1);
  iteration_ = s.ints[0];
  x_ = s.vectors[0];
  oracle_.LoadEngine(s.texts[0], s.reals[0]);
}

namespace {

std::unique_ptr<RoundAlgorithm> MakeDgd(const RoundOptions& options, const NodeSetup& setup) {
  return std::make_unique<Dgd>(setup, ScheduledStep{ResolveStep(options), options.step_schedule},
                               options.batch_size, GossipQuantParamTable().Read(options.params));
}

std::unique_ptr<RoundAlgorithm> MakeDpsgd(const RoundOptions& options, const NodeSetup& setup) {
  const ScheduledStep step{ResolveStep(options), options.step_schedule};
  if (options.batch_size == 0) throw std::invalid_argument("--algorithm dpsgd needs --batch > 0");
  return std::make_unique<Dgd>(setup, step, options.batch_size,
                               GossipQuantParamTable().Read(options.params));
}

}  // namespace

// Default steps as multiples of 1/L, L = the network-wide smoothness bound, here and in the other
// methods: chosen from each method's stability condition (EXTRA: step < 2
// lambda_min(W~)/L, and lambda_min(W~) >= 1/3 on the rings and sparse graphs used here) with
// margin, and checked on a9a.
const RoundMethod& DgdMethod() {
  static const RoundMethod method = RoundMethod("dgd", MakeDgd)
                                        .DefaultStep(0.5)
                                        .SchedulesStep()
                                        .SamplesBlocks()
                                        .Params(GossipQuantParamTable());
  return method;
}

const RoundMethod& DpsgdMethod() {
  static const RoundMethod method = RoundMethod("dpsgd", MakeDpsgd)
                                        .DefaultStep(0.5)
                                        .SchedulesStep()
                                        .SamplesBlocks()
                                        .Params(GossipQuantParamTable());
  return method;
}

}  // namespace starling::algorithms
