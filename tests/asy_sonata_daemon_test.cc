// ASY-SONATA in real starlingd processes on loopback, over a lossy, duplicating network
// (--fault-loss, --fault-dup): every node ends at the least-squares optimum of the data the test
// writes, solved here from the normal equations.
#include <gtest/gtest.h>

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

TEST(AsySonataDaemons, ConvergeToTheOptimumUnderLossAndDuplication) {
  const std::string dir = testing::FreshTempDir("asy-sonata-daemons");
  const int n = 5, dim = 6;
  const Vec x_star = testing::WriteLeastSquaresCsv(dir + "/ls.csv", 400, dim, 1e-2, 3);
  // A ring plus one chord: not regular, so the pull and push weights are not symmetric by chance.
  topology::Graph graph = topology::Ring(n);
  graph.AddEdge(0, 2);
  const std::string cluster =
      testing::WriteLoopbackCluster(dir, graph, testing::PortBase() + 5, /*keys=*/false);
  std::vector<std::unique_ptr<Subprocess>> procs;
  for (int i = 0; i < n; ++i) {
    const std::string id = std::to_string(i);
    procs.push_back(std::make_unique<Subprocess>(
        std::vector<std::string>{
            testing::kDaemonBinary, "--cluster", cluster, "--id", id, "--allow-plaintext",
            "--final-model", dir + "/model-" + id + ".txt", "--algorithm", "asy-sonata",
            "--problem", "least-squares", "--l2", "1e-2", "--data", dir + "/ls.csv", "--format",
            "csv", "--iterations", "1500", "--seed", "5",
            // Each lost message costs one
            // timeout: 100 ms took the run
            // to 30 s; a loopback reply
            // comes well within 50.
            "--exchange-timeout-ms", "50", "--fault-loss", "0.1", "--fault-dup", "0.1",
            "--fault-seed", std::to_string(20 + i)},
        dir + "/node-" + id + ".log"));
  }
  testing::ExpectEveryDaemonAtTheOptimum(procs, dir, x_star, std::chrono::seconds(300), 1e-6);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace starling
