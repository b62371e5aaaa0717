// The centralized reference solver: it must reach ||grad|| <= 1e-10 on every problem kind, agree
// with an independent normal-equations solve on least squares, and reproduce the independently
// known Fashion-MNIST optimum.
#include "algorithms/problems/reference_solver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <chrono>
#include <cmath>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "algorithms/data/dataset.h"
#include "algorithms/data/readers.h"
#include "algorithms/problems/problem_factory.h"
#include "tests/test_data.h"

namespace starling::algorithms {
namespace {

using Clock = std::chrono::steady_clock;

Dataset RandomData(int m, int d, bool sparse, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform;
  Eigen::MatrixXd a(m, d);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < d; ++j) a(i, j) = uniform(rng) < 0.3 ? 0.0 : normal(rng);
  }
  Dataset data;
  data.is_sparse = sparse;
  data.num_features = d;
  if (sparse) {
    data.sparse = a.sparseView();
  } else {
    data.dense = a;
  }
  data.labels.resize(m);
  data.source = "synthetic";
  return data;
}

Eigen::MatrixXd Dense(const Dataset& data) {
  return data.is_sparse ? Eigen::MatrixXd(data.sparse) : Eigen::MatrixXd(data.dense);
}

class SyntheticReferenceTest : public ::testing::TestWithParam<bool> {};

TEST_P(SyntheticReferenceTest, Logistic) {
  Dataset data = RandomData(300, 12, GetParam(), 1);
  std::mt19937_64 rng(2);
  std::normal_distribution<double> normal;
  const Eigen::MatrixXd a = Dense(data);
  const Vec w = Vec::LinSpaced(12, -1.0, 1.0);
  // Noisy labels: the data are not separable, so the optimum is interior even for small l2.
  for (int i = 0; i < 300; ++i) data.labels[i] = a.row(i).dot(w) + normal(rng) >= 0 ? 1 : -1;
  auto problem = MakeProblem({"logistic", 1e-3, 0}, std::move(data), 1.0 / 300);
  const ReferenceSolution solution = SolveReference(*problem);
  EXPECT_LE(solution.grad_norm, 1e-10);
  Vec g;
  problem->Gradient(solution.x, &g);  // recomputed, not trusted from the solver
  EXPECT_LE(g.norm(), 1e-10);
  EXPECT_DOUBLE_EQ(problem->Value(solution.x), solution.value);
  EXPECT_GT(solution.iterations, 1);
  EXPECT_LT(solution.value, std::log(2.0));  // better than x = 0
}

TEST_P(SyntheticReferenceTest, Multinomial) {
  Dataset data = RandomData(400, 9, GetParam(), 3);
  const Eigen::MatrixXd a = Dense(data);
  std::mt19937_64 rng(4);
  std::normal_distribution<double> normal;
  for (int i = 0; i < 400; ++i) {
    // Class by the sign pattern of two noisy projections: 4 classes.
    const double u = a.row(i).head(4).sum() + 0.5 * normal(rng);
    const double v = a.row(i).tail(5).sum() + 0.5 * normal(rng);
    data.labels[i] = (u >= 0 ? 1 : 0) + (v >= 0 ? 2 : 0);
  }
  auto problem = MakeProblem({"multinomial", 1e-3, 4}, std::move(data), 1.0 / 400);
  const ReferenceSolution solution = SolveReference(*problem);
  Vec g;
  problem->Gradient(solution.x, &g);
  EXPECT_LE(g.norm(), 1e-10);
  EXPECT_LE(solution.grad_norm, 1e-10);
  EXPECT_LT(solution.value, std::log(4.0));
}

TEST_P(SyntheticReferenceTest, LeastSquaresMatchesNormalEquations) {
  for (double l2 : {0.0, 0.1}) {
    Dataset data = RandomData(60, 15, GetParam(), 5);
    std::mt19937_64 rng(6);
    std::normal_distribution<double> normal;
    for (int i = 0; i < 60; ++i) data.labels[i] = 3.0 * normal(rng);
    const Eigen::MatrixXd a = Dense(data);
    const Vec b = data.labels;
    const double s = 1.0 / 60;
    auto problem = MakeProblem({"least-squares", l2, 0}, std::move(data), s);
    const ReferenceSolution solution = SolveReference(*problem);
    EXPECT_LE(solution.grad_norm, 1e-10) << "l2 " << l2;
    const Eigen::MatrixXd normal_matrix =
        s * a.transpose() * a + l2 * Eigen::MatrixXd::Identity(15, 15);
    const Vec expected = normal_matrix.ldlt().solve(s * a.transpose() * b);
    EXPECT_LT((solution.x - expected).norm(), 1e-9 * expected.norm()) << "l2 " << l2;
  }
}

INSTANTIATE_TEST_SUITE_P(Storage, SyntheticReferenceTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Sparse" : "Dense";
                         });

TEST(ReferenceSolverTest, ThrowsWhenTheIterationBudgetIsTooSmall) {
  Dataset data = RandomData(100, 5, false, 7);
  for (int i = 0; i < 100; ++i) data.labels[i] = i % 3 == 0 ? 1 : -1;
  auto problem = MakeProblem({"logistic", 1e-3, 0}, std::move(data), 0.01);
  ReferenceOptions options;
  options.max_iterations = 1;
  try {
    SolveReference(*problem, options);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("logistic"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("1 Newton iterations"));
  }
}

// ---------------------------------------------------------------------------------------------
// Real data.

struct Timed {
  ReferenceSolution solution;
  double seconds;
};
Timed SolveTimed(const Problem& problem) {
  const auto start = Clock::now();
  Timed t{SolveReference(problem), 0.0};
  t.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return t;
}

void Report(const std::string& what, const Problem& problem, const Timed& t) {
  std::cout.precision(15);
  std::cout << what << ": f* = " << t.solution.value << ", ||grad|| = " << t.solution.grad_norm
            << ", " << t.solution.iterations << " Newton iterations, " << t.seconds << " s";
  if (auto accuracy = problem.Accuracy(t.solution.x)) std::cout << ", accuracy " << *accuracy;
  std::cout << "\n";
  ::testing::Test::RecordProperty("f_star", std::to_string(t.solution.value));
  ::testing::Test::RecordProperty("seconds", std::to_string(t.seconds));
}

TEST(ReferenceSolverRealDataTest, FashionMnistBinaryLogisticMatchesKnownOptimum) {
  const std::string images = testing::FashionMnist("train-images-idx3-ubyte.gz");
  const std::string labels = testing::FashionMnist("train-labels-idx1-ubyte.gz");
  STARLING_REQUIRE_FILE(images);
  STARLING_REQUIRE_FILE(labels);
  Dataset data = ReadIdx(images, labels);
  ASSERT_EQ(data.num_samples(), 60000);
  ASSERT_EQ(data.num_features, 784);
  const double m = data.num_samples();
  // Classes 0-4 vs 5-9 (relabelled here: logistic regression takes two classes only), pixels /
  // 255 (ReadIdx), lambda = 1e-4, no bias.
  for (int i = 0; i < data.num_samples(); ++i) data.labels[i] = data.labels[i] < 5 ? -1 : 1;
  auto problem = MakeProblem({"logistic", 1e-4, 0}, std::move(data), 1.0 / m);
  const Timed t = SolveTimed(*problem);
  Report("Fashion-MNIST binary logistic", *problem, t);
  // Optimum computed independently of this code (another solver): f* = 0.187946237805490, accuracy 0.925.
  EXPECT_NEAR(t.solution.value, 0.187946237805490, 1e-9);
  EXPECT_LE(t.solution.grad_norm, 1e-10);
  EXPECT_NEAR(*problem->Accuracy(t.solution.x), 0.925, 1e-3);
}

TEST(ReferenceSolverRealDataTest, FashionMnistMultinomialOnASubset) {
  // The full 60,000-row multinomial problem (d = 7840) also converges but takes minutes; the
  // first 6,000 rows keep the test short while exercising the same code at the same dimension.
  const std::string images = testing::FashionMnist("train-images-idx3-ubyte.gz");
  const std::string labels = testing::FashionMnist("train-labels-idx1-ubyte.gz");
  STARLING_REQUIRE_FILE(images);
  STARLING_REQUIRE_FILE(labels);
  std::vector<int> rows(6000);
  for (int i = 0; i < 6000; ++i) rows[i] = i;
  Dataset data = ReadIdx(images, labels).Subset(rows);
  auto problem = MakeProblem({"multinomial", 1e-4, 10}, std::move(data), 1.0 / 6000);
  ASSERT_EQ(problem->dim(), 7840);
  const Timed t = SolveTimed(*problem);
  Report("Fashion-MNIST multinomial, 6000 rows", *problem, t);
  EXPECT_LE(t.solution.grad_norm, 1e-10);
  Vec g;
  problem->Gradient(t.solution.x, &g);
  EXPECT_LE(g.norm(), 1e-10);
  EXPECT_LT(t.solution.value, std::log(10.0));
  EXPECT_GT(*problem->Accuracy(t.solution.x), 0.8);  // training accuracy of a linear model
}

TEST(ReferenceSolverRealDataTest, A9aLogistic) {
  const std::string path = testing::SharedData("a9a");
  STARLING_REQUIRE_FILE(path);
  Dataset data = ReadLibsvm(path);
  ASSERT_TRUE(data.is_sparse);
  ASSERT_EQ(data.num_samples(), 48842);
  ASSERT_EQ(data.num_features, 123);
  const double m = data.num_samples();
  auto problem = MakeProblem({"logistic", 1e-2, 0}, std::move(data), 1.0 / m);
  const Timed t = SolveTimed(*problem);
  Report("a9a logistic", *problem, t);
  EXPECT_LE(t.solution.grad_norm, 1e-10);
  Vec g;
  problem->Gradient(t.solution.x, &g);
  EXPECT_LE(g.norm(), 1e-10);
  // Sanity: ~76% of a9a is negative, so a useful model must beat the majority class.
  EXPECT_GT(*problem->Accuracy(t.solution.x), 0.80);
}

}  // namespace
}  // namespace starling::algorithms
