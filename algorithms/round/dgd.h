// DGD / D-PSGD (docs/explanations/algorithms/gossip-gradient.md): x_i+ = sum_j W_ij x_j - step *
// g_i(x_i), with g_i the full local gradient (DGD) or a mini-batch estimate (D-PSGD, batch_size >
// 0). One d-vector per iteration. On block-cyclic data (NodeSetup::block_rows) iteration t draws
// from the rows of its block only (algorithms/data/block_cyclic.h); the output is still the one
// final model. With a constant step it converges only to an O(step) neighbourhood of the optimum.
// With --gossip-bits R > 0 the d-vector travels quantized (quantized_gossip.h) and the mixing is
// x_i + sum_j W_ij (xh_j - xh_i) over the public copies xh.
#pragma once

#include <optional>

#include "algorithms/data/block_cyclic.h"
#include "algorithms/problems/gradient_oracle.h"
#include "algorithms/round/quantized_gossip.h"
#include "algorithms/round/round_algorithm.h"

namespace starling::algorithms {

class Dgd : public RoundAlgorithm {
 public:
  Dgd(const NodeSetup& setup, ScheduledStep step, int batch_size,
      const GossipQuantParams& gossip = {});

  std::string name() const override { return batch_size_ > 0 ? "dpsgd" : "dgd"; }
  StepKey key() const override { return {iteration_, 0, 0}; }
  const Vec& Outgoing() const override { return gossip_ ? gossip_->message() : x_; }
  int64_t OutgoingBits() const override {
    return gossip_ ? gossip_->MessageBits() : RoundAlgorithm::OutgoingBits();
  }
  const QuantizedGossip* OutgoingGossip() const override { return gossip_ ? &*gossip_ : nullptr; }
  void Advance(const std::vector<const Vec*>& inbox) override;
  int64_t iteration() const override { return iteration_; }
  const Vec& Model() const override { return x_; }
  AlgorithmCounters counters() const override;
  bool SaveState(AlgorithmState* state) const override;
  void LoadState(const AlgorithmState& state) override;

 private:
  NodeSetup setup_;
  ScheduledStep step_;  // t = iteration_
  int batch_size_;
  GradientOracle oracle_;
  BlockCyclicSpec blocks_;
  int64_t iteration_ = 0;
  Vec x_, mixed_, grad_;
  std::optional<QuantizedGossip> gossip_;  // set iff --gossip-bits > 0
};

}  // namespace starling::algorithms
