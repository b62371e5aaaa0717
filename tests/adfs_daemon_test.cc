// ADFS in real starlingd processes on loopback, over a lossy, duplicating network (--fault-loss,
// --fault-dup): each daemon runs on its own clocks, lost replies are settled by the running-sum
// ledger (adfs.h), and every node ends at the least-squares optimum of the data the test writes,
// solved here from the normal equations.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/daemon_cluster.h"
#include "tests/least_squares_csv.h"
#include "tests/subprocess.h"
#include "topology/generators.h"

namespace starling {
namespace {

using testing::Subprocess;

TEST(AdfsDaemons, ConvergeToTheOptimumUnderLossAndDuplication) {
  const std::string dir = testing::FreshTempDir("adfs-daemons");
  const int n = 5, dim = 6;
  const Vec x_star = testing::WriteLeastSquaresCsv(dir + "/ls.csv", 200, dim, 1e-1, 3);
  topology::Graph graph = topology::Ring(n);
  graph.AddEdge(0, 2);
  const std::string cluster =
      testing::WriteLoopbackCluster(dir, graph, testing::PortBase() + 5, /*keys=*/false);
  std::vector<std::unique_ptr<Subprocess>> procs;
  for (int i = 0; i < n; ++i) {
    const std::string id = std::to_string(i);
    procs.push_back(std::make_unique<Subprocess>(
        std::vector<std::string>{testing::kDaemonBinary, "--cluster", cluster, "--id", id,
                                 "--allow-plaintext", "--final-model",
                                 dir + "/model-" + id + ".txt", "--algorithm", "adfs", "--problem",
                                 "least-squares", "--l2", "1e-1", "--data", dir + "/ls.csv",
                                 "--format", "csv", "--iterations", "6000", "--seed", "5",
                                 // Each lost message costs one time-out: 10% loss and 50 ms
                                 // took 115 s (with a skew bound since removed, which added
                                 // pings). A late reply is absorbed by the ledger.
                                 "--exchange-timeout-ms", "20", "--fault-loss", "0.05",
                                 "--fault-dup", "0.05", "--fault-seed", std::to_string(20 + i)},
        dir + "/node-" + id + ".log"));
  }
  testing::ExpectEveryDaemonAtTheOptimum(procs, dir, x_star, std::chrono::seconds(600), 1e-6);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace starling
