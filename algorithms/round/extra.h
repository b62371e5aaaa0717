// EXTRA (Shi et al.), with W~ = (I + W)/2:
//   x^1     = W x^0 - step grad f(x^0)
//   x^{k+1} = x^k + W x^k - (x^{k-1} + W x^{k-1})/2 - step (grad f(x^k) - grad f(x^{k-1})).
// The node caches W x^{k-1} and grad f(x^{k-1}), so one exchange of x^k per iteration suffices.
// With --gossip-bits R > 0, x^k travels quantized (quantized_gossip.h) and W x^k is
// x^k + sum_j W_ij (xh_j - xh_i) over the public copies xh.
#pragma once

#include <optional>

#include "algorithms/round/quantized_gossip.h"
#include "algorithms/round/round_algorithm.h"

namespace starling::algorithms {

class Extra : public RoundAlgorithm {
 public:
  Extra(const NodeSetup& setup, double step, const GossipQuantParams& gossip = {});

  std::string name() const override { return "extra"; }
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
  double step_;
  int64_t iteration_ = 0;
  double passes_ = 0.0;
  Vec x_, x_prev_, wx_prev_, grad_prev_, wx_, grad_, next_;
  std::optional<QuantizedGossip> gossip_;  // set iff --gossip-bits > 0
};

}  // namespace starling::algorithms
