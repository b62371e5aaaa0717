// What a node knows of itself and its place in the network when an algorithm starts: the input
// every algorithm shape (round-based, pairwise, event-driven) is built from.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/problems/problem.h"
#include "algorithms/types.h"

namespace starling::algorithms {

// What one node knows when it starts. Everything in here must be identical to what the same node
// gets in any other driver, so that runs agree bit for bit.
struct NodeSetup {
  int id = 0;
  // Neighbour ids, strictly ascending, and their mixing weights W_ij in the same order.
  std::vector<int> neighbors;
  std::vector<double> neighbor_weights;
  double self_weight = 1.0;  // W_ii
  // The node's objective. Not owned; must outlive the algorithm.
  const Problem* problem = nullptr;
  Vec x0;              // starting point
  uint64_t seed = 0;   // for mini-batches and any other randomness
  // Block-cyclic data (algorithms/data/block_cyclic.h): block_rows[b] holds the node's shard rows
  // (problem sample indices, ascending) of block b, and block_steps is S, the steps per block.
  // Empty: the run is not block-cyclic.
  std::vector<std::vector<int>> block_rows;
  int64_t block_steps = 0;
};

}  // namespace starling::algorithms
