// Runs ADFS (algorithms/pairwise/adfs.h) for N nodes in one process in the order of the nodes'
// own event times, as DadaoSimulator does DADAO: every node has its own seeded Poisson clocks
// (computations, exchange initiations), all starting at 0 at the same nominal rate, so the event
// with the smallest own time is the next one in global time. An initiation picks a uniformly
// random neighbour (the simulator's seeded RNG, as the exchange driver), brings it to the same
// time (AdvanceTo) and exchanges at once. Deterministic for a seed.
//
// Not thread-safe. The NodeSetups (and their problems) must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "algorithms/pairwise/adfs.h"
#include "node/report/model_spread.h"

namespace starling::node {

class AdfsSimulator {
 public:
  // options.algorithm must be "adfs".
  AdfsSimulator(const std::vector<algorithms::NodeSetup>& nodes,
                const algorithms::PairwiseOptions& options, uint64_t seed);

  // The next event (a computation or an exchange); returns the computations it took (0 or 1).
  int64_t Activate();
  void RunUntilLocalSteps(int64_t steps_per_node);
  // Brings every node to time t (not before the latest node's time), for invariant checks.
  void AdvanceAllTo(double t);
  double LatestTime() const;

  int num_nodes() const { return static_cast<int>(algorithms_.size()); }
  const algorithms::Adfs& node(int i) const { return *algorithms_[i]; }
  int64_t total_local_steps() const { return total_local_steps_; }
  int64_t exchanges() const { return exchanges_; }
  int64_t bytes_sent() const;
  int64_t messages_sent() const { return 2 * exchanges_; }
  ModelSpread Spread() const;

 private:
  const std::vector<algorithms::NodeSetup>& nodes_;
  std::vector<std::unique_ptr<algorithms::Adfs>> algorithms_;
  std::mt19937_64 rng_;
  int64_t total_local_steps_ = 0;
  int64_t exchanges_ = 0;
  uint64_t next_seq_ = 1;
};

}  // namespace starling::node
