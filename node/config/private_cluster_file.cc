#include "node/config/private_cluster_file.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace starling::node {

PrivateClusterFile::PrivateClusterFile(const topology::Cluster& cluster) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/starling-join-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (::mkdtemp(name.data()) == nullptr) {
    throw std::runtime_error(pattern + ": cannot make a private directory for the cluster file: " +
                             std::strerror(errno) + " (set TMPDIR to a writable directory)");
  }
  dir_ = name.data();
  path_ = dir_ + "/cluster.conf";
  try {
    topology::WriteClusterFile(cluster, path_);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    throw;
  }
}

PrivateClusterFile::~PrivateClusterFile() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace starling::node
