// A pairwise algorithm of the daemon (SwarmSGD and its compressed variants: swarm_sgd.h,
// quantized_swarm_sgd.h, sparse_swarm_sgd.h) over a model trained outside Starling: the local
// steps are the caller's, handed over at step boundaries (step_handover.h) and taken through
// TakesExternalSteps; every exchange, merge, encoding, counter and checkpoint is the
// algorithm's own, and the daemon's PairwiseNode drives it exactly as it drives the built-in
// one (its wire follows --compression as for any run).
//
// What the caller's buffer needs is each merge as a delta: the algorithm's model after a call
// that may change it, minus the model before (one subtraction per coordinate and exchange,
// exact unless the merge's own addition rounded, i.e. to the last bit of the model).
//
// Runs on the node's thread only (like every PairwiseAlgorithm); the hand-over is the one
// thread-safe part.
#pragma once

#include <memory>
#include <string>

#include "algorithms/pairwise/external_steps.h"
#include "algorithms/pairwise/pairwise_algorithm.h"
#include "capi/step_handover.h"

namespace starling::capi {

class ExternalPairwise : public algorithms::PairwiseAlgorithm {
 public:
  // `inner` must take external steps (TakesExternalSteps), else std::invalid_argument;
  // `handover` is not owned and outlives this object.
  ExternalPairwise(std::unique_ptr<algorithms::PairwiseAlgorithm> inner, StepHandover* handover);

  std::string name() const override { return inner_->name(); }
  bool StepReady() const override { return handover_->Ready(); }
  void LocalStep() override;
  bool WantsExchange() const override { return inner_->WantsExchange(); }
  bool ShouldWait() const override { return inner_->ShouldWait(); }
  void EndLocalSteps() override;

  std::shared_ptr<const Vec> BeginExchange(int peer, uint64_t seq) override;
  bool CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& their_message) override;
  void AbortExchange(bool may_still_reply) override;
  void AbortCrossedExchange() override;
  bool exchange_outstanding() const override { return inner_->exchange_outstanding(); }
  std::shared_ptr<const Vec> Respond(int peer, const Eigen::Ref<const Vec>& their_message) override;
  // The inner algorithm's checked merges (SwarmSGD's check the vector in the merge's own pass):
  // a refused vector leaves its model as it was, so no delta reaches the caller's buffer.
  MergeResult CompleteExchangeChecked(uint64_t seq, const Eigen::Ref<const Vec>& their_message,
                                      size_t* first_bad) override;
  std::shared_ptr<const Vec> RespondChecked(int peer, const Eigen::Ref<const Vec>& their_message,
                                            size_t* first_bad) override;

  const Vec& Model() const override { return inner_->Model(); }
  algorithms::PairwiseCounters counters() const override { return inner_->counters(); }
  int64_t computations() const override { return inner_->computations(); }
  bool SaveState(algorithms::AlgorithmState* state) const override;
  void LoadState(const algorithms::AlgorithmState& state) override;

 private:
  // Runs `f` (a call on inner_) and hands the change of the model to the caller's buffer.
  template <typename F>
  auto Tracked(F&& f) {
    before_ = inner_->Model();
    auto result = f();
    delta_ = inner_->Model() - before_;
    if ((delta_.array() != 0.0).any()) handover_->AddDelta(delta_);
    handover_->Publish(inner_->counters());
    return result;
  }

  std::unique_ptr<algorithms::PairwiseAlgorithm> inner_;
  algorithms::TakesExternalSteps* steps_;
  StepHandover* handover_;
  Vec x_, before_, delta_;
};

// The daemon's SwarmSGD for --compression `compression` ("none", "lattice:...", "topk:...",
// "vq:...") over the caller's model: algorithms::MakeSwarmSgdVariant, as the registry's, with no
// problem (the caller computes the steps). Throws std::invalid_argument for a bad spec.
std::unique_ptr<algorithms::PairwiseAlgorithm> MakeExternalSwarmSgd(
    const algorithms::NodeSetup& setup, int local_steps, const std::string& compression,
    StepHandover* handover);

}  // namespace starling::capi
