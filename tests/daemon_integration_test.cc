// Real starlingd processes on loopback, talking ZeroMQ over CURVE (the default, secure path): a
// round-based run must give exactly the simulator's iterates, and SwarmSGD must reach the
// centralized solver's test accuracy.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/data/readers.h"
#include "algorithms/problems/problem_factory.h"
#include "algorithms/problems/reference_solver.h"
#include "net/curve_keys.h"
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

namespace fs = std::filesystem;

std::string TempDir(const std::string& name) { return testing::FreshTempDir(name); }

// Node i at 127.0.0.(i+1):port, with a fresh key pair DIR/keys/node-i.{key,pub}.
std::string WriteCluster(const std::string& dir, const topology::Graph& graph, int port) {
  return testing::WriteLoopbackCluster(dir, graph, port, /*keys=*/true);
}

// Round-based methods across processes give the simulator's iterates; OPTRA exercises keys with
// several phases and subrounds per iteration (2K = 4 Chebyshev gossip exchanges), APM-C a number
// of rounds that grows with the iteration (and an unmixed exchange at k = 1), Network-SVRG a
// two-vector payload [x; s] and seeded inner sampling.
class RoundAcrossProcesses : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundAcrossProcesses, EqualsTheSimulator) {
  const std::string a9a = testing::SharedData("a9a");
  STARLING_REQUIRE_FILE(a9a);
  const std::string algorithm = GetParam();
  const std::string dir = TempDir(algorithm);
  const int n = 5;
  // Each algorithm's run gets its own ports: CTest runs the parameters in parallel.
  const int offset = algorithm == "optra"          ? 4
                     : algorithm == "apm-c"        ? 8
                     : algorithm == "network-svrg" ? 12
                                                   : 0;
  const std::string cluster =
      WriteCluster(dir, topology::ErdosRenyi(n, 0.5, 3), testing::PortBase() + offset);
  const std::vector<std::string> args = {"--algorithm", algorithm, "--problem", "logistic",
                                         "--l2", "1e-2", "--data", a9a, "--format", "libsvm",
                                         "--iterations", "150", "--seed", "7"};
  const std::vector<Vec> models = testing::RunLoopbackDaemons(dir, cluster, n, args, 120);

  const std::vector<Vec> simulated =
      testing::SimulatedA9aModels(algorithm, a9a, cluster, n, 150);
  for (int i = 0; i < n; ++i) {
    const Vec& expected = simulated[i];
    ASSERT_EQ(models[i].size(), expected.size()) << "node " << i;
    EXPECT_LE((models[i] - expected).norm(), 1e-9 * expected.norm()) << "node " << i;
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(DaemonIntegration, RoundAcrossProcesses,
                         ::testing::Values("extra", "optra", "apm-c", "network-svrg"));

TEST(DaemonIntegration, SwarmSgdReachesTheCentralizedTestAccuracy) {
  const std::string a9a = testing::SharedData("a9a");
  STARLING_REQUIRE_FILE(a9a);
  const std::string dir = TempDir("swarm");
  const testing::A9aSplit split = testing::SplitA9a(a9a, dir);
  const std::string& train = split.train;
  const int n = 6;
  const std::string cluster = WriteCluster(dir, topology::Ring(n), testing::PortBase() + 2);
  const std::vector<std::string> args = {
      "--algorithm", "swarmsgd", "--problem", "logistic", "--l2", "1e-4", "--data", train,
      "--test-data", split.test, "--format", "libsvm", "--features", "123", "--partition", "iid",
      "--iterations", "3000", "--batch", "16", "--local-steps", "2", "--seed", "3"};
  const std::vector<Vec> models = testing::RunLoopbackDaemons(dir, cluster, n, args, 180);

  const testing::A9aOutcome r = testing::EvaluateOnA9a(split, 1e-4, models);
  std::printf("SwarmSGD test accuracy %.4f, centralized %.4f, consensus %.3g\n", r.accuracy,
              r.reference_accuracy, r.consensus);
  EXPECT_GE(r.accuracy, r.reference_accuracy - 0.01);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace starling
