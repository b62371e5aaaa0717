#include "node/sim/round_simulator.h"

#include <stdexcept>

namespace starling::node {

RoundSimulator::RoundSimulator(const std::vector<algorithms::NodeSetup>& nodes,
                               const algorithms::RoundOptions& options)
    : nodes_(nodes) {
  if (nodes.empty()) throw std::invalid_argument("simulator needs at least one node");
  for (const auto& setup : nodes) {
    algorithms_.push_back(algorithms::MakeRoundAlgorithm(options, setup));
  }
  outbox_.resize(nodes.size());
}

void RoundSimulator::Step() {
  const algorithms::StepKey key = algorithms_[0]->key();
  for (size_t i = 0; i < algorithms_.size(); ++i) {
    if (algorithms_[i]->key() != key) {
      throw std::logic_error("lockstep broken: node " + std::to_string(i) + " is at " +
                             algorithms_[i]->key().ToString() + ", node 0 at " + key.ToString());
    }
    outbox_[i] = algorithms_[i]->Outgoing();
    const int64_t degree = static_cast<int64_t>(nodes_[i].neighbors.size());
    messages_sent_ += degree;
    bytes_sent_ += degree * algorithms_[i]->OutgoingBits() / 8;
  }
  for (size_t i = 0; i < algorithms_.size(); ++i) {
    inbox_.clear();
    for (int j : nodes_[i].neighbors) inbox_.push_back(&outbox_[j]);
    algorithms_[i]->Advance(inbox_);
  }
}

void RoundSimulator::RunUntilIteration(int64_t iterations) {
  while (iteration() < iterations) Step();
}

ModelSpread RoundSimulator::Spread() const {
  std::vector<const Vec*> models;
  for (const auto& a : algorithms_) models.push_back(&a->Model());
  return SpreadOf(models);
}

}  // namespace starling::node
