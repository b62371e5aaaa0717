// Runs a round-based algorithm for N nodes in one process, in lockstep: at every step each node
// receives exactly its neighbours' payloads for that step. This equals the matrix form of the
// algorithm and is the reference the daemon is checked against.
//
// Not thread-safe. The nodes' NodeSetups (and the problems they point to) must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/round/round_algorithm.h"
#include "algorithms/types.h"
#include "node/report/model_spread.h"

namespace starling::node {

class RoundSimulator {
 public:
  RoundSimulator(const std::vector<algorithms::NodeSetup>& nodes,
                 const algorithms::RoundOptions& options);

  // Every node consumes its neighbours' payloads of the current step and moves to the next.
  void Step();
  // Steps until node 0 has completed `iterations` outer iterations.
  void RunUntilIteration(int64_t iterations);

  int num_nodes() const { return static_cast<int>(algorithms_.size()); }
  const algorithms::RoundAlgorithm& node(int i) const { return *algorithms_[i]; }
  int64_t iteration() const { return algorithms_[0]->iteration(); }
  // Payload bytes and messages sent over all edges so far (8 bytes per double).
  int64_t bytes_sent() const { return bytes_sent_; }
  int64_t messages_sent() const { return messages_sent_; }

  // The average model and the consensus distance.
  ModelSpread Spread() const;

 private:
  const std::vector<algorithms::NodeSetup>& nodes_;
  std::vector<std::unique_ptr<algorithms::RoundAlgorithm>> algorithms_;
  std::vector<Vec> outbox_;  // copies of this step's payloads
  std::vector<const Vec*> inbox_;
  int64_t bytes_sent_ = 0;
  int64_t messages_sent_ = 0;
};

}  // namespace starling::node
