// Runs a pairwise algorithm (SwarmSGD) for N nodes in one process over a simulated faulty
// network: the seeded activation sequence of PairwiseSimulator, with each request and reply
// passed through a FaultInjector. One activation is one simulated millisecond.
//
//  - a lost or partitioned request: the initiator's offer times out (nothing merged anywhere);
//  - a duplicated request: the responder serves the first copy and drops the second (as the
//    daemon's ExchangeDriver does), so it merges once;
//  - a delayed or reordered reply (latency = request delay + reply delay, in activations): the
//    initiator abandons the offer and merges the reply late, from its kept snapshot;
//  - a duplicated reply: the second copy matches no kept snapshot and is dropped;
//  - a reply later than the initiator's last kKeptOfferSnapshots offers finds no snapshot
//    (stale): like a lost reply, the responder's half of that exchange stays;
//  - a lost reply: the responder has merged and the initiator never does, which is the one
//    case where the sum of models is not conserved (half the snapshot difference is lost).
//
// exchange_drift() is the norm of the sum of every model change made by merges: 0 (up to
// rounding) whenever no reply was lost.
//
// Not thread-safe. The NodeSetups (and their problems) must outlive it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "net/fault_plan.h"
#include "node/report/model_spread.h"
#include "node/sim/activation_picker.h"

namespace starling::node {

struct FaultyPairwiseCounters {
  int64_t exchanges_started = 0, merged_at_once = 0, merged_late = 0;
  int64_t requests_lost = 0, replies_lost = 0, duplicate_requests_dropped = 0,
          stale_replies_dropped = 0, duplicate_replies_dropped = 0;
  net::FaultCounters faults;
};

class FaultyPairwiseSimulator {
 public:
  FaultyPairwiseSimulator(const std::vector<algorithms::NodeSetup>& nodes,
                          const algorithms::PairwiseOptions& options, uint64_t seed,
                          const net::FaultPlan& plan);

  // --slow-node: node i is activated with probability proportional to 1/factors[i]
  // (activation_picker.h). Default: uniformly.
  void SetSlowFactors(const std::vector<double>& factors) { picker_.SetSlowFactors(factors); }

  int64_t Activate();
  // Activates until the nodes have done `local_steps_per_node` local steps on average, then
  // delivers the replies still in flight (Drain).
  void RunUntilLocalSteps(int64_t local_steps_per_node);
  // Delivers every reply still in flight, as daemons linger for them at the end of a run.
  void Drain();

  int num_nodes() const { return static_cast<int>(algorithms_.size()); }
  const algorithms::PairwiseAlgorithm& node(int i) const { return *algorithms_[i]; }
  int64_t total_local_steps() const { return total_local_steps_; }
  int64_t exchanges() const { return counters_.merged_at_once + counters_.merged_late; }
  int64_t bytes_sent() const;
  double exchange_drift() const { return drift_.norm(); }
  FaultyPairwiseCounters counters() const;
  ModelSpread Spread() const;

 private:
  struct Reply {
    int initiator;
    uint64_t seq;
    Vec snapshot;
    bool duplicate;  // the second copy of a duplicated reply
  };
  void DeliverDue();
  void Merge(const Reply& reply);

  const std::vector<algorithms::NodeSetup>& nodes_;
  std::vector<std::unique_ptr<algorithms::PairwiseAlgorithm>> algorithms_;
  std::vector<net::FaultInjector> injectors_;
  std::mt19937_64 rng_;
  ActivationPicker picker_;
  int64_t now_ = 0;
  int64_t total_local_steps_ = 0;
  uint64_t next_seq_ = 1;
  std::multimap<int64_t, Reply> in_flight_;
  Vec drift_, before_;
  FaultyPairwiseCounters counters_;
};

}  // namespace starling::node
