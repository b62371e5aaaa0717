// Too large a step on logistic or multinomial regression keeps the model finite (the losses grow
// linearly), so a run could end "successfully" at an objective of 1e160 or more. The divergence
// criterion (node/report/divergence_guard.h) stops it with exit 4 and "try a
// smaller --step", in the simulator and in real daemons alike; a converging run is not stopped.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "node/config/run_setup.h"
#include "node/report/divergence_guard.h"
#include "node/sim/sim_runner.h"
#include "tests/daemon_cluster.h"
#include "tests/subprocess.h"
#include "tests/written_data.h"
#include "topology/generators.h"

namespace starling {
namespace {

namespace fs = std::filesystem;

const std::string kSim = std::string(STARLING_BINARY_DIR) + "/node/starling-sim";

TEST(DivergenceGuard, ThresholdsAreRelativeToTheStartWithAnAbsoluteMargin) {
  const node::DivergenceGuard guard(0.69, 0.0);
  EXPECT_DOUBLE_EQ(guard.objective_limit(), 1e3 * 1.69);
  EXPECT_DOUBLE_EQ(guard.norm_limit(), 1e8);
  EXPECT_FALSE(guard.Check(0.3, 10.0));
  EXPECT_FALSE(guard.Check(1000.0, 10.0));  // bad, but not divergence by the definition
  EXPECT_FALSE(guard.Check(std::nullopt, 1e7));
  auto why = guard.Check(27148.0, 10.0);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("objective 2.715e+04"), std::string::npos) << *why;
  EXPECT_TRUE(guard.Check(std::nullopt, 2e8));
  EXPECT_TRUE(guard.Check(std::nan(""), 1.0));
  EXPECT_TRUE(guard.Check(0.3, std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(node::DivergenceGuard(-5.0, 0.0).Check(6e3 + 1, 1.0));  // |f0|: negative starts
}

struct SimResult {
  int code;
  std::string output;
};

SimResult RunSim(const std::string& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kSim, "-q"};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string log = dir + "/sim.log";
  testing::Subprocess sim(argv, log);
  const int code = sim.Wait(std::chrono::seconds(300));
  return {code, testing::ReadFile(log)};
}

class SimDivergence : public ::testing::TestWithParam<std::string> {};

// Logistic and multinomial with a step 100-1000 times the default: exit 4 with the advice.
TEST_P(SimDivergence, TooLargeAStepExitsFour) {
  const std::string problem = GetParam();
  const std::string dir = testing::FreshTempDir("divergence-sim-" + problem);
  const std::string data = problem == "logistic"
                               ? testing::WriteLogisticData(dir + "/data.libsvm", 400, 10, 3)
                               : testing::WriteMultinomialData(dir + "/data.libsvm", 400, 10, 3, 3);
  for (const char* algorithm : {"extra", "dgd"}) {
    const SimResult r = RunSim(dir, {"--algorithm", algorithm, "--problem", problem, "--l2", "1e-2",
                                     "--data", data, "--format", "libsvm", "--nodes", "4",
                                     "--topology", "ring", "--iterations", "300", "--step", "300"});
    EXPECT_EQ(r.code, 4) << algorithm << ":\n" << r.output;
    EXPECT_NE(r.output.find("try a smaller --step"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("the run diverged at iteration"), std::string::npos) << r.output;
    // The default step converges and is not stopped.
    const SimResult ok = RunSim(
        dir, {"--algorithm", algorithm, "--problem", problem, "--l2", "1e-2", "--data", data,
              "--format", "libsvm", "--nodes", "4", "--topology", "ring", "--iterations", "300"});
    EXPECT_EQ(ok.code, 0) << algorithm << ":\n" << ok.output;
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Problems, SimDivergence, ::testing::Values("logistic", "multinomial"));

TEST(SimDivergence, RunSimulationThrowsRunDiverged) {
  const std::string dir = testing::FreshTempDir("divergence-lib");
  node::RunConfig config;
  config.algorithm = "gradient-tracking";
  config.problem = "logistic";
  config.l2 = 1e-2;
  config.data = testing::WriteLogisticData(dir + "/data.libsvm", 400, 10, 4);
  config.format = "libsvm";
  config.nodes = 4;
  config.topology = "ring";
  config.iterations = 300;
  config.step = 300;
  const node::RunSetup setup = node::BuildRunSetup(config);
  EXPECT_THROW(node::RunSimulation(config, setup, {}), node::RunDiverged);
  fs::remove_all(dir);
}

// Real daemons, 100 iterations (the old check, non-finite models only, let this run end with
// exit 0 and models of 1e49; with 2,000 iterations they overflowed at step 612 and it caught
// them): every node stops with exit 4, the one that saw it says why (its local objective
// or norm), the others pass the "diverged" goodbye on.
TEST(DaemonDivergence, TooLargeAStepStopsEveryNodeWithExitFour) {
  const std::string dir = testing::FreshTempDir("divergence-daemons");
  const int n = 4;
  const std::string data = testing::WriteLogisticData(dir + "/data.libsvm", 400, 10, 3);
  const std::string cluster =
      testing::WriteLoopbackCluster(dir, topology::Ring(n), testing::PortBase() + 0, true);
  const std::vector<std::string> args = {
      "--algorithm", "extra",  "--problem",    "logistic", "--l2",   "1e-2", "--data",     data,
      "--format",    "libsvm", "--iterations", "100",      "--step", "300",  "--linger-s", "1"};
  std::vector<std::unique_ptr<testing::Subprocess>> procs;
  for (int i = 0; i < n; ++i) {
    const std::string node = std::to_string(i);
    std::vector<std::string> argv = {testing::kDaemonBinary,
                                     "--cluster",
                                     cluster,
                                     "--id",
                                     node,
                                     "--secret-key",
                                     dir + "/keys/node-" + node + ".key"};
    argv.insert(argv.end(), args.begin(), args.end());
    procs.push_back(std::make_unique<testing::Subprocess>(argv, dir + "/node-" + node + ".log"));
  }
  int said_why = 0;
  for (int i = 0; i < n; ++i) {
    const int code = procs[i]->Wait(std::chrono::seconds(180));
    const std::string log = testing::ReadFile(dir + "/node-" + std::to_string(i) + ".log");
    EXPECT_EQ(code, 4) << "node " << i << " log:\n" << log;
    EXPECT_NE(log.find("try a smaller --step"), std::string::npos) << log;
    said_why += log.find("its local objective") != std::string::npos ||
                log.find("the model norm") != std::string::npos;
  }
  EXPECT_GE(said_why, 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace starling
