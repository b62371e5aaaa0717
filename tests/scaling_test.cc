// Feature scaling (algorithms/data/feature_scaling.h, --scale): statistics computed here by hand,
// sparse data kept sparse, the test file scaled with the training statistics, the same scaling on
// every node, the run id, the unscaled-features warning, and --scale none bit for bit as before
// (a fit on one node's shard would differ from node to node).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/data/feature_scaling.h"
#include "algorithms/data/readers.h"
#include "algorithms/problems/problem_factory.h"
#include "algorithms/problems/reference_solver.h"
#include "node/config/run_id.h"
#include "node/config/run_setup.h"
#include "tests/daemon_cluster.h"
#include "tests/subprocess.h"
#include "tests/temp_dir_test.h"
#include "tests/test_data.h"
#include "topology/generators.h"

namespace starling {
namespace {

namespace fs = std::filesystem;
using algorithms::Dataset;
using algorithms::FeatureScaling;
using ::testing::HasSubstr;

Dataset Dense(const std::vector<std::vector<double>>& rows, const std::string& source = "d.csv") {
  Dataset data;
  data.num_features = static_cast<int>(rows[0].size());
  data.dense.resize(static_cast<Eigen::Index>(rows.size()), data.num_features);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int j = 0; j < data.num_features; ++j) data.dense(i, j) = rows[i][j];
  }
  data.labels = Vec::Ones(static_cast<Eigen::Index>(rows.size()));
  data.source = source;
  return data;
}

Dataset Sparse(const Dataset& dense) {
  Dataset s = dense;
  s.is_sparse = true;
  s.sparse = dense.dense.sparseView();
  s.sparse.makeCompressed();
  s.dense.resize(0, 0);
  return s;
}

template <typename F>
std::string ErrorOf(F f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception";
  return "";
}

// Column 0: 1, 2, 3, 6 (mean 3, population variance (4 + 1 + 0 + 9) / 4 = 3.5, min 1, max 6).
// Column 1: 0, -4, 0, 2 (mean -0.5, variance (0.25 + 12.25 + 0.25 + 6.25) / 4 = 4.75, max|x| 4).
// Column 2: constant 5.
const std::vector<std::vector<double>> kRows = {{1, 0, 5}, {2, -4, 5}, {3, 0, 5}, {6, 2, 5}};

TEST(FeatureScalingTest, StandardOnDenseDataCentresAndDividesByThePopulationStd) {
  const Dataset data = Dense(kRows);
  const FeatureScaling f = FeatureScaling::Fit(data, "standard");
  EXPECT_TRUE(f.centred);
  Dataset scaled = data;
  f.Apply(&scaled);
  EXPECT_NEAR(scaled.dense(3, 0), (6 - 3) / std::sqrt(3.5), 1e-15);
  EXPECT_NEAR(scaled.dense(1, 1), (-4 + 0.5) / std::sqrt(4.75), 1e-15);
  EXPECT_EQ(scaled.dense(0, 2), 0.0);  // constant: shifted to 0, factor 1
  EXPECT_NEAR(scaled.dense.col(0).mean(), 0.0, 1e-15);
  EXPECT_NEAR(scaled.dense.col(0).squaredNorm() / 4, 1.0, 1e-14);
}

TEST(FeatureScalingTest, MinmaxAndMaxabs) {
  const Dataset data = Dense(kRows);
  Dataset minmax = data, maxabs = data;
  FeatureScaling::Fit(data, "minmax").Apply(&minmax);
  FeatureScaling::Fit(data, "maxabs").Apply(&maxabs);
  EXPECT_DOUBLE_EQ(minmax.dense(1, 0), (2.0 - 1) / 5);
  EXPECT_DOUBLE_EQ(minmax.dense(1, 1), 0.0);
  EXPECT_DOUBLE_EQ(minmax.dense(3, 1), 1.0);
  EXPECT_DOUBLE_EQ(maxabs.dense(1, 1), -1.0);
  EXPECT_DOUBLE_EQ(maxabs.dense(3, 0), 1.0);
  EXPECT_DOUBLE_EQ(maxabs.dense(0, 2), 1.0);
}

TEST(FeatureScalingTest, SparseDataStaysSparse) {
  const Dataset sparse = Sparse(Dense(kRows));
  const Eigen::Index stored = sparse.sparse.nonZeros();
  // maxabs: as on dense data.
  Dataset maxabs = sparse;
  FeatureScaling::Fit(sparse, "maxabs").Apply(&maxabs);
  EXPECT_EQ(maxabs.sparse.nonZeros(), stored);
  EXPECT_DOUBLE_EQ(maxabs.sparse.coeff(1, 1), -1.0);
  // standard: divided by the std (zeros included in it), not centred.
  const FeatureScaling standard = FeatureScaling::Fit(sparse, "standard");
  EXPECT_FALSE(standard.centred);
  Dataset scaled = sparse;
  standard.Apply(&scaled);
  EXPECT_EQ(scaled.sparse.nonZeros(), stored);
  EXPECT_NEAR(scaled.sparse.coeff(1, 1), -4 / std::sqrt(4.75), 1e-15);
  EXPECT_NEAR(scaled.sparse.coeff(3, 0), 6 / std::sqrt(3.5), 1e-15);
  EXPECT_THAT(standard.Describe(), HasSubstr("not centred"));
  // minmax would shift every feature: refused, with the alternatives.
  const std::string e = ErrorOf([&] { FeatureScaling::Fit(sparse, "minmax"); });
  EXPECT_THAT(e, HasSubstr("d.csv"));
  EXPECT_THAT(e, HasSubstr("maxabs"));
}

TEST(FeatureScalingTest, WritesAFileThatReadsBackExactly) {
  const FeatureScaling f = FeatureScaling::Fit(Dense(kRows), "standard");
  const std::string path =
      (fs::temp_directory_path() / ("starling-scaling-" + std::to_string(getpid()))).string();
  f.Write(path, "a comment");
  const FeatureScaling back = FeatureScaling::Read(path);
  EXPECT_EQ(back.method, "standard");
  EXPECT_TRUE(back.centred);
  EXPECT_EQ(back.shift, f.shift);
  EXPECT_EQ(back.factor, f.factor);
  EXPECT_EQ(back.Canonical(), f.Canonical());
  std::ofstream(path) << "not a scaling\n";
  EXPECT_THAT(ErrorOf([&] { FeatureScaling::Read(path); }), HasSubstr(path + ":1:"));
  fs::remove(path);
}

// ---- Through BuildRunSetup.

class ScalingSetupTest : public testing::TempDirTest {
 protected:
};

// Binary data whose two features have scales 1e4 apart: feature 0 ~ 1e4 N(y, 1), feature 1 ~
// N(-y, 1), so a useful model needs both.
std::string WideScalesCsv(int m, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::ostringstream s;
  s.precision(17);
  for (int i = 0; i < m; ++i) {
    const int y = i % 2 ? 1 : -1;
    s << y << "," << 1e4 * (y + normal(rng)) << "," << (-y + normal(rng)) << "\n";
  }
  return s.str();
}

TEST_F(ScalingSetupTest, Obs7ScaledRunIsTheIndependentOptimumOnScaledFeatures) {
  const std::string train = Write("wide.csv", WideScalesCsv(200, 1));
  node::RunConfig c;
  c.data = train;
  c.test_data = Write("wide-test.csv", WideScalesCsv(50, 2));
  c.nodes = 4;
  c.l2 = 1e-2;
  c.scale = "standard";
  const node::RunSetup s = node::BuildRunSetup(c);
  // Scale by hand from the file (not through the code under test), then compare the optimum of
  // the scaled problem with one built here from those numbers.
  Dataset raw = algorithms::ReadCsv(train);
  Eigen::MatrixXd a = raw.dense;
  for (int j = 0; j < a.cols(); ++j) {
    const double mean = a.col(j).mean();
    const double sd = std::sqrt((a.col(j).array() - mean).square().mean());
    a.col(j) = (a.col(j).array() - mean) / sd;
  }
  Dataset by_hand = raw;
  by_hand.dense = a;
  const auto expected = algorithms::MakeProblem({"logistic", c.l2, 0}, by_hand, 1.0 / 200);
  const double f_star = algorithms::SolveReference(*expected).value;
  const algorithms::ReferenceSolution got = algorithms::SolveReference(*s.global);
  EXPECT_NEAR(got.value, f_star, 1e-10);
  // The bound drops by orders of magnitude, so the default step grows as much.
  c.scale = "none";
  const node::RunSetup unscaled = node::BuildRunSetup(c);
  EXPECT_GT(unscaled.smoothness, 1e5 * s.smoothness) << unscaled.smoothness << " " << s.smoothness;
  // The test file is scaled with the training statistics (not its own): compare with the test
  // file scaled by hand with the training mean and std.
  Dataset test = algorithms::ReadCsv(c.test_data);
  for (int j = 0; j < 2; ++j) {
    const double mean = raw.dense.col(j).mean();
    const double sd = std::sqrt((raw.dense.col(j).array() - mean).square().mean());
    test.dense.col(j) = (test.dense.col(j).array() - mean) / sd;
  }
  const auto test_by_hand =
      algorithms::MakeProblem({"logistic", c.l2, 0}, test, 1.0 / 200);  // 1/M of --data
  EXPECT_EQ(*s.test->Accuracy(got.x), *test_by_hand->Accuracy(got.x));
  EXPECT_NEAR(s.test->Value(got.x), test_by_hand->Value(got.x), 1e-12);
  EXPECT_GT(*s.test->Accuracy(got.x), 0.75);
}

TEST_F(ScalingSetupTest, Obs7UnscaledFeaturesGiveAWarningThatSuggestsScale) {
  node::RunConfig c;
  c.data = Write("wide.csv", WideScalesCsv(200, 1));
  c.nodes = 2;
  const node::RunSetup s = node::BuildRunSetup(c);
  bool warned = false;
  for (const node::DataNotice& n : s.notices) {
    if (n.warning && n.text.find("--scale") != std::string::npos) warned = true;
  }
  EXPECT_TRUE(warned);
  // Features of similar scales: no warning.
  c.data = Write("plain.csv", "1,0.5,-0.2\n-1,-0.4,0.3\n1,0.9,0.1\n-1,-0.1,-0.7\n");
  for (const node::DataNotice& n : node::BuildRunSetup(c).notices)
    EXPECT_FALSE(n.warning) << n.text;
  // With --scale: no warning either, and a notice that says what was done.
  c.data = Write("wide2.csv", WideScalesCsv(100, 3));
  c.scale = "maxabs";
  const node::RunSetup scaled = node::BuildRunSetup(c);
  bool said = false;
  for (const node::DataNotice& n : scaled.notices) {
    EXPECT_FALSE(n.warning) << n.text;
    said |= n.text.rfind("scale: maxabs", 0) == 0;
  }
  EXPECT_TRUE(said);
}

TEST_F(ScalingSetupTest, EveryNodeAndTheRunIdSeeTheSameScaling) {
  node::RunConfig c;
  c.data = Write("wide.csv", WideScalesCsv(90, 4));
  c.nodes = 3;
  c.step = 0.1;
  c.scale = "standard";
  const node::RunSetup all = node::BuildRunSetup(c);
  for (int i = 0; i < 3; ++i) {
    node::BuildScope scope;
    scope.only_node = i;
    scope.global = false;
    const node::RunSetup one = node::BuildRunSetup(c, scope);
    EXPECT_EQ(one.scaling.Canonical(), all.scaling.Canonical());
    EXPECT_EQ(node::RunIdFor(c, one), node::RunIdFor(c, all));
    const Vec x = Vec::LinSpaced(2, -0.3, 0.7);
    EXPECT_EQ(one.problems[i]->Value(x), all.problems[i]->Value(x));  // bit for bit
  }
  node::RunConfig other = c;
  other.scale = "maxabs";
  EXPECT_NE(node::RunIdFor(other, node::BuildRunSetup(other)), node::RunIdFor(c, all));
}

TEST_F(ScalingSetupTest, MinmaxOnSparseDataIsRefusedNamingTheOption) {
  node::RunConfig c;
  c.data = Write("s.svm", "1 1:2 3:1\n-1 2:4\n1 1:1\n");
  c.nodes = 1;
  c.scale = "minmax";
  const std::string e = ErrorOf([&] { node::BuildRunSetup(c); });
  EXPECT_THAT(e, HasSubstr("--scale minmax"));
  EXPECT_THAT(e, HasSubstr(c.data));
}

// ---- Through starling-sim.

const std::string kSim = std::string(STARLING_BINARY_DIR) + "/node/starling-sim";

// Runs starling-sim with `args`; returns its exit code, *out gets stdout and stderr.
int RunSim(const std::string& dir, const std::vector<std::string>& args, std::string* out) {
  std::vector<std::string> argv = {kSim};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string log = dir + "/sim.txt";
  testing::Subprocess p(argv, log);
  const int code = p.Wait(std::chrono::seconds(300));
  *out = testing::ReadFile(log);
  return code;
}

// The number after "NAME " on a line of starling-sim's summary; NaN if absent.
double SummaryValue(const std::string& out, const std::string& name) {
  const size_t at = out.find("\n" + name + " ");
  if (at == std::string::npos) return NAN;
  return std::strtod(out.c_str() + at + name.size() + 2, nullptr);
}

TEST_F(ScalingSetupTest, Obs7SimulatorWithScaleConvergesWhereRawFeaturesStall) {
  // Five features with scales 1 .. 1e4: with raw features the default step (0.5/L) is tiny.
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal;
  std::ostringstream csv;
  csv.precision(10);
  for (int i = 0; i < 1000; ++i) {
    const int y = i % 2 ? 1 : -1;
    csv << y;
    double scale = 1;
    for (int j = 0; j < 5; ++j, scale *= 10)
      csv << "," << scale * (0.7 * y * (j % 2 ? -1 : 1) + normal(rng));
    csv << "\n";
  }
  const std::string data = Write("wide5.csv", csv.str());
  const std::string metrics = dir_ + "/m.jsonl";
  const std::vector<std::string> common = {
      "--algorithm", "extra", "--iterations",        "1000", "--nodes", "4", "--l2", "1e-3",
      "--data",      data,    "--reference-optimum", "auto", "-q"};
  std::string out;
  std::vector<std::string> args = common;
  ASSERT_EQ(RunSim(dir_, args, &out), 0) << out;
  EXPECT_GT(SummaryValue(out, "rel_gap"), 0.1) << out;
  EXPECT_NE(out.find("warning: features look unscaled"), std::string::npos) << out;
  EXPECT_NE(out.find("consider --scale"), std::string::npos) << out;
  args.insert(args.end(), {"--scale", "standard", "--metrics", metrics});
  ASSERT_EQ(RunSim(dir_, args, &out), 0) << out;
  EXPECT_LT(SummaryValue(out, "rel_gap"), 1e-8) << out;
  EXPECT_EQ(out.find("warning"), std::string::npos) << out;
  // The mapping and the scaling are printed once, and head the metrics file.
  EXPECT_EQ(out.find("labels: --data " + data + ": -1 -> -1, 1 -> +1"),
            out.rfind("labels: --data "))
      << out;
  EXPECT_NE(out.find("scale: standard (centred), 5 features"), std::string::npos) << out;
  const std::string first =
      testing::ReadFile(metrics).substr(0, testing::ReadFile(metrics).find('\n'));
  EXPECT_NE(first.find("\"header\":\"starling-sim\""), std::string::npos) << first;
  EXPECT_NE(first.find("\"labels\":\"--data " + data + ": -1 -> -1, 1 -> +1"), std::string::npos)
      << first;
  EXPECT_NE(first.find("\"scale\":\"standard (centred)"), std::string::npos) << first;
  EXPECT_NE(first.find("\"run_id\":\"0x"), std::string::npos) << first;
  EXPECT_EQ(first.find("\"iter\""), std::string::npos) << first;
}

TEST_F(ScalingSetupTest, SimulatorRefusesABadScaleNamingTheOption) {
  std::string out;
  EXPECT_EQ(RunSim(dir_, {"--data", Write("x.csv", "1,2\n-1,3\n"), "--scale", "unit", "-q"}, &out),
            2);
  EXPECT_NE(out.find("--scale 'unit'"), std::string::npos) << out;
}

// ---- Through starlingd: the daemons fit the same label map and scaling as the simulator (their
// models equal its models), say so in their logs, and write the scaling beside the final model.

TEST_F(ScalingSetupTest, DaemonsScaleLikeTheSimulatorAndSaveTheScaling) {
  // Labels 1/2 and features 1e4 apart: rows alternate y = -1, +1 (i % 2), so label 1 + i % 2.
  std::istringstream lines(WideScalesCsv(120, 6));
  std::ostringstream relabelled;
  std::string line;
  for (int i = 0; std::getline(lines, line); ++i) {
    relabelled << (1 + i % 2) << line.substr(line.find(',')) << "\n";
  }
  const std::string data = Write("wide12.csv", relabelled.str());
  const int n = 3;
  const std::string cluster =
      testing::WriteLoopbackCluster(dir_, topology::Ring(n), testing::PortBase(), true);
  const std::vector<std::string> args = {
      "--algorithm", "extra", "--problem",    "logistic", "--l2",   "1e-2", "--data",  data,
      "--format",    "csv",   "--iterations", "100",      "--seed", "7",    "--scale", "standard"};
  const std::vector<Vec> models = testing::RunLoopbackDaemons(dir_, cluster, n, args, 120);
  const std::vector<Vec> expected =
      testing::SimulatedA9aModels("extra", data, cluster, n, 100, [](node::RunConfig* c) {
        c->format = "csv";
        c->scale = "standard";
      });
  node::RunConfig config;
  config.data = data;
  config.format = "csv";
  config.nodes = n;
  config.scale = "standard";
  config.step = 0.1;
  const node::RunSetup setup = node::BuildRunSetup(config, {-1, false, false});
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(models[i].size(), 2) << i;
    EXPECT_EQ(models[i], expected[i]) << "node " << i;  // bit for bit
    const std::string log = testing::ReadFile(dir_ + "/node-" + std::to_string(i) + ".log");
    EXPECT_NE(log.find("labels: --data " + data + ": 1 -> -1, 2 -> +1"), std::string::npos) << log;
    EXPECT_NE(log.find("scale: standard (centred)"), std::string::npos) << log;
    const std::string saved = dir_ + "/model-" + std::to_string(i) + ".txt.scaling";
    EXPECT_EQ(FeatureScaling::Read(saved).Canonical(), setup.scaling.Canonical()) << saved;
  }
  // The model file itself stays one number per line (ReadModelFile read two numbers above).
}

TEST(ScalingRealDataTest, A9aNoneIsBitIdenticalToNoScalingAndMaxabsKeepsIt) {
  const std::string path = testing::SharedData("a9a");
  STARLING_REQUIRE_FILE(path);
  node::RunConfig c;
  c.data = path;
  c.nodes = 4;
  c.l2 = 1e-2;
  const node::RunSetup none = node::BuildRunSetup(c);
  // The problem over the file as read, with its labels as they are (a9a is -1/+1).
  const auto direct = algorithms::MakeProblem({"logistic", c.l2, 0}, algorithms::ReadLibsvm(path),
                                              1.0 / none.num_samples);
  const Vec x = Vec::LinSpaced(123, -0.5, 0.5);
  EXPECT_EQ(none.global->Value(x), direct->Value(x));
  EXPECT_FALSE(none.scaling.active());
  // a9a's features are 0/1: maxabs changes nothing.
  c.scale = "maxabs";
  const node::RunSetup maxabs = node::BuildRunSetup(c);
  EXPECT_EQ(maxabs.global->Value(x), direct->Value(x));
}

}  // namespace
}  // namespace starling
