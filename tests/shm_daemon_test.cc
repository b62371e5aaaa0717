// Daemons on one host with --shm auto: EXTRA over shared memory ends at exactly the simulator's
// iterates (as over TCP), the links are named in the node's last lines and counted in its
// metrics, and nothing is left in the run's shared-memory folder.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/data/readers.h"
#include "algorithms/problems/problem_factory.h"
#include "algorithms/problems/reference_solver.h"
#include "node/config/run_setup.h"
#include "node/report/model_spread.h"
#include "node/sim/round_simulator.h"
#include "tests/daemon_cluster.h"
#include "tests/subprocess.h"
#include "tests/test_data.h"
#include "topology/cluster_file.h"
#include "topology/generators.h"

namespace starling {
namespace {

using namespace std::chrono_literals;

TEST(ShmDaemon, ExtraOverSharedMemoryEqualsTheSimulator) {
  const std::string a9a = testing::SharedData("a9a");
  STARLING_REQUIRE_FILE(a9a);
  const std::string dir = testing::FreshTempDir("shm-extra");
  const int n = 4;
  const int64_t iterations = 200;
  const std::string cluster = testing::WriteLoopbackCluster(
      dir, topology::Ring(n), testing::PortBase() + 12, /*keys=*/true);
  std::vector<std::unique_ptr<testing::Subprocess>> procs;
  for (int i = 0; i < n; ++i) {
    const std::string p = dir + "/node-" + std::to_string(i);
    procs.push_back(std::make_unique<testing::Subprocess>(
        std::vector<std::string>{testing::kDaemonBinary,
                                 "--cluster",
                                 cluster,
                                 "--id",
                                 std::to_string(i),
                                 "--secret-key",
                                 dir + "/keys/node-" + std::to_string(i) + ".key",
                                 "--final-model",
                                 p + ".model",
                                 "--metrics",
                                 p + ".jsonl",
                                 "--shm",
                                 "auto",
                                 "--algorithm",
                                 "extra",
                                 "--problem",
                                 "logistic",
                                 "--l2",
                                 "1e-2",
                                 "--data",
                                 a9a,
                                 "--format",
                                 "libsvm",
                                 "--iterations",
                                 std::to_string(iterations),
                                 "--seed",
                                 "7"},
        p + ".log"));
  }
  std::vector<Vec> models;
  for (int i = 0; i < n; ++i) {
    const std::string p = dir + "/node-" + std::to_string(i);
    const int code = procs[i]->Wait(180s);
    const std::string log = testing::ReadFile(p + ".log");
    ASSERT_EQ(code, 0) << "node " << i << " log:\n" << log;
    // Both ring neighbours linked over shared memory, and it carried messages.
    EXPECT_NE(log.find("links: shared memory with node"), std::string::npos) << log;
    EXPECT_EQ(log.find("ZeroMQ only with"), std::string::npos) << log;
    const std::string metrics = testing::ReadFile(p + ".jsonl");
    const std::string last = metrics.substr(metrics.rfind('\n', metrics.size() - 2) + 1);
    EXPECT_GT(testing::MetricsField(last, "shm_sent"), 0.0) << last;
    EXPECT_GT(testing::MetricsField(last, "shm_received"), 0.0) << last;
    models.push_back(testing::ReadModelFile(p + ".model"));
  }
  const std::vector<Vec> simulated =
      testing::SimulatedA9aModels("extra", a9a, cluster, n, iterations);
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(models[i].size(), simulated[i].size()) << "node " << i;
    const double error = (models[i] - simulated[i]).norm() / simulated[i].norm();
    std::printf("extra over shared memory, node %d: relative difference %.3g\n", i, error);
    EXPECT_LE(error, 1e-9) << "node " << i;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace starling
