#include "algorithms/swarm_sgd.h"

#include <iterator>
#include <stdexcept>

namespace starling::algorithms {

SwarmSgd::SwarmSgd(const NodeSetup& setup, double step, int batch_size, int local_steps)
    : setup_(setup),
      step_(step),
      local_steps_(local_steps),
      oracle_(setup.problem, batch_size, setup.seed),
      x_(setup.x0) {}

void SwarmSgd::LocalStep() {
  oracle_.Compute(x_, &grad_);
  x_.noalias() -= step_ * grad_;
  ++since_exchange_;
  ++since_merge_;
  ++counters_.local_steps;
}

const Vec& SwarmSgd::BeginExchange(int /*peer*/, uint64_t seq) {
  if (outstanding_) throw std::logic_error("SwarmSgd: an exchange is already outstanding");
  if (offers_.size() > kKeptOfferSnapshots) offers_.pop_front();
  offers_.emplace_back(seq, x_);
  outstanding_ = true;
  counters_.bits_sent += 64 * x_.size();
  return offers_.back().second;
}

bool SwarmSgd::CompleteExchange(uint64_t seq, const Vec& their_snapshot) {
  for (auto it = offers_.begin(); it != offers_.end(); ++it) {
    if (it->first != seq) continue;
    // X_i <- (S_i + S_j)/2 + (X_i - S_i) = X_i + (S_j - S_i)/2.
    x_.noalias() += 0.5 * (their_snapshot - it->second);
    const bool was_outstanding = outstanding_ && std::next(it) == offers_.end();
    offers_.erase(it);
    if (was_outstanding) outstanding_ = false;
    since_exchange_ = 0;
    since_merge_ = 0;
    ++counters_.exchanges_initiated;
    return true;
  }
  return false;
}

void SwarmSgd::AbortExchange(bool may_still_reply) {
  if (!outstanding_) return;
  outstanding_ = false;
  ++counters_.exchanges_aborted;
  if (!may_still_reply) offers_.pop_back();
}

const Vec& SwarmSgd::Respond(int /*peer*/, const Vec& their_snapshot) {
  reply_snapshot_ = x_;
  // X_j <- (S_i + S_j)/2, computed as X_j + (S_i - S_j)/2: the exact negative of the
  // initiator's change, so the sum of models is conserved.
  x_.noalias() += 0.5 * (their_snapshot - reply_snapshot_);
  ++counters_.exchanges_served;
  since_merge_ = 0;
  counters_.bits_sent += 64 * reply_snapshot_.size();
  return reply_snapshot_;
}

PairwiseCounters SwarmSgd::counters() const {
  PairwiseCounters c = counters_;
  c.gradient_passes = oracle_.passes();
  return c;
}

bool SwarmSgd::SaveState(AlgorithmState* s) const {
  *s = AlgorithmState();
  s->algorithm = name();
  s->ints = {since_exchange_, since_merge_, counters_.local_steps, counters_.exchanges_initiated,
             counters_.exchanges_served, counters_.exchanges_aborted, counters_.bits_sent};
  s->reals = {oracle_.passes()};
  s->vectors = {x_};
  s->texts = {oracle_.SaveEngine()};
  return true;
}

void SwarmSgd::LoadState(const AlgorithmState& s) {
  CheckStateShape(s, name(), 7, 1, 1, 1);
  if (s.vectors[0].size() != x_.size()) throw std::invalid_argument("checkpoint: wrong dimension");
  since_exchange_ = static_cast<int>(s.ints[0]);
  since_merge_ = static_cast<int>(s.ints[1]);
  counters_.local_steps = s.ints[2];
  counters_.exchanges_initiated = s.ints[3];
  counters_.exchanges_served = s.ints[4];
  counters_.exchanges_aborted = s.ints[5];
  counters_.bits_sent = s.ints[6];
  x_ = s.vectors[0];
  oracle_.LoadEngine(s.texts[0], s.reals[0]);
  offers_.clear();
  outstanding_ = false;
}

}  // namespace starling::algorithms
