#include "node/sim/dadao_simulator.h"

#include <stdexcept>

namespace starling::node {

DadaoSimulator::DadaoSimulator(const std::vector<algorithms::NodeSetup>& nodes,
                               const algorithms::PairwiseOptions& options, uint64_t seed)
    : nodes_(nodes), rng_(seed) {
  if (nodes.empty()) throw std::invalid_argument("simulator needs at least one node");
  if (options.algorithm != "dadao") throw std::invalid_argument("DadaoSimulator runs dadao only");
  for (const auto& setup : nodes) {
    auto a = algorithms::MakePairwiseAlgorithm(options, setup);
    algorithms_.emplace_back(static_cast<algorithms::Dadao*>(a.release()));
    algorithms_.back()->SetMaxSkew(0);  // the common time of the event order needs no bound
  }
}

int64_t DadaoSimulator::Activate() {
  size_t i = 0;
  for (size_t k = 1; k < algorithms_.size(); ++k) {
    if (algorithms_[k]->NextEventTime() < algorithms_[i]->NextEventTime()) i = k;
  }
  algorithms::Dadao& a = *algorithms_[i];
  const auto& neighbors = nodes_[i].neighbors;
  if (!a.WantsExchange() || neighbors.empty()) {
    a.LocalStep();
    ++total_local_steps_;
    return 1;
  }
  const int j = neighbors[rng_() % neighbors.size()];
  const uint64_t seq = next_seq_++;
  const double t = a.NextEventTime();
  const std::shared_ptr<const Vec> offer = a.BeginExchange(j, seq);
  algorithms_[j]->AdvanceTo(t);
  const std::shared_ptr<const Vec> reply = algorithms_[j]->Respond(static_cast<int>(i), *offer);
  a.CompleteExchange(seq, *reply);
  ++exchanges_;
  return 0;
}

void DadaoSimulator::RunUntilLocalSteps(int64_t gradients_per_node) {
  const int64_t target = gradients_per_node * num_nodes();
  while (total_local_steps_ < target) Activate();
}

int64_t DadaoSimulator::bytes_sent() const {
  int64_t bits = 0;
  for (const auto& a : algorithms_) bits += a->counters().bits_sent;
  return bits / 8;
}

ModelSpread DadaoSimulator::Spread() const {
  std::vector<const Vec*> models;
  for (const auto& a : algorithms_) models.push_back(&a->Model());
  return SpreadOf(models);
}

}  // namespace starling::node
