// starlingd's time accounting in its metrics lines, which bench/run.sh overhead
// (docs/results/overhead.md) reads: --compute-delay-ms is counted as compute time in both loop
// shapes, and a node writes a line when it starts and at the moment it finishes, so that the
// lingering after its last step is not counted as time blocked in the run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/daemon_cluster.h"
#include "tests/test_data.h"
#include "topology/generators.h"

namespace starling {
namespace {

namespace fs = std::filesystem;

constexpr int kNodes = 3;
constexpr int kSteps = 100;
constexpr double kDelayMs = 4.0;

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    // The header line (run id, labels, scaling) has no "iter": only the points are kept.
    if (line.find("\"iter\"") != std::string::npos) lines.push_back(line);
  }
  return lines;
}

class DaemonMetrics : public ::testing::Test {
 protected:
  void SetUp() override {
    a9a_ = testing::SharedData("a9a");
    if (!fs::exists(a9a_)) GTEST_SKIP() << "no a9a at " << a9a_;
  }

  // kNodes daemons of `algorithm` on a ring doing kSteps steps (rounds) of kDelayMs simulated
  // compute each. Telemetry is every minute, so that the only lines are the first one, the one
  // at finishing (if written) and the one at exit. Returns each node's metrics lines.
  std::vector<std::vector<std::string>> Run(const std::string& name, int port_offset,
                                            const std::string& algorithm) {
    const std::string dir = testing::FreshTempDir(name);
    const std::string cluster = testing::WriteLoopbackCluster(
        dir, topology::Ring(kNodes), testing::PortBase() + port_offset, /*keys=*/true);
    const std::vector<std::string> args = {"--algorithm",
                                           algorithm,
                                           "--problem",
                                           "logistic",
                                           "--l2",
                                           "1e-2",
                                           "--data",
                                           a9a_,
                                           "--format",
                                           "libsvm",
                                           "--features",
                                           "123",
                                           "--iterations",
                                           std::to_string(kSteps),
                                           "--batch",
                                           "8",
                                           "--seed",
                                           "3",
                                           "--compute-delay-ms",
                                           std::to_string(kDelayMs),
                                           "--telemetry-ms",
                                           "60000",
                                           "--linger-s",
                                           "2"};
    testing::RunLoopbackDaemons(dir, cluster, kNodes, args, 120);
    std::vector<std::vector<std::string>> lines;
    for (int i = 0; i < kNodes; ++i) {
      lines.push_back(Lines(dir + "/node-" + std::to_string(i) + ".jsonl"));
    }
    fs::remove_all(dir);
    return lines;
  }

  // Each node's first line (written before its first step, after loading its data), its line at
  // finishing and its line at exit; no periodic ones (telemetry every minute). Without the line
  // at finishing, the first line after the last step would be the exit one, after the lingering.
  // The simulated compute counts as compute time. (That the node sleeps through it rather than
  // spinning is a speed matter: bench/run.sh overhead reports the daemons' CPU share.)
  static void ExpectComputeDelayAccounted(const std::vector<std::string>& lines, int node,
                                          int min_steps) {
    ASSERT_EQ(lines.size(), 3u) << "node " << node;
    const std::string &first = lines[0], &finish = lines[1], &exit = lines[2];
    EXPECT_EQ(testing::MetricsField(first, "iter"), 0.0) << first;
    EXPECT_EQ(testing::MetricsField(first, "final"), 0.0) << first;
    const double steps = testing::MetricsField(finish, "iter");
    EXPECT_GE(steps, min_steps) << finish;
    EXPECT_EQ(testing::MetricsField(finish, "final"), 1.0) << finish;
    EXPECT_LE(testing::MetricsField(finish, "time"), testing::MetricsField(exit, "time"));
    EXPECT_GT(testing::MetricsField(finish, "unix_time"), 1.6e9) << finish;
    const double compute =
        testing::MetricsField(finish, "compute_s") - testing::MetricsField(first, "compute_s");
    const double cpu =
        testing::MetricsField(finish, "cpu_s") - testing::MetricsField(first, "cpu_s");
    std::printf("node %d: %.0f steps, compute %.3f s (%.0f ms simulated per step), CPU %.3f s\n",
                node, steps, compute, kDelayMs, cpu);
    EXPECT_GE(compute, steps * kDelayMs * 1e-3) << "node " << node << ": " << finish;
    EXPECT_GT(cpu, 0.0) << "node " << node << ": " << finish;
  }

  std::string a9a_;
};

TEST_F(DaemonMetrics, SwarmSgdCountsTheComputeDelayAsComputeAndWritesALineWhenItFinishes) {
  const auto lines = Run("metrics-swarm", 0, "swarmsgd");
  // Every node does its whole budget, even one that came up late
  // (docs/explanations/algorithms/swarmsgd.md).
  double most_steps = 0;
  for (int i = 0; i < kNodes; ++i) {
    ExpectComputeDelayAccounted(lines[i], i, kSteps);
    if (lines[i].size() > 1) {
      most_steps = std::max(most_steps, testing::MetricsField(lines[i][1], "iter"));
    }
  }
  EXPECT_EQ(most_steps, kSteps);
}

TEST_F(DaemonMetrics, RoundBasedRunsCountTheComputeDelayAsComputeAndWriteALineWhenTheyFinish) {
  const auto lines = Run("metrics-dpsgd", 1, "dpsgd");
  for (int i = 0; i < kNodes; ++i) ExpectComputeDelayAccounted(lines[i], i, kSteps);
}

}  // namespace
}  // namespace starling
