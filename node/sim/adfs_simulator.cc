#include "node/sim/adfs_simulator.h"

#include <algorithm>
#include <stdexcept>

namespace starling::node {

AdfsSimulator::AdfsSimulator(const std::vector<algorithms::NodeSetup>& nodes,
                             const algorithms::PairwiseOptions& options, uint64_t seed)
    : nodes_(nodes), rng_(seed) {
  if (nodes.empty()) throw std::invalid_argument("simulator needs at least one node");
  if (options.algorithm != "adfs") throw std::invalid_argument("AdfsSimulator runs adfs only");
  for (const auto& setup : nodes) {
    auto a = algorithms::MakePairwiseAlgorithm(options, setup);
    algorithms_.emplace_back(static_cast<algorithms::Adfs*>(a.release()));
    algorithms_.back()->SetCommonTime();  // the common time of the event order needs no bound
  }
}

int64_t AdfsSimulator::Activate() {
  size_t i = 0;
  for (size_t k = 1; k < algorithms_.size(); ++k) {
    if (algorithms_[k]->NextEventTime() < algorithms_[i]->NextEventTime()) i = k;
  }
  algorithms::Adfs& a = *algorithms_[i];
  const auto& neighbors = nodes_[i].neighbors;
  if (!a.WantsExchange() || neighbors.empty()) {
    a.LocalStep();
    ++total_local_steps_;
    return 1;
  }
  const int j = neighbors[rng_() % neighbors.size()];
  const uint64_t seq = next_seq_++;
  const std::shared_ptr<const Vec> offer = a.BeginExchange(j, seq);  // at its event time
  algorithms_[j]->AdvanceTo(a.now());
  const std::shared_ptr<const Vec> reply = algorithms_[j]->Respond(static_cast<int>(i), *offer);
  a.CompleteExchange(seq, *reply);
  ++exchanges_;
  return 0;
}

void AdfsSimulator::RunUntilLocalSteps(int64_t steps_per_node) {
  const int64_t target = steps_per_node * num_nodes();
  while (total_local_steps_ < target) Activate();
}

double AdfsSimulator::LatestTime() const {
  double t = 0;
  for (const auto& a : algorithms_) t = std::max(t, a->now());
  return t;
}

void AdfsSimulator::AdvanceAllTo(double t) {
  t = std::max(t, LatestTime());
  for (auto& a : algorithms_) a->AdvanceTo(t);
}

int64_t AdfsSimulator::bytes_sent() const {
  int64_t bits = 0;
  for (const auto& a : algorithms_) bits += a->counters().bits_sent;
  return bits / 8;
}

ModelSpread AdfsSimulator::Spread() const {
  std::vector<const Vec*> models;
  for (const auto& a : algorithms_) models.push_back(&a->Model());
  return SpreadOf(models);
}

}  // namespace starling::node
