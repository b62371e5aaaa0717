// SwarmSGD (Nadiradze et al., arXiv:1910.12308; ALGORITHMS.md §4), non-blocking form of §4.3:
// H local SGD steps between the exchanges a node initiates; an exchange averages the two
// published snapshots and each side keeps the local progress it made since its snapshot.
// Full precision here; quantized payloads plug in at BeginExchange/Respond.
#pragma once

#include <deque>
#include <utility>

#include "algorithms/gradient_oracle.h"
#include "algorithms/pairwise_algorithm.h"

namespace starling::algorithms {

class SwarmSgd : public PairwiseAlgorithm {
 public:
  SwarmSgd(const NodeSetup& setup, double step, int batch_size, int local_steps);

  std::string name() const override { return "swarmsgd"; }
  void LocalStep() override;
  bool WantsExchange() const override { return since_exchange_ >= local_steps_; }
  bool ShouldWait() const override { return since_merge_ >= 2 * local_steps_; }
  const Vec& BeginExchange(int peer, uint64_t seq) override;
  bool CompleteExchange(uint64_t seq, const Vec& their_snapshot) override;
  void AbortExchange(bool may_still_reply) override;
  bool exchange_outstanding() const override { return outstanding_; }
  const Vec& Respond(int peer, const Vec& their_snapshot) override;
  const Vec& Model() const override { return x_; }
  PairwiseCounters counters() const override;
  bool SaveState(AlgorithmState* state) const override;
  void LoadState(const AlgorithmState& state) override;

 private:
  NodeSetup setup_;
  double step_;
  int local_steps_;
  GradientOracle oracle_;
  Vec x_, grad_, reply_snapshot_;
  // Offer snapshots by sequence number: the outstanding one (back) and abandoned ones that may
  // still be answered, oldest first.
  std::deque<std::pair<uint64_t, Vec>> offers_;
  bool outstanding_ = false;
  int since_exchange_ = 0;  // local steps since this node last completed an exchange it began
  int since_merge_ = 0;     // local steps since the model was last merged with another
  PairwiseCounters counters_;
};

}  // namespace starling::algorithms
