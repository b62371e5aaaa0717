// What every SwarmSGD variant shares (docs/explanations/algorithms/swarmsgd.md): local mini-batch
// SGD steps, the exchange cadence (an offer after H local steps) and the staleness bound (2H), the
// offers kept for late replies, the counters, and the common part of a checkpoint. The variants
// (full precision, lattice codes, top-k with public copies) differ only in what an exchange sends
// and how the two sides merge.
//
// Tail averaging (--tail-average F, Polyak-Ruppert): with F > 0 the node also keeps the mean of
// its model after each of its own local steps numbered T - m + 1, T - m + 2, ... (T =
// --iterations, m = round(F T), at least 1), the model after a step including every merge made
// since the step before; steps past T (the simulator's nodes may do a few more) are averaged too.
// From the first such step on, ReportedModel() is that mean: the node's telemetry, its dense
// curve and its final model. Exchanges still send and merge the live model x_, so merges keep
// the sum of the live models as before; the end phase's merges (after the node's last step)
// move only x_, not the mean, which is fixed at the node's last step. Hence the network's
// reported x-bar is (1/N) sum_i mean_i = (1/m) sum_k (1/N) sum_i x_i(k), x_i(k) node i's model
// after its k-th step: the time average of the network's mean over the last m steps when the
// nodes step in lockstep (tests/swarm_tail_average_test.cc).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>

#include "algorithms/algorithm_state.h"
#include "algorithms/data/block_cyclic.h"
#include "algorithms/pairwise/counters_state.h"
#include "algorithms/pairwise/external_steps.h"
#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/pairwise/push_sum_share.h"
#include "algorithms/problems/gradient_oracle.h"
#include "algorithms/schedule/step_schedule.h"

namespace starling::algorithms {

// Offer: the variant's record of one offer; it must have a `uint64_t seq` member.
template <class Offer>
class SwarmSgdBase : public PairwiseAlgorithm, public TakesExternalSteps {
 public:
  std::string name() const override { return "swarmsgd"; }

  // The C ABI's step (external_steps.h): LocalStep with the caller's model for the gradient step.
  void ExternalStep(const Vec& x) override {
    x_ = x;
    ++since_exchange_;
    ++since_merge_;
    ++counters_.local_steps;
    AddToTail();
  }

  // On block-cyclic data (NodeSetup::block_rows) local step t draws from the rows of its block
  // only (algorithms/data/block_cyclic.h), t = counters_.local_steps.
  void LocalStep() override {
    if (blocks_.active()) {
      oracle_.ComputeOn(x_, setup_.block_rows[BlockOfStep(blocks_, counters_.local_steps)], &grad_);
    } else {
      oracle_.Compute(x_, &grad_);
    }
    x_.noalias() -= step_.At(counters_.local_steps) * grad_;
    ++since_exchange_;
    ++since_merge_;
    ++counters_.local_steps;
    AddToTail();
  }

  // Averages the model after each local step numbered above iterations - round(fraction *
  // iterations) (at least the last one); fraction 0 turns it off. Call before the first step.
  // Throws std::invalid_argument naming --tail-average for a fraction outside [0, 1] or an
  // unknown budget (iterations <= 0).
  void AverageTail(int64_t iterations, double fraction) {
    if (!(fraction >= 0.0 && fraction <= 1.0)) {
      throw std::invalid_argument("--tail-average " + std::to_string(fraction) +
                                  ": must be in [0, 1]");
    }
    if (fraction == 0.0) {
      tail_from_ = -1;
      return;
    }
    if (iterations <= 0) {
      throw std::invalid_argument("--tail-average: needs the budget of local steps (--iterations)");
    }
    const int64_t m =
        std::max<int64_t>(1, std::llround(fraction * static_cast<double>(iterations)));
    tail_from_ = iterations - std::min(m, iterations);
  }
  // --merge-pace R (the daemon's pacing, PairwiseAlgorithm::merge_pace); 0 turns it off. Throws
  // std::invalid_argument naming --merge-pace for a negative or non-finite R.
  void PaceMerges(double merges_per_step) {
    if (!(merges_per_step >= 0.0 && std::isfinite(merges_per_step))) {
      throw std::invalid_argument("--merge-pace " + std::to_string(merges_per_step) +
                                  ": must be >= 0");
    }
    merge_pace_ = merges_per_step;
  }
  double merge_pace() const override { return merge_pace_; }
  // The tail mean once the tail has begun, else the live model.
  const Vec& ReportedModel() const override { return tail_count_ > 0 ? tail_mean_ : x_; }
  // Steps averaged so far (0 before the tail or without it).
  int64_t tail_count() const { return tail_count_; }
  bool WantsExchange() const override { return ended_ || since_exchange_ >= local_steps_; }
  void EndLocalSteps() override { ended_ = true; }
  bool ShouldWait() const override { return since_merge_ >= 2 * local_steps_; }
  void AbortExchange(bool may_still_reply) override {
    if (!outstanding_) return;
    outstanding_ = false;
    ++counters_.exchanges_aborted;
    if (!may_still_reply) offers_.pop_back();
  }
  bool exchange_outstanding() const override { return outstanding_; }
  const Vec& Model() const override { return x_; }
  // Push-sum shares (push_sum_share.h): kept here for every variant; a variant whose merges use
  // ShareCoefficient and CommitShare says so by KeepsShares.
  double share() const override { return share_; }
  void SetPartnerShare(double w) override {
    if (!KeepsShares()) PairwiseAlgorithm::SetPartnerShare(w);
    ShareMergeCoefficient(share_, w);  // checks w
    partner_share_ = w;
  }
  void AbsorbShare(const Vec& x, double w) override {
    if (!KeepsShares()) PairwiseAlgorithm::AbsorbShare(x, w);
    AbsorbLeaverShare(x, w, &x_, &share_);
  }
  double GiveHalfShare() override {
    if (!KeepsShares()) return PairwiseAlgorithm::GiveHalfShare();
    share_ *= 0.5;
    return share_;
  }
  void AdoptShare(const Vec& x, double w) override {
    if (!KeepsShares()) PairwiseAlgorithm::AdoptShare(x, w);
    if (x.size() != x_.size()) throw std::invalid_argument("AdoptShare: wrong dimension");
    ShareMergeCoefficient(w, w);  // checks w
    x_ = x;
    share_ = w;
  }
  PairwiseCounters counters() const override {
    PairwiseCounters c = counters_;
    c.gradient_passes = oracle_.passes();
    return c;
  }

 protected:
  SwarmSgdBase(const NodeSetup& setup, ScheduledStep step, int batch_size, int local_steps)
      : setup_(setup),
        step_(step),
        local_steps_(local_steps),
        oracle_(setup.problem, batch_size, setup.seed),
        blocks_(BlockCyclicOf(setup)),
        x_(setup.x0) {}

  // Makes `offer` the outstanding one, keeping at most kKeptOfferSnapshots older ones.
  void KeepOffer(Offer offer) {
    if (outstanding_) throw std::logic_error("SwarmSGD: an exchange is already outstanding");
    if (offers_.size() > kKeptOfferSnapshots) offers_.pop_front();
    offers_.push_back(std::move(offer));
    outstanding_ = true;
  }
  // The kept offer `seq` (outstanding or abandoned), or null if it is no longer kept.
  Offer* FindOffer(uint64_t seq) {
    for (Offer& o : offers_) {
      if (o.seq == seq) return &o;
    }
    return nullptr;
  }
  // Forgets offer `seq` once its reply has been handled. `merged`: the reply was merged as
  // initiator, which restarts the cadence and the staleness count; otherwise (a failure) the
  // node still wants an exchange.
  void FinishOffer(uint64_t seq, bool merged) {
    for (auto it = offers_.begin(); it != offers_.end(); ++it) {
      if (it->seq != seq) continue;
      if (outstanding_ && std::next(it) == offers_.end()) outstanding_ = false;
      offers_.erase(it);
      break;
    }
    if (merged) {
      ++counters_.exchanges_initiated;
      since_exchange_ = 0;
      since_merge_ = 0;
    }
  }
  // The merge's coefficient: 1/2 without a partner's share, else ShareMergeCoefficient.
  double ShareCoefficient() const {
    return partner_share_ > 0.0 ? ShareMergeCoefficient(share_, partner_share_) : 0.5;
  }
  // After a merge: the share becomes MergedShare with the partner's, which is then forgotten.
  void CommitShare() {
    if (partner_share_ > 0.0) share_ = MergedShare(share_, partner_share_);
    partner_share_ = 0.0;
  }
  // After a merge that was refused or found no snapshot: the share stays, the partner's is
  // forgotten.
  void ForgetPartnerShare() { partner_share_ = 0.0; }
  // After merging as responder.
  void NoteServed() {
    ++counters_.exchanges_served;
    since_merge_ = 0;
  }

  // Checkpoints: the shared state under the variant's `layout` name, first in ints, reals,
  // vectors and texts; the variant appends its own ints and vectors after it. LoadCommon checks
  // the shape (kCommonInts + extra_ints, 1 + extra_vectors) and drops every kept offer: their
  // partners' replies will find no snapshot.
  // With the tail average on, SaveTail appends its count and mean after the variant's own ints
  // and vectors (the last of each), so the variants' indices stay as they are.
  static constexpr size_t kCommonInts = 8;
  void SaveTail(AlgorithmState* s) const {
    if (tail_from_ < 0) return;
    s->ints.push_back(tail_count_);
    s->vectors.push_back(tail_count_ > 0 ? tail_mean_ : Vec::Zero(x_.size()));
  }
  void SaveCommon(const std::string& layout, AlgorithmState* s) const {
    *s = AlgorithmState();
    s->algorithm = layout;
    s->ints = {since_exchange_, since_merge_};
    AppendCounterInts(counters_, &s->ints);
    s->reals = {oracle_.passes()};
    s->vectors = {x_};
    s->texts = {oracle_.SaveEngine()};
  }
  void LoadCommon(const std::string& layout, const AlgorithmState& s, size_t extra_ints,
                  size_t extra_vectors) {
    const size_t tail = tail_from_ >= 0 ? 1 : 0;
    CheckStateShape(s, layout, kCommonInts + extra_ints + tail, 1, 1 + extra_vectors + tail, 1);
    for (const Vec& v : s.vectors) {
      if (v.size() != x_.size()) throw std::invalid_argument("checkpoint: wrong dimension");
    }
    since_exchange_ = static_cast<int>(s.ints[0]);
    since_merge_ = static_cast<int>(s.ints[1]);
    ReadCounterInts(s.ints, 2, &counters_);
    x_ = s.vectors[0];
    oracle_.LoadEngine(s.texts[0], s.reals[0]);
    offers_.clear();
    outstanding_ = false;
    tail_count_ = tail > 0 ? s.ints.back() : 0;
    if (tail_count_ < 0) throw std::invalid_argument("checkpoint: negative tail-average count");
    tail_mean_ = tail_count_ > 0 ? s.vectors.back() : Vec();
  }

  NodeSetup setup_;
  ScheduledStep step_;  // t = counters_.local_steps, which checkpoints keep
  int local_steps_;
  GradientOracle oracle_;
  BlockCyclicSpec blocks_;
  Vec x_, grad_;
  PairwiseCounters counters_;  // gradient_passes comes from the oracle

 private:
  // The running mean: after step k of the tail, mean += (x - mean) / k.
  void AddToTail() {
    if (tail_from_ < 0 || counters_.local_steps <= tail_from_) return;
    ++tail_count_;
    if (tail_count_ == 1) {
      tail_mean_ = x_;
    } else {
      tail_mean_.noalias() += (x_ - tail_mean_) / static_cast<double>(tail_count_);
    }
  }

  std::deque<Offer> offers_;  // the outstanding one (back) and abandoned ones, oldest first
  bool outstanding_ = false;
  int since_exchange_ = 0;
  int since_merge_ = 0;
  int64_t tail_from_ = -1;  // steps numbered above it are averaged; -1: no tail average
  int64_t tail_count_ = 0;
  Vec tail_mean_;
  double share_ = 1.0;          // push-sum share (not checkpointed: a restored node holds 1)
  double partner_share_ = 0.0;  // the next merge's partner share; 0 = equal to share_
  double merge_pace_ = 0.0;     // --merge-pace (not checkpointed: it comes with the run's options)
  bool ended_ = false;  // EndLocalSteps: every exchange is wanted (not checkpointed: the daemon
                        // calls it again when a resumed node has done its budget)
};

}  // namespace starling::algorithms
