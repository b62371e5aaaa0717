#include "node/config/external_setup.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/data/block_cyclic.h"
#include "node/config/spanning_tree.h"
#include "topology/generators.h"
#include "topology/mixing.h"

namespace starling::node {

RunSetup BuildExternalSetup(const RunConfig& config, const BuildScope& scope, const Vec& x0,
                            const algorithms::Problem* problem) {
  if (x0.size() == 0) throw std::invalid_argument("the model buffer is empty (length 0)");
  if (algorithms::ParseBlockCyclic(config.block_cyclic).active()) {
    throw std::invalid_argument("--block-cyclic " + config.block_cyclic +
                                ": not for a caller-owned model (the caller draws its batches)");
  }
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
  s.mixing = topology::MetropolisHastings(s.graph);
  s.problems.resize(n);
  s.dim = static_cast<int>(x0.size());
  const std::vector<algorithms::TreePlace> tree = BfsSpanningTree(s.graph);
  for (int i = 0; i < n; ++i) {
    algorithms::NodeSetup node = NodeSetupOf(s.graph, s.mixing, tree, i);
    node.x0 = i == scope.only_node ? x0 : Vec::Zero(x0.size());
    if (i == scope.only_node) node.problem = problem;
    node.seed = config.seed * 1000003ULL + static_cast<uint64_t>(i);
    s.nodes.push_back(std::move(node));
  }
  return s;
}

}  // namespace starling::node
