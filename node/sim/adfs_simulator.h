// Runs ADFS (algorithms/pairwise/adfs.h) for N nodes in one process in the order of the nodes'
// own event times, as DadaoSimulator does DADAO (EventOrderSimulator: computations and exchange
// initiations on every node's own seeded Poisson clocks). Deterministic for a seed.
//
// Not thread-safe. The NodeSetups (and their problems) must outlive it.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/pairwise/adfs.h"
#include "node/sim/event_order_simulator.h"

namespace starling::node {

class AdfsSimulator : public EventOrderSimulator<AdfsSimulator, algorithms::Adfs> {
 public:
  // options.algorithm must be "adfs".
  AdfsSimulator(const std::vector<algorithms::NodeSetup>& nodes,
                const algorithms::PairwiseOptions& options, uint64_t seed)
      : EventOrderSimulator(nodes, options, seed, "adfs", "AdfsSimulator") {}

  // Brings every node to time t (not before the latest node's time), for invariant checks.
  void AdvanceAllTo(double t);
  double LatestTime() const;

  static void PrepareForEventOrder(algorithms::Adfs& a) { a.SetCommonTime(); }
  // The responder is brought to the initiator's time after BeginExchange (an exchange it owed
  // does not move its clock).
  static double ExchangeTime(const algorithms::Adfs& a, double) { return a.now(); }
};

}  // namespace starling::node
