// CHOCO-SGD, compressed gossip with public copies (Koloskova et al.):
//   x_i <- x_i - eta g_i                         (a mini-batch or full local gradient)
//   q_i = TopK(x_i - xhat_i)                     (sent to every neighbour: k indices and values)
//   xhat_j <- xhat_j + q_j  for j = i and every neighbour (each node keeps these copies)
//   x_i <- x_i + gamma sum_j W_ij (xhat_j - xhat_i)
// What top-k drops is not lost: it stays in x_i - xhat_i and is sent later (error feedback
// through the public copy). Every node's copy of xhat_j is updated from the same q_j, so all
// copies agree exactly. With k = 0 (or k >= d) nothing is compressed.
//
// Steps (StepKey): iteration t is (t, 0, 0), payload q_i as a dense vector with at most k
// nonzeros (SparseOutgoing: the daemon sends only those); OutgoingBits counts k (32-bit index +
// 64-bit value) pairs.
//
// With --vq-samples S > 0, Q is vqSGD's cross-polytope quantizer (compression/
// cross_polytope_quantizer.h) instead of top-k: unbiased with E||Q(x) - x||^2 = omega ||x||^2,
// omega = (d - 1)/S, so CHOCO's contraction E||Q'(x) - x||^2 <= (1 - delta)||x||^2 needs the
// scaling Q' = Q / (1 + omega), which gives delta = 1/(1 + omega) = S/(d - 1 + S). q_i then has
// at most S nonzeros. The payload is then the message itself, [norm, S codes] (1 + S numbers,
// OutgoingVqSamples() = S): every node decodes a neighbour's message with the same function
// (CrossPolytopeQuantizer::DecodeScaled) that its sender used for its own copy, so the copies
// agree bit for bit, and the daemon sends the codes packed (node/drivers/vector_wire.h);
// OutgoingBits counts vqSGD's message, 64 + S(1 + ceil(log2 d)) bits. The samples come from a
// generator seeded by (NodeSetup::seed, iteration), so a run is deterministic and a checkpoint
// needs no generator state (LoadState draws the message again).
#pragma once

#include <vector>

#include "algorithms/problems/gradient_oracle.h"
#include "algorithms/round/round_algorithm.h"

namespace starling::algorithms {

// CHOCO-SGD's own parameters (--top-k, --choco-gamma; ChocoSgdParamTable() in choco_sgd.cc).
struct ChocoSgdParams {
  int top_k = 0;       // coordinates sent per message (0 = all)
  double gamma = 0.5;  // consensus step
  int vq_samples = 0;  // vqSGD cross-polytope samples per message (0 = off)
};
const ParamTable<ChocoSgdParams>& ChocoSgdParamTable();

class ChocoSgd : public RoundAlgorithm {
 public:
  ChocoSgd(const NodeSetup& setup, ScheduledStep step, int batch_size, int top_k, double gamma,
           int vq_samples = 0);

  std::string name() const override { return "choco-sgd"; }
  StepKey key() const override { return {iteration_, 0, 0}; }
  const Vec& Outgoing() const override { return vq_samples_ > 0 ? message_ : q_; }
  int64_t OutgoingBits() const override;
  bool SparseOutgoing() const override { return vq_samples_ == 0 && top_k_ > 0 && top_k_ < q_.size(); }
  int OutgoingVqSamples() const override { return vq_samples_; }
  void Advance(const std::vector<const Vec*>& inbox) override;
  int64_t iteration() const override { return iteration_; }
  const Vec& Model() const override { return x_; }
  AlgorithmCounters counters() const override;
  // Checkpoints hold x (after this iteration's gradient step), q, the public copies of the node
  // and of each neighbour, and the gradient oracle's engine.
  bool SaveState(AlgorithmState* state) const override;
  void LoadState(const AlgorithmState& state) override;

 private:
  // Gradient step and the compressed difference q for the coming exchange.
  void Prepare();
  // The compressed difference q of diff_ = x - xhat_self (and, with vq, its message).
  void Compress();
  // With vq: a neighbour's message [norm, S codes] decoded into *q; throws std::invalid_argument
  // on a malformed one (the daemon's wire has checked every field: never from the network).
  void DecodeMessage(const Vec& message, Vec* q) const;

  NodeSetup setup_;
  ScheduledStep step_;  // t = iteration_ (Prepare: the gradient step of iteration_ + 1)
  double gamma_;
  int top_k_;
  int vq_samples_;
  GradientOracle oracle_;
  int64_t iteration_ = 0;
  Vec x_, grad_, q_, diff_;
  Vec message_;   // with vq: [norm, S codes], the payload
  Vec decoded_;   // with vq: a neighbour's q
  Vec xhat_self_;
  std::vector<Vec> xhat_neighbors_;  // in NodeSetup::neighbors order
  std::vector<Eigen::Index> order_;
};

}  // namespace starling::algorithms
