// The daemon and the monitor take the run's graph from the cluster file, yet accept the run
// options of the simulator, --nodes and --topology among them. Given on their command line (or
// in their --config file), those must agree with the file: `--nodes 7` beside a 3-node cluster
// file, or `--topology complete` beside a ring, is refused rather than silently ignored.
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "topology/cluster_file.h"

namespace starling::node {

// What the options said about the graph, where they were given rather than defaulted.
struct GraphOptions {
  std::optional<int> nodes;
  std::optional<std::string> topology;
};
GraphOptions GivenGraphOptions(const boost::program_options::variables_map& vm);

// Throws std::invalid_argument naming the option and `cluster_path` if --nodes differs from the
// file's number of nodes, or the graph of --topology (built with `seed`, as the simulator would)
// has other edges than the file.
void CheckAgainstClusterFile(const GraphOptions& given, const topology::Cluster& cluster,
                             const std::string& cluster_path, uint64_t seed);

}  // namespace starling::node
