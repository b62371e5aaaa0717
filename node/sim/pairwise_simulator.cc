#include "node/sim/pairwise_simulator.h"

#include <stdexcept>

namespace starling::node {

PairwiseSimulator::PairwiseSimulator(const std::vector<algorithms::NodeSetup>& nodes,
                                     const algorithms::PairwiseOptions& options, uint64_t seed)
    : nodes_(nodes), rng_(seed), picker_(nodes.size()) {
  if (nodes.empty()) throw std::invalid_argument("simulator needs at least one node");
  for (const auto& setup : nodes) {
    algorithms_.push_back(algorithms::MakePairwiseAlgorithm(options, setup));
  }
}

int64_t PairwiseSimulator::Activate() {
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
  const std::shared_ptr<const Vec> reply = algorithms_[j]->Respond(static_cast<int>(i), *offer);
  a.CompleteExchange(seq, *reply);
  ++exchanges_;
  return steps;
}

void PairwiseSimulator::RunUntilLocalSteps(int64_t local_steps_per_node) {
  const int64_t target = local_steps_per_node * num_nodes();
  while (total_local_steps_ < target) Activate();
}

int64_t PairwiseSimulator::bytes_sent() const {
  int64_t bits = 0;
  for (const auto& a : algorithms_) bits += a->counters().bits_sent;
  return bits / 8;
}

ModelSpread PairwiseSimulator::Spread() const {
  std::vector<const Vec*> models;
  for (const auto& a : algorithms_) models.push_back(&a->ReportedModel());
  return SpreadOf(models);
}

}  // namespace starling::node
