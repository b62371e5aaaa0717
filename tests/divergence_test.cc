// Too large a step on logistic or multinomial regression keeps the model finite (the losses grow
// linearly), so a run could end "successfully" at an objective of 1e160 or more. The divergence
// criterion (node/report/divergence_guard.h) stops it with exit 4 and "try a
// smaller --step", in the simulator and in real daemons alike; a converging run is not stopped.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "node/config/run_setup.h"
#include "node/report/divergence_guard.h"
#include "node/sim/sim_runner.h"
#include "tests/daemon_cluster.h"
#include "tests/subprocess.h"
#include "tests/test_data.h"
#include "tests/written_data.h"
#include "topology/generators.h"

namespace starling {
namespace {

namespace fs = std::filesystem;

const std::string kSim = std::string(STARLING_BINARY_DIR) + "/node/starling-sim";

TEST(DivergenceGuard, ThresholdsAreRelativeToTheStartWithAnAbsoluteMargin) {
  node::DivergenceGuard guard(0.69, 0.0);
  EXPECT_DOUBLE_EQ(guard.objective_limit(), 1e3 * 1.69);
  EXPECT_DOUBLE_EQ(guard.norm_limit(), 1e8);
  EXPECT_FALSE(guard.Check(0.3, 0.0));  // not moved yet: the limit stays 1e8 x (0 + 1)
  EXPECT_DOUBLE_EQ(guard.norm_limit(), 1e8);
  EXPECT_FALSE(guard.Check(0.3, 0.5));  // the first move: S = 0.5
  EXPECT_DOUBLE_EQ(guard.norm_limit(), 1.5e8);
  EXPECT_FALSE(guard.Check(0.3, 10.0));
  EXPECT_DOUBLE_EQ(guard.norm_limit(), 1.5e8);  // only the first move sets S
  EXPECT_FALSE(guard.Check(1000.0, 10.0));      // bad, but not divergence by the definition
  EXPECT_FALSE(guard.Check(std::nullopt, 1e7));
  auto why = guard.Check(27148.0, 10.0);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("objective 2.715e+04"), std::string::npos) << *why;
  EXPECT_TRUE(guard.Check(std::nullopt, 2e8));
  EXPECT_TRUE(guard.Check(std::nan(""), 1.0));
  EXPECT_TRUE(guard.Check(0.3, std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(node::DivergenceGuard(-5.0, 0.0).Check(6e3 + 1, 1.0));  // |f0|: negative starts
}

// A problem whose answer is large: the first move is of its scale, and a converging run's norm
// (here 1.4e9, far above 1e8 x (||x0|| + 1)) is not taken for divergence; a norm that then
// grows 1e8 times past the first move's is.
TEST(DivergenceGuard, TheNormsLimitIsRelativeToTheRunsFirstMove) {
  node::DivergenceGuard guard(1.4e15, 0.0);
  EXPECT_FALSE(guard.Check(1e15, 3.0e7));  // the first step: S = 3e7
  EXPECT_FALSE(guard.Check(1e12, 9.0e8));
  EXPECT_FALSE(guard.Check(1e5, 1.4e9));
  EXPECT_FALSE(guard.Check(std::nullopt, 1.4e9));
  auto why = guard.Check(std::nullopt, 4e15);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("S = 3e+07"), std::string::npos) << *why;
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

// Least squares with the answer in large units: the first 400 rows of a9a (123 binary
// features), the target its +-1 label times 2e9 plus 2e8 x the row's feature count (so that the
// answer is not one direction), ridge 0.1. ||x*|| ~ 1e9, far above the norm limit
// 1e8 x (||x0|| + 1) a guard relative to x0 alone would set. The optimum is solved here with
// Eigen's column-pivoting QR on the stacked system [A / sqrt(m); sqrt(l2) I] x = [b / sqrt(m); 0].
struct LargeProblem {
  std::string data;
  Vec x_star;
  double f_star = 0;
};

LargeProblem WriteLargeAnswerProblem(const std::string& dir, double l2) {
  constexpr int kRows = 400, kDim = 123;
  std::ifstream in(testing::SharedData("a9a"));
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(kRows, kDim);
  Vec b(kRows);
  LargeProblem p;
  p.data = dir + "/large.libsvm";
  std::ofstream out(p.data);
  out.precision(17);
  std::string line;
  for (int r = 0; r < kRows && std::getline(in, line); ++r) {
    std::istringstream fields(line);
    double label;
    fields >> label;
    std::string item;
    std::ostringstream features;
    int count = 0;
    while (fields >> item) {
      const int index = std::stoi(item.substr(0, item.find(':')));
      a(r, index - 1) = std::stod(item.substr(item.find(':') + 1));
      features << " " << item;
      ++count;
    }
    b(r) = label * 2e9 + 2e8 * count;
    out << b(r) << features.str() << "\n";
  }
  out.close();
  const double m = kRows;
  Eigen::MatrixXd stacked(kRows + kDim, kDim);
  stacked << a / std::sqrt(m), std::sqrt(l2) * Eigen::MatrixXd::Identity(kDim, kDim);
  Vec rhs = Vec::Zero(kRows + kDim);
  rhs.head(kRows) = b / std::sqrt(m);
  p.x_star = stacked.colPivHouseholderQr().solve(rhs);
  p.f_star = 0.5 / m * (a * p.x_star - b).squaredNorm() + 0.5 * l2 * p.x_star.squaredNorm();
  return p;
}

// The simulator and real daemons converge on it (the guard relative to x0 alone stopped them
// within a few steps with exit 4), and --reference-optimum auto solves it (an absolute gradient
// tolerance of 1e-10 is out of reach on an objective of ~1e18).
TEST(LargeAnswer, LeastSquaresInLargeUnitsIsNotTakenForDivergence) {
  STARLING_REQUIRE_FILE(testing::SharedData("a9a"));
  const std::string dir = testing::FreshTempDir("divergence-large");
  const double l2 = 0.1;
  const LargeProblem p = WriteLargeAnswerProblem(dir, l2);
  std::printf("large answer: ||x*|| = %.4g, f* = %.6g (Eigen QR)\n", p.x_star.norm(), p.f_star);
  ASSERT_GT(p.x_star.norm(), 1e9);
  const std::vector<std::string> problem = {"--algorithm", "extra",  "--problem",  "least-squares",
                                            "--l2",        "0.1",    "--data",     p.data,
                                            "--format",    "libsvm", "--features", "123"};
  // starling-sim, with f* from this test and with auto (the reference solver's).
  for (const std::string reference : {std::string("auto"), std::to_string(p.f_star)}) {
    std::vector<std::string> args = problem;
    args.insert(args.end(), {"--nodes", "4", "--topology", "ring", "--iterations", "3000",
                             "--reference-optimum", reference});
    const SimResult r = RunSim(dir, args);
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_EQ(r.output.find("diverged"), std::string::npos) << r.output;
    auto field = [&](const std::string& name) {
      const size_t at = r.output.find("\n" + name + " ");
      return at == std::string::npos
                 ? std::nan("")
                 : std::strtod(r.output.c_str() + at + name.size() + 2, nullptr);
    };
    std::printf("starling-sim --reference-optimum %s: f_star %.15g, rel_gap %.3g\n",
                reference.c_str(), field("f_star"), field("rel_gap"));
    EXPECT_NEAR(field("f_star"), p.f_star, 1e-9 * p.f_star) << r.output;
    EXPECT_LT(std::abs(field("rel_gap")), 1e-9) << r.output;
  }
  // Real daemons: every final model close to Eigen's x*.
  const int n = 4;
  const std::string cluster =
      testing::WriteLoopbackCluster(dir, topology::Ring(n), testing::PortBase() + 0, true);
  std::vector<std::string> args = problem;
  args.insert(args.end(), {"--iterations", "3000", "--linger-s", "5"});
  const std::vector<Vec> models = testing::RunLoopbackDaemons(dir, cluster, n, args, 300);
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(models[i].size(), p.x_star.size());
    const double err = (models[i] - p.x_star).norm() / p.x_star.norm();
    std::printf("node %d: ||x_i - x*|| / ||x*|| = %.3g\n", i, err);
    EXPECT_LT(err, 1e-6) << "node " << i;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace starling
