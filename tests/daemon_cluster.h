// Helpers for tests that run real starlingd processes on loopback: a scratch folder, a cluster
// file (node i at 127.0.0.(i+1):PORT, optionally with fresh CURVE keys), and the final models
// the daemons write.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "algorithms/types.h"
#include "net/curve_keys.h"
#include "topology/cluster_file.h"
#include "topology/graph.h"

namespace starling::testing {

inline const std::string kDaemonBinary = std::string(STARLING_BINARY_DIR) + "/node/starlingd";

// A fresh, empty folder under the system's temporary directory, unique per test process.
inline std::string FreshTempDir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("starling-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// Writes DIR/cluster.conf for `graph` with node i at tcp://127.0.0.(i+1):port. With `keys`, each
// node also gets a fresh key pair DIR/keys/node-i.{key,pub} whose public key the file lists.
inline std::string WriteLoopbackCluster(const std::string& dir, const topology::Graph& graph,
                                        int port, bool keys) {
  topology::Cluster cluster;
  cluster.graph = graph;
  if (keys) std::filesystem::create_directories(dir + "/keys");
  for (int i = 0; i < graph.num_nodes(); ++i) {
    const std::string key =
        keys ? net::WriteCurveKeyFiles(dir + "/keys/node-" + std::to_string(i)).public_key : "";
    cluster.nodes.push_back(
        {i, "tcp://127.0.0." + std::to_string(i + 1) + ":" + std::to_string(port), key});
  }
  const std::string path = dir + "/cluster.conf";
  topology::WriteClusterFile(cluster, path);
  return path;
}

// A model file written by starlingd --final-model (one number per line).
inline Vec ReadModelFile(const std::string& path) {
  std::ifstream in(path);
  std::vector<double> values;
  double v;
  while (in >> v) values.push_back(v);
  return Eigen::Map<Vec>(values.data(), static_cast<Eigen::Index>(values.size()));
}

}  // namespace starling::testing
