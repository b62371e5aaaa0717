// The spanning tree every node of a run agrees on (algorithms::TreePlace): each node builds the
// whole graph from the cluster file or the topology option, so each computes the same tree
// without a message.
#pragma once

#include <vector>

#include "algorithms/node_setup.h"
#include "topology/graph.h"

namespace starling::node {

// Breadth-first from node 0, each node's neighbours taken in ascending id order: the tree is a
// function of the graph alone. Entry i is node i's place. Nodes that node 0 does not reach (a
// disconnected graph, which the run setups refuse) get depth -1 and no parent; num_nodes is
// always the graph's node count.
std::vector<algorithms::TreePlace> BfsSpanningTree(const topology::Graph& graph);

}  // namespace starling::node
