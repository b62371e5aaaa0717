// What every SwarmSGD variant shares (ALGORITHMS.md §4.3): local mini-batch SGD steps, the
// exchange cadence (an offer after H local steps) and the staleness bound (2H), the offers kept
// for late replies, the counters, and the common part of a checkpoint. The variants (full
// precision, lattice codes, top-k with public copies) differ only in what an exchange sends and
// how the two sides merge.
#pragma once

#include <cstdint>
#include <deque>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>

#include "algorithms/algorithm_state.h"
#include "algorithms/data/block_cyclic.h"
#include "algorithms/pairwise/external_steps.h"
#include "algorithms/pairwise/pairwise_algorithm.h"
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
  }
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
  // After merging as responder.
  void NoteServed() {
    ++counters_.exchanges_served;
    since_merge_ = 0;
  }

  // Checkpoints: the shared state under the variant's `layout` name, first in ints, reals,
  // vectors and texts; the variant appends its own ints and vectors after it. LoadCommon checks
  // the shape (kCommonInts + extra_ints, 1 + extra_vectors) and drops every kept offer: their
  // partners' replies will find no snapshot.
  static constexpr size_t kCommonInts = 8;
  void SaveCommon(const std::string& layout, AlgorithmState* s) const {
    *s = AlgorithmState();
    s->algorithm = layout;
    s->ints = {since_exchange_,
               since_merge_,
               counters_.local_steps,
               counters_.exchanges_initiated,
               counters_.exchanges_served,
               counters_.exchanges_aborted,
               counters_.bits_sent,
               counters_.decode_failures};
    s->reals = {oracle_.passes()};
    s->vectors = {x_};
    s->texts = {oracle_.SaveEngine()};
  }
  void LoadCommon(const std::string& layout, const AlgorithmState& s, size_t extra_ints,
                  size_t extra_vectors) {
    CheckStateShape(s, layout, kCommonInts + extra_ints, 1, 1 + extra_vectors, 1);
    for (const Vec& v : s.vectors) {
      if (v.size() != x_.size()) throw std::invalid_argument("checkpoint: wrong dimension");
    }
    since_exchange_ = static_cast<int>(s.ints[0]);
    since_merge_ = static_cast<int>(s.ints[1]);
    counters_.local_steps = s.ints[2];
    counters_.exchanges_initiated = s.ints[3];
    counters_.exchanges_served = s.ints[4];
    counters_.exchanges_aborted = s.ints[5];
    counters_.bits_sent = s.ints[6];
    counters_.decode_failures = s.ints[7];
    x_ = s.vectors[0];
    oracle_.LoadEngine(s.texts[0], s.reals[0]);
    offers_.clear();
    outstanding_ = false;
  }

  NodeSetup setup_;
  ScheduledStep step_;  // t = counters_.local_steps, which checkpoints keep
  int local_steps_;
  GradientOracle oracle_;
  BlockCyclicSpec blocks_;
  Vec x_, grad_;
  PairwiseCounters counters_;  // gradient_passes comes from the oracle

 private:
  std::deque<Offer> offers_;  // the outstanding one (back) and abandoned ones, oldest first
  bool outstanding_ = false;
  int since_exchange_ = 0;
  int since_merge_ = 0;
  bool ended_ = false;  // EndLocalSteps: every exchange is wanted (not checkpointed: the daemon
                        // calls it again when a resumed node has done its budget)
};

}  // namespace starling::algorithms
