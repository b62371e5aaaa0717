#include "node/sim/faulty_pairwise_simulator.h"

#include <cmath>
#include <memory>
#include <stdexcept>

namespace starling::node {

FaultyPairwiseSimulator::FaultyPairwiseSimulator(const std::vector<algorithms::NodeSetup>& nodes,
                                                 const algorithms::PairwiseOptions& options,
                                                 uint64_t seed, const net::FaultPlan& plan)
    : nodes_(nodes), rng_(seed), picker_(nodes.size()) {
  if (nodes.empty()) throw std::invalid_argument("simulator needs at least one node");
  for (const auto& setup : nodes) {
    algorithms_.push_back(algorithms::MakePairwiseAlgorithm(options, setup));
    injectors_.emplace_back(plan, static_cast<uint64_t>(setup.id));
  }
  drift_ = Vec::Zero(algorithms_[0]->Model().size());
}

void FaultyPairwiseSimulator::Merge(const Reply& reply) {
  auto& a = *algorithms_[reply.initiator];
  before_ = a.Model();
  if (a.CompleteExchange(reply.seq, reply.snapshot)) {
    drift_ += a.Model() - before_;
    ++counters_.merged_late;
  } else if (reply.duplicate) {
    ++counters_.duplicate_replies_dropped;
  } else {
    ++counters_.stale_replies_dropped;
  }
}

void FaultyPairwiseSimulator::DeliverDue() {
  while (!in_flight_.empty() && in_flight_.begin()->first <= now_) {
    auto entry = in_flight_.extract(in_flight_.begin());
    Merge(entry.mapped());
  }
}

int64_t FaultyPairwiseSimulator::Activate() {
  ++now_;
  DeliverDue();
  const double now_s = static_cast<double>(now_) / 1000.0;
  const size_t i = picker_.Pick(rng_);
  auto& a = *algorithms_[i];
  int64_t steps = 0;
  do {
    a.LocalStep();
    ++steps;
  } while (!a.WantsExchange());
  total_local_steps_ += steps;
  const auto& neighbors = nodes_[i].neighbors;
  if (neighbors.empty()) return steps;
  const int j = neighbors[rng_() % neighbors.size()];
  const uint64_t seq = next_seq_++;
  const std::shared_ptr<const Vec> offer = a.BeginExchange(j, seq);
  ++counters_.exchanges_started;

  const net::FaultDecision request = injectors_[i].Decide(static_cast<int>(i), j, now_s);
  if (request.drop) {
    ++counters_.requests_lost;
    a.AbortExchange(/*may_still_reply=*/true);  // the offer times out
    return steps;
  }
  // The responder's driver drops the second copy of a duplicated request.
  if (request.copies > 1) ++counters_.duplicate_requests_dropped;
  auto& b = *algorithms_[j];
  before_ = b.Model();
  // A copy: replies wait in in_flight_ (as the network would hold them).
  const Vec reply = *b.Respond(static_cast<int>(i), *offer);
  drift_ += b.Model() - before_;

  const net::FaultDecision answer = injectors_[j].Decide(j, static_cast<int>(i), now_s);
  if (answer.drop) {
    ++counters_.replies_lost;
    a.AbortExchange(/*may_still_reply=*/true);
    return steps;
  }
  const int64_t latency = static_cast<int64_t>(std::llround(request.delay + answer.delay)) +
                          (request.hold || answer.hold ? 1 : 0);
  if (latency <= 0) {
    before_ = a.Model();
    a.CompleteExchange(seq, reply);
    drift_ += a.Model() - before_;
    ++counters_.merged_at_once;
    if (answer.copies > 1) {
      in_flight_.emplace(now_, Reply{static_cast<int>(i), seq, reply, true});
    }
  } else {
    // The initiator's offer times out before the reply arrives; the snapshot stays kept.
    a.AbortExchange(/*may_still_reply=*/true);
    for (int c = 0; c < answer.copies; ++c) {
      in_flight_.emplace(now_ + latency, Reply{static_cast<int>(i), seq, reply, c > 0});
    }
  }
  return steps;
}

void FaultyPairwiseSimulator::RunUntilLocalSteps(int64_t local_steps_per_node) {
  const int64_t target = local_steps_per_node * num_nodes();
  while (total_local_steps_ < target) Activate();
  Drain();
}

void FaultyPairwiseSimulator::Drain() {
  while (!in_flight_.empty()) {
    now_ = in_flight_.begin()->first;
    DeliverDue();
  }
}

int64_t FaultyPairwiseSimulator::bytes_sent() const {
  int64_t bits = 0;
  for (const auto& a : algorithms_) bits += a->counters().bits_sent;
  return bits / 8;
}

FaultyPairwiseCounters FaultyPairwiseSimulator::counters() const {
  FaultyPairwiseCounters c = counters_;
  for (const auto& inj : injectors_) c.faults += inj.counters();
  return c;
}

ModelSpread FaultyPairwiseSimulator::Spread() const {
  std::vector<const Vec*> models;
  for (const auto& a : algorithms_) models.push_back(&a->ReportedModel());
  return SpreadOf(models);
}

}  // namespace starling::node
