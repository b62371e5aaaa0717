// SwarmSGD (algorithms/pairwise/swarm_sgd.h) over a model trained outside Starling: the local
// steps are the caller's (a PyTorch or NumPy optimizer step), handed over at step boundaries
// (step_handover.h); the exchanges, the cadence (an offer after H local steps), the staleness
// bound (2H steps since the last merge), late replies and checkpoints are SwarmSGD's, and the
// daemon's PairwiseNode drives it exactly as it drives the built-in one.
//
// Runs on the node's thread only (like every PairwiseAlgorithm); the hand-over is the one
// thread-safe part.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/pairwise/snapshot_pool.h"
#include "capi/step_handover.h"

namespace starling::capi {

class ExternalSwarmSgd : public algorithms::PairwiseAlgorithm {
 public:
  // `x0` is the caller's model at start; `handover` is not owned and outlives this object.
  ExternalSwarmSgd(const Vec& x0, int local_steps, StepHandover* handover);

  std::string name() const override { return "swarmsgd"; }
  bool StepReady() const override { return handover_->Ready(); }
  // Takes the caller's staged step (StepReady was true).
  void LocalStep() override;
  bool WantsExchange() const override { return ended_ || since_exchange_ >= local_steps_; }
  bool ShouldWait() const override { return since_merge_ >= 2 * local_steps_; }
  void EndLocalSteps() override;

  std::shared_ptr<const Vec> BeginExchange(int peer, uint64_t seq) override;
  bool CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& their_snapshot) override;
  void AbortExchange(bool may_still_reply) override;
  bool exchange_outstanding() const override { return outstanding_; }
  std::shared_ptr<const Vec> Respond(int peer,
                                     const Eigen::Ref<const Vec>& their_snapshot) override;

  const Vec& Model() const override { return x_; }
  algorithms::PairwiseCounters counters() const override { return counters_; }
  bool SaveState(algorithms::AlgorithmState* state) const override;
  void LoadState(const algorithms::AlgorithmState& state) override;

 private:
  struct Offer {
    uint64_t seq;
    std::shared_ptr<const Vec> snapshot;
  };
  // x_ += delta, recorded for the caller's buffer.
  void Merge(const Vec& delta);

  const int local_steps_;
  StepHandover* handover_;
  Vec x_, delta_;
  algorithms::SnapshotPool snapshots_;
  std::deque<Offer> offers_;  // the outstanding one (back) and abandoned ones, oldest first
  bool outstanding_ = false, ended_ = false;
  int64_t since_exchange_ = 0, since_merge_ = 0;
  algorithms::PairwiseCounters counters_;
};

}  // namespace starling::capi
