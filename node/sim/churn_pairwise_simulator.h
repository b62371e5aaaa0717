// Runs a pairwise method for N node slots in one process while nodes join, leave gracefully and
// crash (churn_plan.h): the seeded activations of PairwiseSimulator among the members, the same
// algorithm objects, the push-sum shares of algorithms/pairwise/push_sum_share.h in every merge,
// and the membership rules of docs/explanations/membership.md, "Nodes that come and go":
//  - a graceful leaver hands its model and share to its neighbour of smallest share (ties by id)
//    (AbsorbShare); the network's weighted average is kept to rounding, and the largest relative
//    change of it over the leaves is reported (leave_drift);
//  - a crashed node's share is lost: the shift of the weighted average it causes is measured and
//    reported (crash_shift, relative), not hidden. The simulator drops the node at once (the
//    failure detector's delay is the daemons' part);
//  - a joiner is a fresh algorithm object for its slot (its shard), linked by
//    topology::MembershipGraph::Join, and starts from the model of its neighbour of largest
//    share (ties by id) with half that share (GiveHalfShare, AdoptShare); the bytes it receives
//    are one model;
//  - after every leave and crash the graph is re-linked by MembershipGraph::Leave.
// The run's length is the global step count (churn_plan.h): iteration() = every node's local
// steps so far / N, departed nodes' included. The reported model is the members' weighted
// average. Needs a method that keeps shares (PairwiseAlgorithm::KeepsShares). Deterministic for
// a seed and a churn plan.
//
// Not thread-safe. The NodeSetups (and their problems) must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "node/report/model_spread.h"
#include "node/sim/churn_plan.h"
#include "topology/membership_graph.h"

namespace starling::node {

struct ChurnCounters {
  int64_t joins = 0, leaves = 0, crashes = 0, skipped = 0;
  double leave_drift = 0.0;  // the largest relative change of the weighted average at a leave
  double crash_shift = 0.0;  // the sum of the relative shifts the crashes caused
  int64_t join_bytes = 0;    // model bytes the joiners received
};

class ChurnPairwiseSimulator {
 public:
  // Throws std::invalid_argument naming --algorithm / --compression if the method keeps no
  // shares.
  ChurnPairwiseSimulator(const std::vector<algorithms::NodeSetup>& nodes,
                         const algorithms::PairwiseOptions& options, uint64_t seed,
                         std::vector<ChurnEvent> events, uint64_t churn_seed);

  // Applies the churn events due at the current global step count (Activate does, first).
  void ApplyDue();
  // Applies the churn events due, then one activation among the members; returns its local
  // steps.
  int64_t Activate();
  void RunUntilLocalSteps(int64_t local_steps_per_node);

  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  int num_members() const { return graph_.num_members(); }
  bool member(int i) const { return algorithms_[i] != nullptr; }
  // Member i's algorithm (i must be a member).
  const algorithms::PairwiseAlgorithm& node(int i) const { return *algorithms_[i]; }
  const topology::MembershipGraph& graph() const { return graph_; }
  int64_t total_local_steps() const { return total_local_steps_; }
  int64_t exchanges() const { return exchanges_; }
  int64_t bytes_sent() const;
  double gradient_passes() const;  // per slot, departed nodes' included
  const ChurnCounters& counters() const { return counters_; }
  // The members' weighted average and their consensus distance (plain mean of squared distances
  // to it).
  ModelSpread Spread() const;

 private:
  void Apply(const ChurnEvent& event);
  void Join(int v);
  void Depart(int v, bool graceful);
  // The members' weighted average of their live models (what the shares keep) or of their
  // reported ones (the metrics).
  Vec WeightedMean(bool reported) const;

  const std::vector<algorithms::NodeSetup>& nodes_;
  algorithms::PairwiseOptions options_;
  std::vector<std::unique_ptr<algorithms::PairwiseAlgorithm>> algorithms_;
  topology::MembershipGraph graph_;
  std::vector<ChurnEvent> events_;
  size_t next_event_ = 0;
  std::mt19937_64 rng_, churn_rng_;
  int64_t total_local_steps_ = 0;
  int64_t exchanges_ = 0;
  uint64_t next_seq_ = 1;
  // What departed nodes did, so that the run's totals keep it.
  int64_t departed_bits_ = 0;
  double departed_passes_ = 0.0;
  ChurnCounters counters_;
};

}  // namespace starling::node
