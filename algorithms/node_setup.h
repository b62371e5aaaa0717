// What a node knows of itself and its place in the network when an algorithm starts: the input
// every algorithm shape (round-based, pairwise, event-driven) is built from.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/problems/problem.h"
#include "algorithms/types.h"

namespace starling::algorithms {

// A node's place in one spanning tree of the whole graph, the same tree on every node and in
// every driver (node/config builds it: breadth-first from node 0, neighbours in ascending id
// order), for methods that average exactly over it (local SGD's --local-exact). The root has
// depth 0 and parent -1; children are neighbours, strictly ascending.
struct TreePlace {
  int parent = -1;
  std::vector<int> children;
  int depth = 0;
  int height = 0;     // the tree's height: the largest depth of any node
  int num_nodes = 1;  // nodes in the whole graph
};

// What one node knows when it starts. Everything in here must be identical to what the same node
// gets in any other driver, so that runs agree bit for bit.
struct NodeSetup {
  int id = 0;
  // Neighbour ids, strictly ascending, and their mixing weights W_ij in the same order.
  std::vector<int> neighbors;
  std::vector<double> neighbor_weights;
  double self_weight = 1.0;  // W_ii
  TreePlace tree;            // in a spanning tree of the whole graph
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
