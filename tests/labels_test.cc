// How a file's labels map to the problem (algorithms/data/label_map.h), and that BuildRunSetup
// applies the one map, fitted on the whole of --data, to every shard and to --test-data read with
// the same columns. Optima are checked against small solvers
// written here (Newton for logistic regression, gradient descent for softmax), not against the
// code under test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/data/label_map.h"
#include "algorithms/data/readers.h"
#include "algorithms/problems/reference_solver.h"
#include "node/config/run_id.h"
#include "node/config/run_setup.h"
#include "tests/subprocess.h"
#include "tests/temp_dir_test.h"
#include "tests/test_data.h"

namespace starling {
namespace {

namespace fs = std::filesystem;
using algorithms::Dataset;
using algorithms::LabelMap;
using algorithms::LabelTarget;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Dataset WithLabels(std::vector<double> labels, const std::string& source = "train.csv") {
  Dataset data;
  data.num_features = 1;
  data.dense = DenseMatrix::Ones(static_cast<Eigen::Index>(labels.size()), 1);
  data.labels = Eigen::Map<Vec>(labels.data(), static_cast<Eigen::Index>(labels.size()));
  data.source = source;
  return data;
}

std::vector<double> LabelsOf(const Dataset& data) {
  return std::vector<double>(data.labels.data(), data.labels.data() + data.labels.size());
}

std::vector<double> Mapped(const LabelMap& map, std::vector<double> labels) {
  Dataset data = WithLabels(labels, "other.csv");
  map.Apply(&data);
  return LabelsOf(data);
}

// The message of what `f` throws, or "" (and a failure) if it does not.
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

// ---- LabelMap itself.

TEST(LabelMapTest, BinaryFromAnyTwoValuesTheLargerIsPlusOne) {
  const std::vector<std::vector<double>> encodings = {{1, 2}, {0, 1}, {-1, 1}, {3.5, 7}};
  for (const auto& e : encodings) {
    const LabelMap map = LabelMap::Fit(WithLabels({e[1], e[0], e[0], e[1]}), LabelTarget::kBinary);
    EXPECT_EQ(map.num_classes(), 2);
    EXPECT_THAT(Mapped(map, {e[0], e[1], e[1]}), ElementsAre(-1, 1, 1)) << e[0] << "/" << e[1];
  }
  const LabelMap map = LabelMap::Fit(WithLabels({2, 1}, "b12.svm"), LabelTarget::kBinary);
  EXPECT_EQ(map.Describe(), "b12.svm: 1 -> -1, 2 -> +1 (binary: the larger value is +1)");
}

TEST(LabelMapTest, BinaryRefusesMoreThanTwoValuesAndOneValue) {
  std::vector<double> ten;
  for (int c = 0; c < 10; ++c) ten.push_back(c);
  std::string e = ErrorOf([&] { LabelMap::Fit(WithLabels(ten, "f.csv"), LabelTarget::kBinary); });
  EXPECT_THAT(e, HasSubstr("f.csv"));
  EXPECT_THAT(e, HasSubstr("10 distinct labels (0..9)"));
  EXPECT_THAT(e, HasSubstr("exactly two"));
  e = ErrorOf([&] { LabelMap::Fit(WithLabels({1, 1, 1}, "one.csv"), LabelTarget::kBinary); });
  EXPECT_THAT(e, HasSubstr("one.csv: every label is 1"));
  e = ErrorOf([&] { LabelMap::Fit(WithLabels({3, 3}, "one.csv"), LabelTarget::kClasses); });
  EXPECT_THAT(e, HasSubstr("every label is 3"));
  e = ErrorOf([&] { LabelMap::Fit(WithLabels({0, NAN, 1}, "n.csv"), LabelTarget::kBinary); });
  EXPECT_THAT(e, HasSubstr("n.csv: sample 1 has a non-finite label"));
}

TEST(LabelMapTest, ClassesFromSortedDistinctValues) {
  const LabelMap k = LabelMap::Fit(WithLabels({4, 1, 3, 2, 1}), LabelTarget::kClasses);
  EXPECT_EQ(k.num_classes(), 4);
  EXPECT_THAT(Mapped(k, {1, 2, 3, 4}), ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(k.Describe(), "train.csv: 4 classes, 1..4 -> 0..3");
  const LabelMap pm = LabelMap::Fit(WithLabels({-1, 1, 1}), LabelTarget::kClasses);
  EXPECT_EQ(pm.num_classes(), 2);
  EXPECT_THAT(Mapped(pm, {1, -1}), ElementsAre(1, 0));
  const LabelMap gaps = LabelMap::Fit(WithLabels({10, -3, 7}), LabelTarget::kClasses);
  EXPECT_THAT(Mapped(gaps, {7, 10, -3}), ElementsAre(1, 2, 0));
  EXPECT_EQ(gaps.Describe(), "train.csv: 3 classes: -3 -> 0, 7 -> 1, 10 -> 2");
}

TEST(LabelMapTest, ClassesRefuseNonIntegers) {
  const std::string e = ErrorOf([] {
    LabelMap::Fit(WithLabels({0, 1, 2.5, 1}, "r.csv"), LabelTarget::kClasses);
  });
  EXPECT_THAT(e, HasSubstr("r.csv: label 2.5 (sample 2) is not an integer"));
}

TEST(LabelMapTest, FixedClassCountKeepsValuesAndAllowsAbsentClasses) {
  const LabelMap map = LabelMap::Fit(WithLabels({0, 3, 1}), LabelTarget::kClasses, 5);
  EXPECT_EQ(map.num_classes(), 5);
  EXPECT_THAT(Mapped(map, {4, 0, 3, 2}), ElementsAre(4, 0, 3, 2));
  EXPECT_THAT(map.Describe(), HasSubstr("5 classes 0..4 as written"));
  EXPECT_THAT(map.Describe(), HasSubstr("absent from the training data: 2, 4"));
  const std::string e = ErrorOf([] {
    LabelMap::Fit(WithLabels({1, 5}, "k.csv"), LabelTarget::kClasses, 5);
  });
  EXPECT_THAT(e, HasSubstr("k.csv: label 5 (sample 1) is not a class in 0..4"));
  // Binary with 2 fixed classes: 0/1 as written, one of them may be absent.
  const LabelMap ones = LabelMap::Fit(WithLabels({1, 1}), LabelTarget::kBinary, 2);
  EXPECT_THAT(Mapped(ones, {0, 1}), ElementsAre(-1, 1));
  EXPECT_ANY_THROW(LabelMap::Fit(WithLabels({1, 2}), LabelTarget::kBinary, 2));
  EXPECT_ANY_THROW(LabelMap::Fit(WithLabels({0, 1}), LabelTarget::kBinary, 3));
  EXPECT_ANY_THROW(LabelMap::Fit(WithLabels({0, 1}), LabelTarget::kRaw, 2));
}

TEST(LabelMapTest, AShardMapsAsTheWholeSet) {
  // A shard holding only classes 1 and 2 of 1..4 must not be taken for binary data or renumbered.
  const LabelMap map = LabelMap::Fit(WithLabels({1, 2, 3, 4}), LabelTarget::kClasses);
  EXPECT_THAT(Mapped(map, {2, 1, 2}), ElementsAre(1, 0, 1));
  const LabelMap binary = LabelMap::Fit(WithLabels({1, 2}), LabelTarget::kBinary);
  EXPECT_THAT(Mapped(binary, {2, 2}), ElementsAre(1, 1));
}

TEST(LabelMapTest, ALabelTheTrainingDataLacksIsExplainedAndChangesNothing) {
  const LabelMap map = LabelMap::Fit(WithLabels({1, 2, 3, 4, 5, 6}, "train.csv"),
                                     LabelTarget::kClasses, 0, "--data train.csv");
  Dataset test = WithLabels({1, 6, 7}, "test.csv");
  const std::string e = ErrorOf([&] { map.Apply(&test, "--test-data test.csv"); });
  EXPECT_EQ(e,
            "--test-data test.csv: label 7 (sample 2) does not occur in --data train.csv "
            "(classes 1..6)");
  EXPECT_THAT(LabelsOf(test), ElementsAre(1, 6, 7));
}

TEST(LabelMapTest, RegressionKeepsRawLabels) {
  const LabelMap map = LabelMap::Fit(WithLabels({0.25, -3, 1e6}), LabelTarget::kRaw);
  EXPECT_EQ(map.num_classes(), 0);
  EXPECT_THAT(Mapped(map, {0.25, 17.5}), ElementsAre(0.25, 17.5));
}

TEST(LabelMapTest, CanonicalTextDiffersWithTheMap) {
  const LabelMap a = LabelMap::Fit(WithLabels({1, 2}), LabelTarget::kBinary);
  const LabelMap b = LabelMap::Fit(WithLabels({0, 1}), LabelTarget::kBinary);
  const LabelMap c = LabelMap::Fit(WithLabels({0, 1}), LabelTarget::kClasses);
  EXPECT_NE(a.Canonical(), b.Canonical());
  EXPECT_NE(b.Canonical(), c.Canonical());
}

// ---- Independent solvers for the checks below.

// min_w (1/m) sum log(1 + exp(-y_i a_i.w)) + (l2/2)|w|^2 by Newton's method, y in {-1, +1}.
double LogisticOptimum(const Eigen::MatrixXd& a, const Eigen::VectorXd& y, double l2) {
  const int d = static_cast<int>(a.cols());
  const double m = static_cast<double>(a.rows());
  Eigen::VectorXd w = Eigen::VectorXd::Zero(d);
  const auto value = [&](const Eigen::VectorXd& v) {
    double f = 0;
    for (int i = 0; i < a.rows(); ++i) f += std::log1p(std::exp(-y[i] * a.row(i).dot(v)));
    return f / m + 0.5 * l2 * v.squaredNorm();
  };
  for (int it = 0; it < 100; ++it) {
    Eigen::VectorXd g = l2 * w;
    Eigen::MatrixXd h = l2 * Eigen::MatrixXd::Identity(d, d);
    for (int i = 0; i < a.rows(); ++i) {
      const double z = y[i] * a.row(i).dot(w);
      const double s = 1.0 / (1.0 + std::exp(z));  // sigma(-z)
      g -= (s * y[i] / m) * a.row(i).transpose();
      h += (s * (1 - s) / m) * a.row(i).transpose() * a.row(i);
    }
    if (g.norm() < 1e-13) break;
    w -= h.ldlt().solve(g);
  }
  return value(w);
}

// min_W (1/m) sum [logsumexp(a_i W) - a_i W_{:,y_i}] + (l2/2)|W|^2, y in 0..K-1, by gradient
// descent with step 1/L, L = max_i |a_i|^2 / 2 + l2 (a bound on the Hessian).
double SoftmaxOptimum(const Eigen::MatrixXd& a, const Eigen::VectorXi& y, int k, double l2) {
  const int d = static_cast<int>(a.cols());
  const double m = static_cast<double>(a.rows());
  Eigen::MatrixXd w = Eigen::MatrixXd::Zero(d, k);
  double smooth = l2;
  for (int i = 0; i < a.rows(); ++i) smooth = std::max(smooth, a.row(i).squaredNorm() / 2 + l2);
  double f = 0;
  for (int it = 0; it < 200000; ++it) {
    Eigen::MatrixXd g = l2 * w;
    f = 0.5 * l2 * w.squaredNorm();
    for (int i = 0; i < a.rows(); ++i) {
      Eigen::RowVectorXd z = a.row(i) * w;
      const double top = z.maxCoeff();
      Eigen::RowVectorXd p = (z.array() - top).exp();
      const double sum = p.sum();
      f += (top + std::log(sum) - z[y[i]]) / m;
      p /= sum;
      p[y[i]] -= 1;
      g += a.row(i).transpose() * p / m;
    }
    if (g.norm() < 1e-11) break;
    w -= g / smooth;
  }
  return f;
}

// ---- Through BuildRunSetup, on files written here.

class LabelsSetupTest : public testing::TempDirTest {
 protected:
  node::RunConfig Config(const std::string& problem, const std::string& data) {
    node::RunConfig c;
    c.problem = problem;
    c.data = data;
    c.nodes = 3;
    c.l2 = 1e-2;
    c.step = 0.1;
    return c;
  }
};

// Two Gaussian blobs; class `hi` when the first coordinate's mean is +1, `lo` otherwise.
struct Blobs {
  Eigen::MatrixXd a;
  std::vector<double> labels;
};
Blobs MakeBlobs(int m, double lo, double hi, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  Blobs b;
  b.a.resize(m, 3);
  for (int i = 0; i < m; ++i) {
    const bool positive = i % 2 == 0;
    b.a(i, 0) = (positive ? 1.0 : -1.0) + normal(rng);
    b.a(i, 1) = normal(rng);
    b.a(i, 2) = 0.5 * normal(rng);
    b.labels.push_back(positive ? hi : lo);
  }
  return b;
}

std::string Libsvm(const Blobs& b) {
  std::ostringstream s;
  s.precision(17);
  for (int i = 0; i < b.a.rows(); ++i) {
    s << b.labels[i];
    for (int j = 0; j < b.a.cols(); ++j) s << " " << j + 1 << ":" << b.a(i, j);
    s << "\n";
  }
  return s.str();
}

TEST_F(LabelsSetupTest, Obs2BinaryLabelledOneTwoMatchesAnIndependentNewtonSolve) {
  const Blobs b = MakeBlobs(200, 1, 2, 5);
  node::RunConfig c = Config("logistic", Write("b12.svm", Libsvm(b)));
  const node::RunSetup s = node::BuildRunSetup(c);
  EXPECT_EQ(s.labels.Describe(), "--data " + c.data +
                                     ": 1 -> -1, 2 -> +1 (binary: the larger "
                                     "value is +1)");
  Eigen::VectorXd y(200);
  for (int i = 0; i < 200; ++i) y[i] = b.labels[i] == 2 ? 1 : -1;
  const double expected = LogisticOptimum(b.a, y, c.l2);
  const algorithms::ReferenceSolution ref = algorithms::SolveReference(*s.global);
  EXPECT_NEAR(ref.value, expected, 1e-10);
  // Every label +1 (the old reading of 1/2) would give an optimum far below: a check that the
  // two classes really are apart.
  EXPECT_GT(expected, 0.2);
}

TEST_F(LabelsSetupTest, Obs1LabelColumnAppliesToTheTestDataToo) {
  // Label in column 2 of both files; column 0 holds numbers that are no label at all. The test
  // file's label is exactly the sign of feature f0 (column 1), so x = (1, 0, 0) is right on every
  // test row.
  std::string train = "noise,f0,label,f1\n", test = train;
  std::mt19937_64 rng(9);
  std::normal_distribution<double> normal;
  for (int i = 0; i < 120; ++i) {
    const double f0 = (i % 2 ? 1 : -1) * (0.5 + std::abs(normal(rng)));
    const int label = f0 > 0 ? 1 : 0;
    std::string row = std::to_string(7 + normal(rng)) + "," + std::to_string(f0) + "," +
                      std::to_string(label) + "," + std::to_string(normal(rng)) + "\n";
    (i < 80 ? train : test) += row;
  }
  node::RunConfig c = Config("logistic", Write("train.csv", train));
  c.test_data = Write("test.csv", test);
  c.label_column = 2;
  const node::RunSetup s = node::BuildRunSetup(c);
  ASSERT_NE(s.test, nullptr);
  ASSERT_EQ(s.dim, 3);
  Vec x = Vec::Zero(3);
  x[1] = 1;  // features are (noise, f0, f1): the label column is not one
  EXPECT_EQ(*s.test->Accuracy(x), 1.0);
  x[1] = -1;
  EXPECT_EQ(*s.test->Accuracy(x), 0.0);
}

// A CSV of 3 features and labels 1..3, the label in column `label_column`.
std::string ThreeClassCsv(int m, unsigned seed, int label_column, Eigen::MatrixXd* a,
                          Eigen::VectorXi* y) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  a->resize(m, 3);
  y->resize(m);
  std::ostringstream s;
  s.precision(17);
  s << "a,b,c,class\n";
  for (int i = 0; i < m; ++i) {
    const int c = i % 3;
    for (int j = 0; j < 3; ++j) (*a)(i, j) = (j == c ? 1.5 : 0.0) + normal(rng);
    (*y)[i] = c;
    std::vector<std::string> cells;
    for (int j = 0; j < 3; ++j) {
      std::ostringstream v;
      v.precision(17);
      v << (*a)(i, j);
      cells.push_back(v.str());
    }
    cells.insert(cells.begin() + label_column, std::to_string(c + 1));
    for (int j = 0; j < 4; ++j) s << (j ? "," : "") << cells[j];
    s << "\n";
  }
  return s.str();
}

TEST_F(LabelsSetupTest, Obs3ClassesOneToKGiveKClassesAndTheIndependentOptimum) {
  Eigen::MatrixXd a;
  Eigen::VectorXi y;
  node::RunConfig c = Config("multinomial", Write("k.csv", ThreeClassCsv(150, 3, 3, &a, &y)));
  c.label_column = 3;
  const node::RunSetup s = node::BuildRunSetup(c);
  EXPECT_EQ(s.dim, 3 * 3);  // d K, not d (K + 1)
  EXPECT_EQ(s.labels.Describe(), "--data " + c.data + ": 3 classes, 1..3 -> 0..2");
  const algorithms::ReferenceSolution ref = algorithms::SolveReference(*s.global);
  EXPECT_NEAR(ref.value, SoftmaxOptimum(a, y, 3, c.l2), 1e-8);
}

TEST_F(LabelsSetupTest, NumClassesFixesTheClassCount) {
  Eigen::MatrixXd a;
  Eigen::VectorXi y;
  node::RunConfig c = Config("multinomial", Write("k.csv", ThreeClassCsv(60, 4, 0, &a, &y)));
  c.num_classes = 6;  // labels 1..3 as written, classes 0, 4, 5 absent
  node::RunSetup s = node::BuildRunSetup(c);
  EXPECT_EQ(s.dim, 3 * 6);
  EXPECT_THAT(s.labels.Describe(), HasSubstr("absent from the training data: 0, 4, 5"));
  c.num_classes = 3;  // label 3 does not fit 0..2
  EXPECT_THAT(ErrorOf([&] { node::BuildRunSetup(c); }),
              HasSubstr("label 3 (sample 2) is not a class in 0..2"));
}

TEST_F(LabelsSetupTest, Obs4LogisticOnTenClassesIsRefused) {
  std::string csv;
  for (int i = 0; i < 40; ++i) csv += std::to_string(i % 10) + ",1," + std::to_string(i) + "\n";
  node::RunConfig c = Config("logistic", Write("ten.csv", csv));
  const std::string e = ErrorOf([&] { node::BuildRunSetup(c); });
  EXPECT_THAT(e, HasSubstr("--data " + c.data));
  EXPECT_THAT(e, HasSubstr("10 distinct labels (0..9)"));
  EXPECT_THAT(e, HasSubstr("multinomial"));
}

TEST_F(LabelsSetupTest, Obs5MultinomialOnPlusMinusOneIsTwoClasses) {
  // Softmax with two classes and L2 on both columns is logistic regression on w1 - w0 with half
  // the L2: f*_softmax(l2) = f*_logistic(l2 / 2). Checked with the Newton solve above.
  const Blobs b = MakeBlobs(200, -1, 1, 8);
  node::RunConfig c = Config("multinomial", Write("pm.svm", Libsvm(b)));
  const node::RunSetup s = node::BuildRunSetup(c);
  EXPECT_EQ(s.dim, 2 * 3);
  Eigen::VectorXd y = Eigen::Map<const Eigen::VectorXd>(b.labels.data(), 200);
  const algorithms::ReferenceSolution ref = algorithms::SolveReference(*s.global);
  EXPECT_NEAR(ref.value, LogisticOptimum(b.a, y, c.l2 / 2), 1e-10);
}

TEST_F(LabelsSetupTest, ATestLabelTheTrainingDataLacksNamesBothFiles) {
  std::string train, test;
  for (int i = 0; i < 30; ++i)
    train += std::to_string(1 + i % 6) + " 1:" + std::to_string(i) + "\n";
  test = "3 1:1\n7 1:2\n";
  node::RunConfig c = Config("multinomial", Write("train.svm", train));
  c.test_data = Write("test.svm", test);
  EXPECT_EQ(ErrorOf([&] { node::BuildRunSetup(c); }),
            "--test-data " + c.test_data + ": label 7 (sample 1) does not occur in --data " +
                c.data + " (classes 1..6)");
}

TEST_F(LabelsSetupTest, Obs6TestFeaturesBeyondTheTrainingDimensionNameBothFiles) {
  node::RunConfig c = Config("logistic", Write("train.svm", "1 1:1 2:1\n-1 1:-1\n1 2:3\n"));
  c.test_data = Write("test.svm", "1 1:1\n-1 1:-1 3:2\n");
  const std::string e = ErrorOf([&] { node::BuildRunSetup(c); });
  EXPECT_THAT(e, HasSubstr("--test-data " + c.test_data + ": sample 1 has feature 3"));
  EXPECT_THAT(e, HasSubstr("--data " + c.data + " has 2 features"));
  EXPECT_THAT(e, HasSubstr("--features"));
  EXPECT_THAT(e, ::testing::Not(HasSubstr("declared")));
  // --features 3 gives both files the same dimension.
  c.features = 3;
  EXPECT_EQ(node::BuildRunSetup(c).dim, 3);
  // Fewer features in the test file are zeros: fine.
  c.features = 0;
  c.test_data = Write("test2.svm", "1 1:1\n-1 1:-1\n");
  const node::RunSetup s = node::BuildRunSetup(c);
  Vec x(2);
  x << 1, 0;
  EXPECT_EQ(*s.test->Accuracy(x), 1.0);
  // Dense files must agree on the feature count.
  c.data = Write("train.csv", "1,1,2\n-1,2,3\n1,3,4\n");
  c.test_data = Write("test.csv", "1,1,2,3\n");
  EXPECT_THAT(
      ErrorOf([&] { node::BuildRunSetup(c); }),
      HasSubstr("--test-data " + c.test_data + ": 3 features but --data " + c.data + " has 2"));
}

TEST_F(LabelsSetupTest, TheMapEntersTheRunIdAndTheNotices) {
  const Blobs b12 = MakeBlobs(30, 1, 2, 5);
  Blobs b01 = b12;
  for (double& y : b01.labels) y = y == 2 ? 1 : 0;
  // The same name and size: only the labels' values differ (1/2 and 0/1 have one character),
  // and the label map they give enters the run id beside the files' contents.
  const std::string p12 = dir_ + "/a/same.svm", p01 = dir_ + "/b/same.svm";
  fs::create_directories(dir_ + "/a");
  fs::create_directories(dir_ + "/b");
  std::ofstream(p12) << Libsvm(b12);
  std::ofstream(p01) << Libsvm(b01);
  ASSERT_EQ(fs::file_size(p12), fs::file_size(p01));
  node::RunConfig c12 = Config("logistic", p12), c01 = Config("logistic", p01);
  const node::RunSetup s12 = node::BuildRunSetup(c12), s01 = node::BuildRunSetup(c01);
  EXPECT_NE(node::RunIdFor(c12, s12), node::RunIdFor(c01, s01));
  // The same file and map again: the same run.
  node::RunConfig c12_again = Config("logistic", p12);
  EXPECT_EQ(node::RunIdFor(c12, s12), node::RunIdFor(c12_again, node::BuildRunSetup(c12_again)));
  ASSERT_FALSE(s12.notices.empty());
  EXPECT_THAT(s12.notices[0].text, HasSubstr("labels: --data " + p12 + ": 1 -> -1, 2 -> +1"));
}

// ---- Through starling-sim.

const std::string kSim = std::string(STARLING_BINARY_DIR) + "/node/starling-sim";

int RunSim(const std::string& dir, const std::vector<std::string>& args, std::string* out) {
  std::vector<std::string> argv = {kSim, "--algorithm", "extra", "--nodes", "2", "-q"};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string log = dir + "/sim.txt";
  testing::Subprocess p(argv, log);
  const int code = p.Wait(std::chrono::seconds(300));
  *out = testing::ReadFile(log);
  return code;
}

TEST_F(LabelsSetupTest, SimulatorSaysTheMapOnceAndRefusesWhatDoesNotFit) {
  const Blobs b = MakeBlobs(100, 1, 2, 5);
  const std::string data = Write("b12.svm", Libsvm(b));
  std::string out;
  ASSERT_EQ(RunSim(dir_, {"--data", data, "--iterations", "50"}, &out), 0) << out;
  const std::string line = "starling-sim: labels: --data " + data +
                           ": 1 -> -1, 2 -> +1 (binary: the larger value is +1)\n";
  EXPECT_NE(out.find(line), std::string::npos) << out;
  EXPECT_EQ(out.find("labels:"), out.rfind("labels:")) << out;
  // Logistic on ten classes: exit 2, one line naming the file.
  std::string ten;
  for (int i = 0; i < 40; ++i) ten += std::to_string(i % 10) + " 1:" + std::to_string(i) + "\n";
  const std::string tens = Write("ten.svm", ten);
  EXPECT_EQ(RunSim(dir_, {"--data", tens, "--iterations", "5"}, &out), 2) << out;
  EXPECT_EQ(out, "starling-sim: error: --data " + tens +
                     ": 10 distinct labels (0..9), but logistic regression is binary and needs "
                     "exactly two; multinomial regression handles 10 classes\n");
  // --num-classes: validated with the problem.
  EXPECT_EQ(RunSim(dir_, {"--data", tens, "--num-classes", "1"}, &out), 2) << out;
  EXPECT_NE(out.find("--num-classes 1: must be 0 (from the data) or >= 2"), std::string::npos)
      << out;
  ASSERT_EQ(RunSim(dir_,
                   {"--data", tens, "--problem", "multinomial", "--num-classes", "12",
                    "--iterations", "5", "--step", "0.1"},
                   &out),
            0)
      << out;
  EXPECT_NE(out.find("12 classes 0..11 as written (fixed); absent from the training data: 10..11"),
            std::string::npos)
      << out;
}

// ---- Real data.

TEST(LabelsRealDataTest, A9aKeepsItsLabels) {
  const std::string path = testing::SharedData("a9a");
  STARLING_REQUIRE_FILE(path);
  node::RunConfig c;
  c.data = path;
  c.nodes = 4;
  c.step = 0.1;
  const node::RunSetup s = node::BuildRunSetup(c);
  EXPECT_THAT(s.labels.values(), ElementsAre(-1, 1));
  EXPECT_THAT(s.labels.Describe(), HasSubstr("-1 -> -1, 1 -> +1"));
  // Multinomial on a9a's -1/+1 (observation 5): two classes.
  c.problem = "multinomial";
  EXPECT_EQ(node::BuildRunSetup(c).dim, 2 * 123);
}

TEST(LabelsRealDataTest, FashionMnistTenClasses) {
  const std::string images = testing::FashionMnist("train-images-idx3-ubyte.gz");
  STARLING_REQUIRE_FILE(images);
  node::RunConfig c;
  c.data = images;
  c.problem = "multinomial";
  c.nodes = 2;
  c.step = 0.1;
  const node::RunSetup s = node::BuildRunSetup(c, {-1, false, false});
  EXPECT_EQ(s.labels.num_classes(), 10);
  EXPECT_THAT(s.labels.Describe(), HasSubstr("10 classes, 0..9 -> 0..9"));
  c.problem = "logistic";
  EXPECT_THAT(ErrorOf([&] {
                node::BuildRunSetup(c, {-1, false, false});
              }),
              HasSubstr("10 distinct labels (0..9)"));
}

}  // namespace
}  // namespace starling
