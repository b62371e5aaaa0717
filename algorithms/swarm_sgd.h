// SwarmSGD (Nadiradze et al., arXiv:1910.12308; ALGORITHMS.md §4), non-blocking form of §4.3:
// H local SGD steps between the exchanges a node initiates; an exchange averages the two
// published snapshots and each side keeps the local progress it made since its snapshot.
// Full precision; the compressed variants are QuantizedSwarmSgd and SparseSwarmSgd.
#pragma once

#include <cstdint>

#include "algorithms/swarm_sgd_base.h"

namespace starling::algorithms {

struct SwarmSgdOffer {
  uint64_t seq;
  Vec snapshot;  // S_i
};

class SwarmSgd : public SwarmSgdBase<SwarmSgdOffer> {
 public:
  SwarmSgd(const NodeSetup& setup, double step, int batch_size, int local_steps);

  const Vec& BeginExchange(int peer, uint64_t seq) override;
  bool CompleteExchange(uint64_t seq, const Vec& their_snapshot) override;
  const Vec& Respond(int peer, const Vec& their_snapshot) override;
  bool SaveState(AlgorithmState* state) const override;
  void LoadState(const AlgorithmState& state) override;

 private:
  Vec reply_snapshot_;
};

}  // namespace starling::algorithms
