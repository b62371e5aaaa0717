// Real daemons with --snapshots, then the real `starling-probe evaluate`: a SwarmSGD run and an
// EXTRA run (round-based) each give dense curves (>= 50 points, steps and bytes growing, the last
// point the nodes' final models at the time the last node ended), and the curves equal a direct
// evaluation, here, of the same models: the final point that of the final model files, and for
// EXTRA (deterministic, equal to the simulator) the point at step 100 that of the simulator's
// models at iteration 100.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "node/config/run_setup.h"
#include "node/sim/round_simulator.h"
#include "tests/daemon_cluster.h"
#include "tests/logistic_rows.h"
#include "tests/subprocess.h"
#include "topology/generators.h"

namespace starling::testing {
namespace {

const std::string kProbe = std::string(STARLING_BINARY_DIR) + "/node/starling-probe";
constexpr int kNodes = 4, kDim = 6;
constexpr double kL2 = 0.01;

double Field(const std::string& line, const std::string& key) {
  const size_t at = line.find("\"" + key + "\":");
  if (at == std::string::npos) return std::nan("");
  return std::strtod(line.c_str() + at + key.size() + 3, nullptr);
}

std::vector<std::string> Points(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"iter\"") != std::string::npos) lines.push_back(line);
  }
  return lines;
}

std::vector<double> MeanOf(const std::vector<std::vector<double>>& xs) {
  std::vector<double> mean(xs[0].size(), 0.0);
  for (const auto& x : xs) {
    for (size_t j = 0; j < x.size(); ++j) mean[j] += x[j] / static_cast<double>(xs.size());
  }
  return mean;
}

std::vector<double> Std(const Vec& v) { return std::vector<double>(v.data(), v.data() + v.size()); }

class SnapshotDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshTempDir("snapshot-daemon");
    train_ = WriteRows(dir_ + "/train.svm", 400, kDim, 21);
    test_ = WriteRows(dir_ + "/test.svm", 200, kDim, 22);
  }

  // Runs the daemons with `run` (the run options) and --snapshots, then evaluate; returns the
  // curves' points.
  std::vector<std::string> RunAndEvaluate(const std::string& name, int port_offset,
                                          const std::vector<std::string>& run) {
    const std::string dir = dir_ + "/" + name;
    std::filesystem::create_directories(dir);
    cluster_ = WriteLoopbackCluster(dir, topology::MakeTopology("ring", kNodes, 1),
                                    PortBase() + port_offset, /*keys=*/true);
    std::vector<std::unique_ptr<Subprocess>> procs;
    for (int i = 0; i < kNodes; ++i) {
      const std::string k = std::to_string(i);
      std::vector<std::string> argv = {kDaemonBinary,
                                       "--cluster",
                                       cluster_,
                                       "--id",
                                       k,
                                       "--final-model",
                                       dir + "/model-" + k + ".txt",
                                       "--secret-key",
                                       dir + "/keys/node-" + k + ".key",
                                       "--snapshots",
                                       dir + "/snapshots-" + k + ".bin",
                                       "--linger-s",
                                       "20"};
      argv.insert(argv.end(), run.begin(), run.end());
      procs.push_back(std::make_unique<Subprocess>(argv, dir + "/node-" + k + ".log"));
    }
    for (int i = 0; i < kNodes; ++i) {
      const int code = procs[i]->Wait(std::chrono::seconds(240));
      EXPECT_EQ(code, 0) << ReadFile(dir + "/node-" + std::to_string(i) + ".log");
      models_.push_back(Std(ReadModelFile(dir + "/model-" + std::to_string(i) + ".txt")));
    }
    std::vector<std::string> argv = {kProbe, "evaluate", dir, "--threads", "2"};
    argv.insert(argv.end(), run.begin(), run.end());
    Subprocess evaluate(argv, dir + "/evaluate.log");
    EXPECT_EQ(evaluate.Wait(std::chrono::seconds(240)), 0) << ReadFile(dir + "/evaluate.log");
    log_ = ReadFile(dir + "/evaluate.log");
    return Points(dir + "/curves.jsonl");
  }

  // Dense, growing, ending with the final models at the latest time.
  void ExpectDenseCurves(const std::vector<std::string>& points, int64_t iterations) {
    ASSERT_GE(points.size(), 50u) << log_;
    for (size_t p = 1; p < points.size(); ++p) {
      SCOPED_TRACE(points[p]);
      EXPECT_GE(Field(points[p], "iter"), Field(points[p - 1], "iter"));
      EXPECT_GE(Field(points[p], "bytes"), Field(points[p - 1], "bytes"));
      EXPECT_GE(Field(points[p], "time"), Field(points[p - 1], "time"));
    }
    EXPECT_EQ(Field(points.front(), "iter"), 0);
    EXPECT_EQ(Field(points.back(), "final"), 1);
    EXPECT_EQ(Field(points.back(), "iter"), iterations);
    EXPECT_GT(Field(points.back(), "bytes"), 0);
    // The final point is the final models, evaluated here.
    const std::vector<double> mean = MeanOf(models_);
    const double f = Objective(train_, kL2, mean);
    EXPECT_NEAR(Field(points.back(), "objective"), f, 1e-12 * f) << points.back();
    EXPECT_DOUBLE_EQ(Field(points.back(), "test_accuracy"), Accuracy(test_, mean));
  }

  std::vector<std::string> Common() const {
    return {"--problem",   "logistic",         "--l2",     "0.01",   "--data", dir_ + "/train.svm",
            "--test-data", dir_ + "/test.svm", "--format", "libsvm", "--seed", "3"};
  }

  std::string dir_, cluster_, log_;
  std::vector<Row> train_, test_;
  std::vector<std::vector<double>> models_;
};

TEST_F(SnapshotDaemonTest, SwarmSgdCurvesEndAtTheFinalModels) {
  std::vector<std::string> run = Common();
  run.insert(run.end(),
             {"--algorithm", "swarmsgd", "--iterations", "600", "--batch", "8", "--step", "0.05"});
  const std::vector<std::string> points = RunAndEvaluate("swarm", 0, run);
  ExpectDenseCurves(points, 600);
  // Steps 0, 10, ..., 600 (64 snapshots per run at most after step 0), and the final models.
  EXPECT_EQ(points.size(), 62u) << log_;
}

TEST_F(SnapshotDaemonTest, ExtraCurvesEqualTheSimulatorAtEveryStep) {
  std::vector<std::string> run = Common();
  run.insert(run.end(), {"--algorithm", "extra", "--iterations", "200"});
  const std::vector<std::string> points = RunAndEvaluate("extra", 2, run);
  ExpectDenseCurves(points, 200);
  ASSERT_EQ(points.size(), 52u) << log_;  // steps 0, 4, ..., 200, and the final models
  // The simulator's models at iteration 100 (point 25), evaluated here.
  node::RunConfig config;
  config.algorithm = "extra";
  config.problem = "logistic";
  config.l2 = kL2;
  config.data = dir_ + "/train.svm";
  config.test_data = dir_ + "/test.svm";
  config.format = "libsvm";
  config.seed = 3;
  config.iterations = 200;
  config.nodes = kNodes;
  config.topology = "file:" + cluster_;
  node::BuildScope scope;
  scope.global = false;
  const node::RunSetup setup = node::BuildRunSetup(config, scope);
  node::RoundSimulator sim(setup.nodes, node::RoundOptionsFor(config, setup));
  sim.RunUntilIteration(100);
  std::vector<std::vector<double>> xs;
  for (int i = 0; i < kNodes; ++i) xs.push_back(Std(sim.node(i).Model()));
  const std::vector<double> mean = MeanOf(xs);
  const std::string& at100 = points[25];
  ASSERT_EQ(Field(at100, "iter"), 100) << at100;
  const double f = Objective(train_, kL2, mean);
  EXPECT_NEAR(Field(at100, "objective"), f, 1e-12 * f) << at100;
  double consensus = 0;
  for (const auto& x : xs) {
    for (int j = 0; j < kDim; ++j) consensus += (x[j] - mean[j]) * (x[j] - mean[j]) / kNodes;
  }
  EXPECT_NEAR(Field(at100, "consensus"), consensus, 1e-9 * consensus + 1e-300) << at100;
}

}  // namespace
}  // namespace starling::testing
