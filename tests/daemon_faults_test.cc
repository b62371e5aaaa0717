// Real starlingd processes with the transport's fault injection (net/faulty_transport.h): a
// round-based run under loss, duplication, reordering, delay and a partition must still give
// the simulator's iterates exactly; SwarmSGD must still reach the centralized test accuracy.
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
using testing::Subprocess;

const std::string& kDaemon = testing::kDaemonBinary;

std::string TempDir(const std::string& name) { return testing::FreshTempDir("faults-" + name); }

// Node i at 127.0.0.(i+1):port, no keys (these daemons run --allow-plaintext).
std::string WriteCluster(const std::string& dir, const topology::Graph& graph, int port) {
  return testing::WriteLoopbackCluster(dir, graph, port, /*keys=*/false);
}

Vec ReadModel(const std::string& path) { return testing::ReadModelFile(path); }

// Runs the daemons, returns their models, and prints each node's fault and RESEND lines.
std::vector<Vec> RunDaemons(const std::string& dir, const std::string& cluster, int n,
                            const std::vector<std::string>& args, int timeout_s) {
  std::vector<std::unique_ptr<Subprocess>> procs;
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> argv = {kDaemon, "--cluster", cluster, "--id", std::to_string(i),
                                     "--final-model", dir + "/model-" + std::to_string(i) + ".txt",
                                     "--allow-plaintext", "--fault-seed", std::to_string(11 + i)};
    argv.insert(argv.end(), args.begin(), args.end());
    procs.push_back(std::make_unique<Subprocess>(argv, dir + "/node-" + std::to_string(i) + ".log"));
  }
  std::vector<Vec> models;
  for (int i = 0; i < n; ++i) {
    const int code = procs[i]->Wait(std::chrono::seconds(timeout_s));
    const std::string log = testing::ReadFile(dir + "/node-" + std::to_string(i) + ".log");
    EXPECT_EQ(code, 0) << "node " << i << " log:\n" << log;
    for (const char* mark : {"injected faults", "RESENDs", "done (exit", "exchanges started"}) {
      const auto at = log.find(mark);
      if (at == std::string::npos) continue;
      const auto begin = log.rfind('\n', at) + 1;
      std::printf("%s\n", log.substr(begin, log.find('\n', at) - begin).c_str());
    }
    models.push_back(ReadModel(dir + "/model-" + std::to_string(i) + ".txt"));
  }
  return models;
}

TEST(DaemonFaults, ExtraUnderInjectedFaultsEqualsTheSimulator) {
  const std::string a9a = testing::SharedData("a9a");
  STARLING_REQUIRE_FILE(a9a);
  const std::string dir = TempDir("extra");
  const int n = 5;
  const int64_t iterations = 100;
  const std::string cluster =
      WriteCluster(dir, topology::ErdosRenyi(n, 0.5, 3), testing::PortBase() + 1);
  const std::vector<std::string> args = {
      "--algorithm", "extra", "--problem", "logistic", "--l2", "1e-2", "--data", a9a,
      "--format", "libsvm", "--iterations", std::to_string(iterations), "--seed", "7",
      "--resend-ms", "50", "--fault-loss", "0.15", "--fault-dup", "0.1", "--fault-reorder", "0.2",
      "--fault-delay-ms", "1", "--fault-jitter-ms", "4", "--fault-partition", "0,1|@1-2.5"};
  const std::vector<Vec> models = RunDaemons(dir, cluster, n, args, 120);

  const std::vector<Vec> simulated =
      testing::SimulatedA9aModels("extra", a9a, cluster, n, iterations);
  for (int i = 0; i < n; ++i) {
    const Vec& expected = simulated[i];
    ASSERT_EQ(models[i].size(), expected.size()) << "node " << i;
    EXPECT_LE((models[i] - expected).norm(), 1e-9 * expected.norm()) << "node " << i;
  }
  fs::remove_all(dir);
}

TEST(DaemonFaults, SwarmSgdUnderInjectedFaultsReachesTheCentralizedAccuracy) {
  const std::string a9a = testing::SharedData("a9a");
  STARLING_REQUIRE_FILE(a9a);
  const std::string dir = TempDir("swarm");
  const testing::A9aSplit split = testing::SplitA9a(a9a, dir);
  const std::string& train = split.train;
  const int n = 6;
  const std::string cluster = WriteCluster(dir, topology::Ring(n), testing::PortBase() + 3);
  const std::vector<std::string> args = {
      "--algorithm", "swarmsgd", "--problem", "logistic", "--l2", "1e-4", "--data", train,
      "--format", "libsvm", "--features", "123", "--partition", "iid", "--iterations", "1000",
      "--batch", "16", "--local-steps", "2", "--seed", "3", "--exchange-timeout-ms", "150",
      "--fault-loss", "0.1", "--fault-dup", "0.1", "--fault-reorder", "0.2",
      "--fault-jitter-ms", "3", "--fault-partition", "0,1,2|@0.5-1.5"};
  const std::vector<Vec> models = RunDaemons(dir, cluster, n, args, 180);

  const testing::A9aOutcome r = testing::EvaluateOnA9a(split, 1e-4, models);
  std::printf("SwarmSGD under injected faults: test accuracy %.4f (centralized %.4f), relative "
              "gap %.3g, consensus %.3g\n",
              r.accuracy, r.reference_accuracy, r.gap, r.consensus);
  EXPECT_GE(r.accuracy, r.reference_accuracy - 0.01);
  EXPECT_LT(r.gap, 0.05);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace starling
