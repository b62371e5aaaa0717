// Daemons on one host with --shm auto: EXTRA over shared memory ends at exactly the simulator's
// iterates (as over TCP), the links are named in the node's last lines and counted in its
// metrics, and nothing is left in the run's shared-memory folder.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
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

// True once the file at `path` contains `text`, false at the deadline.
bool WaitForLogText(const std::string& path, const std::string& text,
                    std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (testing::ReadFile(path).find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

// A SwarmSGD node killed with SIGKILL while it holds rings: its neighbours see its side of the
// link close, say so by name, and go on over ZeroMQ.
TEST(ShmDaemon, NeighboursOfAKilledNodeEndItsLinkAndGoOn) {
  const std::string a9a = testing::SharedData("a9a");
  STARLING_REQUIRE_FILE(a9a);
  const std::string dir = testing::FreshTempDir("shm-kill");
  const int n = 3, victim = 1;
  const std::string cluster = testing::WriteLoopbackCluster(
      dir, topology::Ring(n), testing::PortBase() + 14, /*keys=*/true);
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
                                 "--shm",
                                 "auto",
                                 "--algorithm",
                                 "swarmsgd",
                                 "--problem",
                                 "logistic",
                                 "--l2",
                                 "1e-2",
                                 "--data",
                                 a9a,
                                 "--format",
                                 "libsvm",
                                 "--iterations",
                                 "100000000",
                                 "--seed",
                                 "7",
                                 "--give-up-s",
                                 "600"},
        p + ".log"));
  }
  const std::string victim_log = dir + "/node-" + std::to_string(victim) + ".log";
  for (int i = 0; i < n; ++i) {
    if (i == victim) continue;
    ASSERT_TRUE(WaitForLogText(victim_log, "shared memory with node " + std::to_string(i), 60s))
        << "node " << victim << " set up no shared memory with node " << i << ":\n"
        << testing::ReadFile(victim_log);
  }
  procs[victim]->Signal(SIGKILL);
  EXPECT_EQ(procs[victim]->Wait(10s), 128 + SIGKILL);
  for (int i = 0; i < n; ++i) {
    if (i == victim) continue;
    const std::string log = dir + "/node-" + std::to_string(i) + ".log";
    EXPECT_TRUE(
        WaitForLogText(log, "its process closed the link; its messages go over ZeroMQ", 60s))
        << "node " << i << " did not end its link to the killed node " << victim << ":\n"
        << testing::ReadFile(log);
    EXPECT_EQ(procs[i]->Wait(0ms), -1) << "node " << i << " stopped:\n" << testing::ReadFile(log);
  }
  for (int i = 0; i < n; ++i) {
    if (i != victim) procs[i]->Signal(SIGKILL);
  }
  for (int i = 0; i < n; ++i) {
    if (i != victim) procs[i]->Wait(10s);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace starling
