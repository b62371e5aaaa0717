// Gradient tracking in adapt-then-combine form, as the OPTRA repository runs DIGing/NEXT
// (docs/explanations/algorithms/gossip-gradient.md):
//   x_i+ = sum_j W_ij (x_j - step y_j)
//   y_i+ = sum_j W_ij y_j + grad f_i(x_i+) - grad f_i(x_i),      y_i^0 = grad f_i(x_i^0).
// One exchange of the payload [x_i - step y_i; y_i] per iteration (the OPTRA code counts it as 2
// communications, and so does comm_rounds here). Invariant, used by tests: sum_i y_i equals
// sum_i grad f_i(x_i) after every iteration, because W is doubly stochastic. With --gossip-bits
// R > 0 both halves of the payload travel quantized (quantized_gossip.h, two segments, one range
// each) and each sum_j W_ij v_j becomes v_i + sum_j W_ij (vh_j - vh_i) over the public copies,
// which keeps the invariant.
#pragma once

#include <optional>

#include "algorithms/round/quantized_gossip.h"
#include "algorithms/round/round_algorithm.h"

namespace starling::algorithms {

class GradientTracking : public RoundAlgorithm {
 public:
  GradientTracking(const NodeSetup& setup, double step, const GossipQuantParams& gossip = {});

  std::string name() const override { return "gradient-tracking"; }
  StepKey key() const override { return {iteration_, 0, 0}; }
  const Vec& Outgoing() const override { return gossip_ ? gossip_->message() : outgoing_; }
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
  // The tracker y_i (for the invariant test).
  const Vec& tracker() const { return y_; }

 private:
  void RefreshOutgoing();

  NodeSetup setup_;
  double step_;
  int64_t iteration_ = 0;
  double passes_ = 0.0;
  Vec x_, y_, grad_, outgoing_, mixed_x_, mixed_y_, new_grad_;
  std::optional<QuantizedGossip> gossip_;  // set iff --gossip-bits > 0
};

}  // namespace starling::algorithms
