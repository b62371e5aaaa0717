// Runs a pairwise algorithm (SwarmSGD) for N nodes in one process: a seeded sequence of random
// activations. At each activation a uniformly random node does local steps until it wants an
// exchange, picks a uniformly random neighbour, and the two exchange at once (the sequential
// model of docs/explanations/algorithms/swarmsgd.md). Deterministic for a given seed.
//
// Not thread-safe. The NodeSetups (and their problems) must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "node/report/model_spread.h"
#include "node/sim/activation_picker.h"

namespace starling::node {

class PairwiseSimulator {
 public:
  PairwiseSimulator(const std::vector<algorithms::NodeSetup>& nodes,
                    const algorithms::PairwiseOptions& options, uint64_t seed);

  // One activation; returns the number of local steps it took.
  // --slow-node: node i is activated with probability proportional to 1/factors[i]
  // (activation_picker.h). Default: uniformly.
  void SetSlowFactors(const std::vector<double>& factors) { picker_.SetSlowFactors(factors); }

  int64_t Activate();
  // Activates until the nodes have done `local_steps_per_node` local steps on average.
  void RunUntilLocalSteps(int64_t local_steps_per_node);

  int num_nodes() const { return static_cast<int>(algorithms_.size()); }
  const algorithms::PairwiseAlgorithm& node(int i) const { return *algorithms_[i]; }
  int64_t total_local_steps() const { return total_local_steps_; }
  int64_t exchanges() const { return exchanges_; }
  // Payload bytes and messages sent over all links so far.
  int64_t bytes_sent() const;
  int64_t messages_sent() const { return 2 * exchanges_; }

  // The average model and the consensus distance.
  ModelSpread Spread() const;

 private:
  const std::vector<algorithms::NodeSetup>& nodes_;
  std::vector<std::unique_ptr<algorithms::PairwiseAlgorithm>> algorithms_;
  std::mt19937_64 rng_;
  ActivationPicker picker_;
  int64_t total_local_steps_ = 0;
  int64_t exchanges_ = 0;
  uint64_t next_seq_ = 1;
};

}  // namespace starling::node
