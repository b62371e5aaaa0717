// ASY-SONATA: asynchronous gradient tracking with the robust running-sum push (Tian, Sun,
// Scutari, arXiv:1803.10359, IEEE TAC 2020; loop as in MidoAssran/maopy
// asy_sonata.py and robust_push_gossip.py), mapped onto pairwise exchanges.
//
// Node i holds its model x_i, its tracker y_i (of the network's gradient), the gradient g_i it
// last computed and, for every neighbour j, the cumulative mass it has pushed to j
// (sigma_{i->j}, with a version that counts its pushes) and the newest cumulative mass it has
// received from j (rho_{j->i}, with its version).
//
//  - Local step (full local gradient, so the method is exact: it converges to the optimum with a
//    constant step): g = grad f_i(x_i); y_i += g - g_i; g_i = g; x_i -= gamma * y_i.
//    The gradient is taken at the current x_i, i.e. after the pulls merged since the last step
//    (A4's step 3, deferred to the next step so that each step costs one gradient).
//  - Exchange (one request/reply on edge (i, j)): each side, when it sends (the initiator at its
//    offer, the responder at its reply), pushes half of its tracker: sigma_{i->j} += y_i / 2,
//    y_i -= y_i / 2, and sends (x_i, sigma_{i->j}, version). The receiver adds
//    sigma_newest - rho_last_seen to its tracker, and only for a version newer than the last
//    one it saw: a lost message is absorbed by the next one on that edge (its sum is
//    cumulative), a duplicated or reordered old one adds nothing. Pull weights: each side
//    replaces x by the average of its current x and the x it received (x_i <- (x_i + x_j)/2:
//    row-stochastic whatever is lost; in a lossless exchange with no step in between, both end
//    at the pair's average). With no loss the tracker push is the pair's average too
//    (doubly stochastic), so no push-sum weight is needed: with a row-stochastic pull and a
//    column-stochastic push the fixed point has x_i = x* for all i (Push-Pull / AB form).
//
// Invariant (the unit to test, under loss, duplication and reordering):
//   sum_i y_i + sum over directed edges (sigma_{i->j} - rho_{i->j at j}) = sum_i g_i,
// where g_i = grad f_i(GradientPoint()) once node i has stepped (0 before). The edge terms are the
// mass in flight; they vanish once every edge has carried one message each way after the last push.
//
// Message (MessageSize(d) = 3d doubles, three blocks of d: every payload on the wire has the
// run's dimension): [x | sigma | version, 0, ..., 0]. A version that is not a non-negative
// integer below 2^53 makes the sigma part ignored (counted in decode_failures); the transport
// has already refused NaN and Inf. (The version's block costs d - 1 doubles of padding per
// message: the price of keeping the transport's one-dimension rule.)
//
// Limits: full precision only (--compression none). A node resumed from a checkpoint has the
// tracker and push sums of the checkpoint: mass it pushed or absorbed after the checkpoint is
// counted twice or lost, so the invariant (and exactness) hold only up to that mass.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/pairwise/snapshot_pool.h"

namespace starling::algorithms {

class AsySonata : public PairwiseAlgorithm {
 public:
  AsySonata(const NodeSetup& setup, ScheduledStep step, int local_steps);

  static int MessageSize(int dim) { return 3 * dim; }

  std::string name() const override { return "asy-sonata"; }
  void LocalStep() override;
  bool WantsExchange() const override { return ended_ || since_exchange_ >= local_steps_; }
  bool ShouldWait() const override { return since_merge_ >= 2 * local_steps_; }
  void EndLocalSteps() override { ended_ = true; }

  std::shared_ptr<const Vec> BeginExchange(int peer, uint64_t seq) override;
  bool CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& their_message) override;
  void AbortExchange(bool may_still_reply) override;
  bool exchange_outstanding() const override { return outstanding_; }
  std::shared_ptr<const Vec> Respond(int peer, const Eigen::Ref<const Vec>& their_message) override;

  const Vec& Model() const override { return x_; }
  PairwiseCounters counters() const override { return counters_; }
  bool SaveState(AlgorithmState* state) const override;
  void LoadState(const AlgorithmState& state) override;

  // For tests of the invariant (above).
  const Vec& Tracker() const { return y_; }
  const Vec& LastGradient() const { return g_; }
  const Vec& GradientPoint() const { return x_at_g_; }
  // Cumulative mass pushed to / newest received from neighbour `peer` (a node id).
  const Vec& PushedTo(int peer) const { return pushed_[Edge(peer)]; }
  const Vec& ReceivedFrom(int peer) const { return received_[Edge(peer)]; }

 private:
  struct Offer {
    uint64_t seq;
    int edge;  // index into the neighbour lists
  };
  int Edge(int peer) const;  // throws std::invalid_argument for a non-neighbour
  // Pushes half the tracker onto `edge` and returns the message (x, sigma, version).
  std::shared_ptr<const Vec> Push(int edge);
  // Absorbs the sigma part of a message from `edge` if it is newer than the last one seen.
  void Absorb(int edge, const Eigen::Ref<const Vec>& message);
  void CheckMessage(const Eigen::Ref<const Vec>& message) const;

  NodeSetup setup_;
  ScheduledStep step_;
  int local_steps_;
  int dim_;
  Vec x_, y_, g_, x_at_g_, grad_;
  std::vector<Vec> pushed_, received_;  // per edge, in setup_.neighbors order
  std::vector<int64_t> pushed_version_, received_version_;
  std::deque<Offer> offers_;  // the outstanding one (back) and abandoned ones, oldest first
  bool outstanding_ = false;
  int since_exchange_ = 0;
  int since_merge_ = 0;
  bool ended_ = false;
  PairwiseCounters counters_;
  SnapshotPool messages_;
};

}  // namespace starling::algorithms
