#include "node/config/cluster_agreement.h"

#include <stdexcept>

#include "topology/generators.h"

namespace starling::node {

GraphOptions GivenGraphOptions(const boost::program_options::variables_map& vm) {
  GraphOptions given;
  if (vm.count("nodes") && !vm["nodes"].defaulted()) given.nodes = vm["nodes"].as<int>();
  if (vm.count("topology") && !vm["topology"].defaulted()) {
    given.topology = vm["topology"].as<std::string>();
  }
  return given;
}

void CheckAgainstClusterFile(const GraphOptions& given, const topology::Cluster& cluster,
                             const std::string& cluster_path, uint64_t seed) {
  const int n = static_cast<int>(cluster.nodes.size());
  if (given.nodes && *given.nodes != n) {
    throw std::invalid_argument("--nodes " + std::to_string(*given.nodes) + ": " + cluster_path +
                                " lists " + std::to_string(n) +
                                " nodes (the cluster file defines them; leave --nodes out)");
  }
  if (given.topology) {
    // A bad spec throws naming --topology.
    const topology::Graph graph = topology::MakeTopology(*given.topology, n, seed);
    if (graph.Edges() != cluster.graph.Edges()) {
      throw std::invalid_argument(
          "--topology " + *given.topology + ": its " + std::to_string(graph.num_edges()) +
          " edges on " + std::to_string(n) + " nodes differ from the " +
          std::to_string(cluster.graph.num_edges()) + " edges of " + cluster_path +
          " (the cluster file defines the graph; leave --topology out)");
    }
  }
}

}  // namespace starling::node
