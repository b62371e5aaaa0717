// Runs DADAO (algorithms/pairwise/dadao.h) for N nodes in one process as the reference does: in
// the order of the nodes' own event times. Every node has its own seeded Poisson clocks (gradient
// events at rate 1, gossip initiations at rate r); all clocks start at 0 and run at the same
// nominal rate, so the event with the smallest own time is the next one in global time. A gossip
// initiation picks a uniformly random neighbour (the simulator's seeded RNG, as the exchange
// driver), brings it to the same time (AdvanceTo) and exchanges at once. Deterministic for a
// seed. The same interface as PairwiseSimulator for the run loop (simulated_run.cc).
//
// Not thread-safe. The NodeSetups (and their problems) must outlive it.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "algorithms/pairwise/dadao.h"
#include "node/report/model_spread.h"

namespace starling::node {

class DadaoSimulator {
 public:
  // options.algorithm must be "dadao".
  DadaoSimulator(const std::vector<algorithms::NodeSetup>& nodes,
                 const algorithms::PairwiseOptions& options, uint64_t seed);

  // The next event (a gradient event or a gossip); returns the gradient events it took (0 or 1).
  int64_t Activate();
  // Events until the nodes have taken `gradients_per_node` gradient events on average.
  void RunUntilLocalSteps(int64_t gradients_per_node);

  int num_nodes() const { return static_cast<int>(algorithms_.size()); }
  const algorithms::Dadao& node(int i) const { return *algorithms_[i]; }
  int64_t total_local_steps() const { return total_local_steps_; }
  int64_t exchanges() const { return exchanges_; }
  int64_t bytes_sent() const;
  int64_t messages_sent() const { return 2 * exchanges_; }
  ModelSpread Spread() const;

 private:
  const std::vector<algorithms::NodeSetup>& nodes_;
  std::vector<std::unique_ptr<algorithms::Dadao>> algorithms_;
  std::mt19937_64 rng_;
  int64_t total_local_steps_ = 0;
  int64_t exchanges_ = 0;
  uint64_t next_seq_ = 1;
};

}  // namespace starling::node
