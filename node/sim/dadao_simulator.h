// Runs DADAO (algorithms/pairwise/dadao.h) for N nodes in one process as the reference does: in
// the order of the nodes' own event times (EventOrderSimulator: gradient events at rate 1, gossip
// initiations at rate r, every node on its own seeded Poisson clocks). Deterministic for a seed.
//
// Not thread-safe. The NodeSetups (and their problems) must outlive it.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/pairwise/dadao.h"
#include "node/sim/event_order_simulator.h"

namespace starling::node {

class DadaoSimulator : public EventOrderSimulator<DadaoSimulator, algorithms::Dadao> {
 public:
  // options.algorithm must be "dadao".
  DadaoSimulator(const std::vector<algorithms::NodeSetup>& nodes,
                 const algorithms::PairwiseOptions& options, uint64_t seed)
      : EventOrderSimulator(nodes, options, seed, "dadao", "DadaoSimulator") {}

  // The common time of the event order needs no skew bound.
  static void PrepareForEventOrder(algorithms::Dadao& a) { a.SetMaxSkew(0); }
  // The responder is brought to the gossip's own event time.
  static double ExchangeTime(const algorithms::Dadao&, double next_event_time) {
    return next_event_time;
  }
};

}  // namespace starling::node
