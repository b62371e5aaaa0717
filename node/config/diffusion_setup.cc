#include "node/config/diffusion_setup.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "node/config/spanning_tree.h"
#include "topology/generators.h"
#include "topology/mixing.h"

namespace starling::node {

RunSetup BuildDiffusionSetup(const RunConfig& config, const BuildScope& scope) {
  RunSetup s;
  s.only_node = scope.only_node;
  const int n = config.nodes;
  if (scope.only_node >= n) {
    throw std::invalid_argument("node id " + std::to_string(scope.only_node) + " but only " +
                                std::to_string(n) + " nodes");
  }
  s.graph = topology::MakeTopology(config.topology, n, config.seed);
  if (!s.graph.IsConnected()) {
    throw std::runtime_error("--topology '" + config.topology + "': the graph is not connected");
  }
  if (s.graph.MaxDegree() < 1) {
    throw std::invalid_argument("--algorithm diffusion needs a graph with at least one edge");
  }
  // Kept for the drivers that log it; the diffusion itself uses the Laplacian rule.
  s.mixing = topology::MetropolisHastings(s.graph);
  s.problems.resize(n);
  s.dim = 1;
  const std::vector<algorithms::TreePlace> tree = BfsSpanningTree(s.graph);
  for (int i = 0; i < n; ++i) {
    algorithms::NodeSetup node = NodeSetupOf(s.graph, s.mixing, tree, i);
    node.x0 = Vec::Zero(1);
    node.seed = config.seed * 1000003ULL + static_cast<uint64_t>(i);
    s.nodes.push_back(std::move(node));
  }
  return s;
}

}  // namespace starling::node
