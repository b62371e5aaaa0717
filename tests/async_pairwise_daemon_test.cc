// Real starlingd processes running the asynchronous pairwise methods: async-admm
// reaches the least-squares optimum (Eigen's solve of the normal equations of data this test
// writes) with and without injected loss and duplication, and with a node SIGKILLed and resumed
// from its checkpoint; acid runs to the end and lands near the centralized optimum.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/problems/reference_solver.h"
#include "node/config/run_setup.h"
#include "tests/daemon_cluster.h"
#include "tests/pairwise_daemon_fixture.h"
#include "tests/subprocess.h"
#include "tests/written_data.h"
#include "topology/generators.h"

namespace starling {
namespace {

namespace fs = std::filesystem;
using testing::Subprocess;
using namespace std::chrono_literals;

using testing::NodePath;
using testing::NormalEquations;
using testing::Start;
using testing::WaitAll;
using testing::WorstError;
using testing::WriteLeastSquares;
using testing::Written;

class AdmmDaemons : public ::testing::TestWithParam<bool> {};

TEST_P(AdmmDaemons, ReachTheLeastSquaresOptimum) {
  const bool faults = GetParam();
  const std::string dir = testing::FreshTempDir(faults ? "admm-faults" : "admm");
  const Written data = WriteLeastSquares(dir + "/ls.txt", 300, 5, 8);
  const Vec x_star = NormalEquations(data, 1e-3);
  const int n = 5;
  const std::string cluster = testing::WriteLoopbackCluster(
      dir, topology::Ring(n), testing::PortBase() + (faults ? 5 : 0), /*keys=*/false);
  std::vector<std::string> args = {
      "--algorithm", "async-admm", "--problem", "least-squares", "--l2", "1e-3", "--data",
      dir + "/ls.txt", "--format", "libsvm", "--iterations",
      // Fault-free runs end at 2e-13 to 3e-10 at 3000 steps, but one
      // at the start of a loaded suite ended at 2.2e-7 (a node up
      // late, likely): twice the budget for margin, about 1 s more.
      faults ? "3000" : "6000", "--seed", "3", "--exchange-timeout-ms", faults ? "60" : "5000"};
  // Without faults no message is lost, so a timeout can only be a slow reply. With 200 ms, one run
  // under ctest -j4 ended after 0.82 s at worst error 1.8e-4; the likely cause (not confirmed)
  // is a node whose neighbours were both backed off after timeouts, spending its budget stepping
  // alone. 5 s does not fire on loopback, however loaded.
  if (faults) {
    // Every lost message costs one exchange timeout: at 200 ms the ~200 timeouts per node took
    // the run to a minute. A loopback reply takes well under 60 ms; a later one is an aborted
    // exchange, which is part of what this run checks.
    for (const char* a : {"--fault-loss", "0.1", "--fault-dup", "0.1", "--fault-reorder", "0.1",
                          "--fault-jitter-ms", "2"}) {
      args.push_back(a);
    }
  }
  std::vector<std::unique_ptr<Subprocess>> procs;
  for (int i = 0; i < n; ++i)
    procs.push_back(Start(dir, cluster, i, args, NodePath(dir, "log", i)));
  const std::vector<Vec> models = WaitAll(&procs, dir);
  const double worst = WorstError(models, x_star);
  std::printf("async-admm daemons%s: worst node ||x_i - x*||/||x*|| = %.3g\n",
              faults ? " under 10% loss, 10% dup, 10% reorder" : "", worst);
  EXPECT_LE(worst, 1e-7);
  for (int i = 0; i < n && faults; ++i) {
    const std::string log = testing::ReadFile(NodePath(dir, "log", i));
    const auto at = log.find("exchanges started");
    if (at != std::string::npos) {
      const auto begin = log.rfind('\n', at) + 1;
      std::printf("%s\n", log.substr(begin, log.find('\n', at) - begin).c_str());
    }
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(AsyncAdmm, AdmmDaemons, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "WithLoss" : "FaultFree"; });

TEST(AdmmDaemonCrash, KilledNodeResumesFromItsCheckpointAndTheRunReachesTheOptimum) {
  const std::string dir = testing::FreshTempDir("admm-crash");
  const Written data = WriteLeastSquares(dir + "/ls.txt", 300, 5, 9);
  const Vec x_star = NormalEquations(data, 1e-3);
  const int n = 4, victim = 1;
  const std::string cluster =
      testing::WriteLoopbackCluster(dir, topology::Ring(n), testing::PortBase() + 10, false);
  // A 2 ms delay per message stretches the run over seconds, so that the kill lands mid-run.
  const std::vector<std::string> args = {"--algorithm",
                                         "async-admm",
                                         "--problem",
                                         "least-squares",
                                         "--l2",
                                         "1e-3",
                                         "--data",
                                         dir + "/ls.txt",
                                         "--format",
                                         "libsvm",
                                         "--iterations",
                                         "3000",
                                         "--seed",
                                         "4",
                                         "--checkpoint-every",
                                         "20",
                                         "--fault-delay-ms",
                                         "2",
                                         "--exchange-timeout-ms",
                                         "300"};
  std::vector<std::unique_ptr<Subprocess>> procs;
  for (int i = 0; i < n; ++i)
    procs.push_back(Start(dir, cluster, i, args, NodePath(dir, "log", i)));
  // Killed once its second checkpoint replaces the first (step 40): past a checkpoint, and with
  // the 2 ms delay on every message the rest of the run takes seconds on any machine.
  const std::string checkpoint = NodePath(dir, "checkpoint", victim) + ".bin";
  ASSERT_TRUE(testing::WaitUntilReplaced(checkpoint, 120s))
      << "node " << victim << " wrote no second checkpoint:\n"
      << testing::ReadFile(NodePath(dir, "log", victim));
  procs[victim]->Signal(SIGKILL);
  EXPECT_EQ(procs[victim]->Wait(30s), 128 + SIGKILL);
  ASSERT_FALSE(fs::exists(NodePath(dir, "model", victim) + ".txt")) << "killed after it finished";
  std::vector<std::string> resume = args;
  resume.push_back("--resume");
  procs[victim] = Start(dir, cluster, victim, resume, NodePath(dir, "log", victim) + "-resumed");
  const std::vector<Vec> models = WaitAll(&procs, dir, victim);
  const std::string resumed = testing::ReadFile(NodePath(dir, "log", victim) + "-resumed");
  EXPECT_NE(resumed.find("resumed from"), std::string::npos) << resumed;
  const double worst = WorstError(models, x_star);
  std::printf("async-admm with node %d killed and resumed: worst ||x_i - x*||/||x*|| = %.3g\n",
              victim, worst);
  EXPECT_LE(worst, 1e-7);
  fs::remove_all(dir);
}

// The gap is 0.0007-0.0013 alone, but was 0.013 once at the start of a loaded suite (against the
// 0.01 bound; not explained). 3000 steps do not help: 0.0023-0.0079 in three runs alone.
TEST(AcidDaemons, RunToTheEndNearTheCentralizedOptimum) {
  const std::string dir = testing::FreshTempDir("acid");
  const std::string data = testing::WriteLogisticData(dir + "/l.txt", 800, 6, 5);
  const int n = 4;
  const std::string cluster =
      testing::WriteLoopbackCluster(dir, topology::Ring(n), testing::PortBase() + 15, false);
  // 2 ms of compute per step, so that the run (about 3 s) is long against the daemons' start-up
  // skew: a node takes its first step once one neighbour is met (the start phase,
  // docs/explanations/algorithms/swarmsgd.md), and without a delay the whole run took
  // 0.5-0.8 s, so under load two nodes did up to 1,400 of their 1,500 steps before the other two
  // were up, on half the data: the mean model's gap was 0.0005-0.0104 (2 of 6 runs over 1e-2 at
  // load 7), with the delay 0.0010-0.0029 (13 runs, load 5-8, 5 of them beside two CPU hogs).
  const std::vector<std::string> args = {"--algorithm",
                                         "acid",
                                         "--problem",
                                         "logistic",
                                         "--l2",
                                         "1e-2",
                                         "--data",
                                         data,
                                         "--format",
                                         "libsvm",
                                         "--iterations",
                                         "1500",
                                         "--batch",
                                         "16",
                                         "--seed",
                                         "3",
                                         "--step-schedule",
                                         "inv-sqrt:t0=100",
                                         "--compute-delay-ms",
                                         "2"};
  std::vector<std::unique_ptr<Subprocess>> procs;
  for (int i = 0; i < n; ++i)
    procs.push_back(Start(dir, cluster, i, args, NodePath(dir, "log", i)));
  const std::vector<Vec> models = WaitAll(&procs, dir);
  node::RunConfig config;
  config.algorithm = "acid";
  config.problem = "logistic";
  config.data = data;
  config.format = "libsvm";
  config.l2 = 1e-2;
  config.nodes = n;
  const node::RunSetup setup = node::BuildRunSetup(config);
  const double f_star = algorithms::SolveReference(*setup.global).value;
  Vec mean = Vec::Zero(models[0].size());
  for (const Vec& m : models) mean += m / n;
  const double gap = (setup.global->Value(mean) - f_star) / f_star;
  std::printf("acid daemons: relative gap of the mean model %.3g\n", gap);
  EXPECT_LE(gap, 1e-2);
  const std::string metrics = testing::ReadFile(NodePath(dir, "metrics", 0) + ".jsonl");
  EXPECT_NE(metrics.find("\"iter\""), std::string::npos) << "no telemetry lines";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace starling
