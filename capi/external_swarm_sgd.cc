#include "capi/external_swarm_sgd.h"

#include <stdexcept>

namespace starling::capi {

namespace {
constexpr char kLayout[] = "swarmsgd-external";
}  // namespace

ExternalSwarmSgd::ExternalSwarmSgd(const Vec& x0, int local_steps, StepHandover* handover)
    : local_steps_(local_steps), handover_(handover), x_(x0) {
  if (local_steps < 1) throw std::invalid_argument("--local-steps: must be >= 1");
}

void ExternalSwarmSgd::LocalStep() {
  handover_->Take(&x_);
  ++since_exchange_;
  ++since_merge_;
  ++counters_.local_steps;
  handover_->Publish(counters_);
}

void ExternalSwarmSgd::EndLocalSteps() {
  ended_ = true;
  handover_->EndSteps();
}

std::shared_ptr<const Vec> ExternalSwarmSgd::BeginExchange(int /*peer*/, uint64_t seq) {
  if (outstanding_) throw std::logic_error("SwarmSGD: an exchange is already outstanding");
  std::shared_ptr<Vec> snapshot = snapshots_.Take();
  *snapshot = x_;
  if (offers_.size() > algorithms::kKeptOfferSnapshots) offers_.pop_front();
  offers_.push_back({seq, snapshot});
  outstanding_ = true;
  counters_.bits_sent += 64 * x_.size();
  return snapshot;
}

void ExternalSwarmSgd::Merge(const Vec& delta) {
  x_ += delta;
  handover_->AddDelta(delta);
}

bool ExternalSwarmSgd::CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& their_snapshot) {
  for (auto it = offers_.begin(); it != offers_.end(); ++it) {
    if (it->seq != seq) continue;
    // X_i <- X_i + (S_j - S_i)/2: the average of the snapshots plus the progress since.
    delta_ = 0.5 * (their_snapshot - *it->snapshot);
    Merge(delta_);
    if (outstanding_ && std::next(it) == offers_.end()) outstanding_ = false;
    offers_.erase(it);
    ++counters_.exchanges_initiated;
    since_exchange_ = since_merge_ = 0;
    handover_->Publish(counters_);
    return true;
  }
  return false;
}

void ExternalSwarmSgd::AbortExchange(bool may_still_reply) {
  if (!outstanding_) return;
  outstanding_ = false;
  ++counters_.exchanges_aborted;
  if (!may_still_reply) offers_.pop_back();
  handover_->Publish(counters_);
}

std::shared_ptr<const Vec> ExternalSwarmSgd::Respond(int /*peer*/,
                                                     const Eigen::Ref<const Vec>& their_snapshot) {
  std::shared_ptr<Vec> snapshot = snapshots_.Take();
  *snapshot = x_;
  // X_j <- X_j + (S_i - S_j)/2: the exact negative of the initiator's change.
  delta_ = 0.5 * (their_snapshot - *snapshot);
  Merge(delta_);
  ++counters_.exchanges_served;
  since_merge_ = 0;
  counters_.bits_sent += 64 * snapshot->size();
  handover_->Publish(counters_);
  return snapshot;
}

bool ExternalSwarmSgd::SaveState(algorithms::AlgorithmState* s) const {
  *s = algorithms::AlgorithmState();
  s->algorithm = kLayout;
  s->ints = {since_exchange_,
             since_merge_,
             counters_.local_steps,
             counters_.exchanges_initiated,
             counters_.exchanges_served,
             counters_.exchanges_aborted,
             counters_.bits_sent};
  s->vectors = {x_};
  return true;
}

void ExternalSwarmSgd::LoadState(const algorithms::AlgorithmState& s) {
  algorithms::CheckStateShape(s, kLayout, 7, 0, 1, 0);
  if (s.vectors[0].size() != x_.size()) {
    throw std::invalid_argument("checkpoint: a model of " + std::to_string(s.vectors[0].size()) +
                                " values, the buffer has " + std::to_string(x_.size()));
  }
  since_exchange_ = s.ints[0];
  since_merge_ = s.ints[1];
  counters_.local_steps = s.ints[2];
  counters_.exchanges_initiated = s.ints[3];
  counters_.exchanges_served = s.ints[4];
  counters_.exchanges_aborted = s.ints[5];
  counters_.bits_sent = s.ints[6];
  x_ = s.vectors[0];
  offers_.clear();
  outstanding_ = false;
  handover_->SetResumed(x_);
  handover_->Publish(counters_);
}

}  // namespace starling::capi
