// The cluster file of a run formed by joining a seed, written where only this process looks: a
// fresh directory of mode 0700 under $TMPDIR (else /tmp), removed with this object. Every node
// builds the same cluster from the member list, so nothing is shared; the file only hands the
// cluster to the code that reads cluster files (the node, the monitor).
#pragma once

#include <string>

#include "topology/cluster_file.h"

namespace starling::node {

class PrivateClusterFile {
 public:
  // Writes `cluster` as DIR/cluster.conf. Throws std::runtime_error naming the directory if it
  // cannot be made or written.
  explicit PrivateClusterFile(const topology::Cluster& cluster);
  ~PrivateClusterFile();
  PrivateClusterFile(const PrivateClusterFile&) = delete;
  PrivateClusterFile& operator=(const PrivateClusterFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

}  // namespace starling::node
