// Problems (local objectives): derivatives, normalisation, dense/sparse agreement, exact local
// solves, label handling. Expected values come from naive per-sample formulas written here, from
// finite differences or from closed forms, never from the classes under test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "algorithms/data/dataset.h"
#include "algorithms/problems/problem.h"
#include "algorithms/problems/problem_factory.h"

namespace starling::algorithms {
namespace {

using ::testing::HasSubstr;

constexpr int kClasses = 3;

// Relative distance, with a floor of 1 on the scale so that values near zero compare absolutely.
double RelErr(const Vec& a, const Vec& b) {
  return (a - b).norm() / std::max(1.0, std::max(a.norm(), b.norm()));
}
double RelErr(double a, double b) {
  return std::abs(a - b) / std::max(1.0, std::max(std::abs(a), std::abs(b)));
}

Dataset FromDense(const Eigen::MatrixXd& a, const Vec& labels, bool sparse,
                  const std::string& source = "synthetic") {
  Dataset data;
  data.is_sparse = sparse;
  data.num_features = static_cast<int>(a.cols());
  if (sparse) {
    data.sparse = a.sparseView();
    data.sparse.makeCompressed();
  } else {
    data.dense = a;
  }
  data.labels = labels;
  data.source = source;
  return data;
}

// Random features with ~40% exact zeros (so the sparse copy is really sparse) and labels that
// suit `kind`: +-1 for logistic, classes 0..kClasses-1 for multinomial, a noisy linear target for
// least squares.
struct Synthetic {
  Eigen::MatrixXd a;
  Vec labels;
};
Synthetic MakeSynthetic(const std::string& kind, int m, int d, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform;
  Synthetic s;
  s.a.resize(m, d);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < d; ++j) s.a(i, j) = uniform(rng) < 0.4 ? 0.0 : normal(rng);
  }
  s.labels.resize(m);
  Vec w(d);
  for (int j = 0; j < d; ++j) w[j] = normal(rng);
  for (int i = 0; i < m; ++i) {
    const double t = s.a.row(i).dot(w) + 0.5 * normal(rng);
    if (kind == "logistic") {
      s.labels[i] = t >= 0 ? 1.0 : -1.0;
    } else if (kind == "multinomial") {
      s.labels[i] = static_cast<double>(std::uniform_int_distribution<int>(0, kClasses - 1)(rng));
    } else {
      s.labels[i] = t;
    }
  }
  return s;
}

// Straightforward per-sample implementation of each loss, the yardstick for the classes.
struct Naive {
  std::string kind;
  Eigen::MatrixXd a;
  Vec labels;
  double l2;
  double scale;

  int d() const { return static_cast<int>(a.cols()); }
  int dim() const { return kind == "multinomial" ? d() * kClasses : d(); }

  double SampleLoss(const Vec& x, int i) const {
    const Vec ai = a.row(i).transpose();
    if (kind == "logistic") return std::log(1.0 + std::exp(-labels[i] * ai.dot(x)));
    if (kind == "least-squares") return 0.5 * std::pow(ai.dot(x) - labels[i], 2);
    double normalizer = 0.0;
    for (int c = 0; c < kClasses; ++c) normalizer += std::exp(ai.dot(x.segment(c * d(), d())));
    const int y = static_cast<int>(labels[i]);
    return std::log(normalizer) - ai.dot(x.segment(y * d(), d()));
  }
  Vec SampleGrad(const Vec& x, int i) const {
    const Vec ai = a.row(i).transpose();
    if (kind == "logistic") {
      const double y = labels[i];
      return -y / (1.0 + std::exp(y * ai.dot(x))) * ai;
    }
    if (kind == "least-squares") return (ai.dot(x) - labels[i]) * ai;
    Vec z(kClasses);
    for (int c = 0; c < kClasses; ++c) z[c] = ai.dot(x.segment(c * d(), d()));
    const Vec p = z.array().exp() / z.array().exp().sum();
    Vec g(dim());
    for (int c = 0; c < kClasses; ++c) {
      g.segment(c * d(), d()) = (p[c] - (c == static_cast<int>(labels[i]) ? 1.0 : 0.0)) * ai;
    }
    return g;
  }
  double Value(const Vec& x) const {
    double sum = 0.0;
    for (int i = 0; i < a.rows(); ++i) sum += SampleLoss(x, i);
    return scale * sum + 0.5 * l2 * x.squaredNorm();
  }
  Vec Gradient(const Vec& x) const {
    Vec sum = Vec::Zero(dim());
    for (int i = 0; i < a.rows(); ++i) sum += SampleGrad(x, i);
    return scale * sum + l2 * x;
  }
};

Eigen::MatrixXd HessianByColumns(const Problem& p, const Vec& x) {
  Eigen::MatrixXd h(p.dim(), p.dim());
  Vec out;
  for (int j = 0; j < p.dim(); ++j) {
    p.HessianVector(x, Vec::Unit(p.dim(), j), &out);
    h.col(j) = out;
  }
  return h;
}

Vec RandomVec(int n, unsigned seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  Vec v(n);
  for (int i = 0; i < n; ++i) v[i] = scale * normal(rng);
  return v;
}

// ---------------------------------------------------------------------------------------------
// Parameterised over (kind, sparse storage).

class ProblemTest : public ::testing::TestWithParam<std::tuple<std::string, bool>> {
 protected:
  static constexpr int kM = 30;
  static constexpr int kD = 6;
  static constexpr double kL2 = 0.05;

  void SetUp() override {
    kind_ = std::get<0>(GetParam());
    synthetic_ = MakeSynthetic(kind_, kM, kD, 7);
    spec_.kind = kind_;
    spec_.l2 = kL2;
    spec_.num_classes = kind_ == "multinomial" ? kClasses : 0;
    problem_ = MakeProblem(
        spec_, FromDense(synthetic_.a, synthetic_.labels, std::get<1>(GetParam())), 1.0 / kM);
    naive_ = Naive{kind_, synthetic_.a, synthetic_.labels, kL2, 1.0 / kM};
  }
  Vec Point(unsigned seed, double scale = 1.0) const {
    return RandomVec(problem_->dim(), seed, scale);
  }

  std::string kind_;
  Synthetic synthetic_;
  ProblemSpec spec_;
  std::unique_ptr<Problem> problem_;
  Naive naive_;
};

TEST_P(ProblemTest, Metadata) {
  EXPECT_EQ(problem_->name(), kind_);
  EXPECT_EQ(problem_->dim(), kind_ == "multinomial" ? kD * kClasses : kD);
  EXPECT_EQ(problem_->num_samples(), kM);
  EXPECT_EQ(problem_->l2(), kL2);
  EXPECT_EQ(problem_->loss_scale(), 1.0 / kM);
}

TEST_P(ProblemTest, ValueAndGradientMatchPerSampleFormulas) {
  for (unsigned seed : {1u, 2u, 3u}) {
    const Vec x = Point(seed);
    EXPECT_LT(RelErr(problem_->Value(x), naive_.Value(x)), 1e-13);
    Vec g;
    problem_->Gradient(x, &g);
    EXPECT_LT(RelErr(g, naive_.Gradient(x)), 1e-13);
  }
}

TEST_P(ProblemTest, ValueAtZeroHasClosedForm) {
  const Vec zero = Vec::Zero(problem_->dim());
  double expected = 0.0;
  if (kind_ == "logistic") expected = std::log(2.0);  // s * m * log 2 with s = 1/m
  if (kind_ == "multinomial") expected = std::log(static_cast<double>(kClasses));
  if (kind_ == "least-squares") expected = 0.5 * synthetic_.labels.squaredNorm() / kM;
  EXPECT_NEAR(problem_->Value(zero), expected, 1e-14);
}

TEST_P(ProblemTest, GradientMatchesCentralDifferences) {
  const double h = 1e-6;
  for (unsigned seed : {4u, 5u}) {
    const Vec x = Point(seed);
    Vec g;
    problem_->Gradient(x, &g);
    for (int j = 0; j < problem_->dim(); ++j) {
      const Vec e = Vec::Unit(problem_->dim(), j) * h;
      const double fd = (problem_->Value(x + e) - problem_->Value(x - e)) / (2 * h);
      EXPECT_NEAR(g[j], fd, 1e-7) << "coordinate " << j;
    }
  }
}

TEST_P(ProblemTest, HessianVectorMatchesDifferencesOfGradient) {
  const double h = 1e-6;
  for (unsigned seed : {6u, 7u}) {
    const Vec x = Point(seed);
    const Vec v = Point(seed + 100);
    Vec hv, g_plus, g_minus;
    problem_->HessianVector(x, v, &hv);
    problem_->Gradient(x + h * v, &g_plus);
    problem_->Gradient(x - h * v, &g_minus);
    EXPECT_LT(RelErr(hv, (g_plus - g_minus) / (2 * h)), 1e-7);
  }
}

TEST_P(ProblemTest, HessianIsSymmetric) {
  const Eigen::MatrixXd h = HessianByColumns(*problem_, Point(8));
  EXPECT_LT((h - h.transpose()).norm(), 1e-13 * h.norm());
}

TEST_P(ProblemTest, BatchGradientOverAllRowsEqualsGradient) {
  std::vector<int> all(kM);
  for (int i = 0; i < kM; ++i) all[i] = i;
  const Vec x = Point(9);
  Vec g, batch;
  problem_->Gradient(x, &g);
  problem_->BatchGradient(x, all, &batch);
  EXPECT_LT(RelErr(batch, g), 1e-12);
}

TEST_P(ProblemTest, BatchGradientIsScaledSampleSum) {
  // Repetitions count: sample 3 twice.
  const std::vector<int> batch = {3, 17, 3, 29, 0};
  const Vec x = Point(10);
  Vec expected = Vec::Zero(problem_->dim());
  for (int i : batch) expected += naive_.SampleGrad(x, i);
  expected *= (1.0 / kM) * kM / static_cast<double>(batch.size());
  expected += kL2 * x;
  Vec g;
  problem_->BatchGradient(x, batch, &g);
  EXPECT_LT(RelErr(g, expected), 1e-13);
}

TEST_P(ProblemTest, BatchGradientRejectsBadBatches) {
  const Vec x = Point(11);
  Vec g;
  EXPECT_ANY_THROW(problem_->BatchGradient(x, {}, &g));
  EXPECT_ANY_THROW(problem_->BatchGradient(x, {0, kM}, &g));
  EXPECT_ANY_THROW(problem_->BatchGradient(x, {-1}, &g));
}

TEST_P(ProblemTest, RejectsWrongDimension) {
  Vec g;
  EXPECT_ANY_THROW(problem_->Value(Vec::Zero(problem_->dim() + 1)));
  EXPECT_ANY_THROW(problem_->Gradient(Vec::Zero(problem_->dim() - 1), &g));
  EXPECT_ANY_THROW(
      problem_->HessianVector(Vec::Zero(problem_->dim()), Vec::Zero(problem_->dim() + 1), &g));
}

TEST_P(ProblemTest, SmoothnessBoundCoversHessianSpectrum) {
  const double bound = problem_->SmoothnessBound();
  for (double scale : {0.0, 0.3, 1.0, 5.0}) {
    const Vec x = Point(12, scale);
    Eigen::MatrixXd h = HessianByColumns(*problem_, x);
    h = 0.5 * (h + h.transpose());
    const double top = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(h).eigenvalues().maxCoeff();
    EXPECT_GE(bound, top) << "at scale " << scale;
  }
  EXPECT_EQ(problem_->SmoothnessBound(), bound);  // cached, deterministic
}

TEST_P(ProblemTest, SmoothnessBoundIsTightWhereTheCurvatureIsMaximal) {
  // Least squares has constant curvature s A^T A + lambda I; logistic at x = 0 has exactly its
  // maximal per-sample curvature 1/4. The bound should then equal the top eigenvalue.
  if (kind_ == "multinomial") GTEST_SKIP() << "softmax curvature 1/2 is not attained";
  const double weight = kind_ == "logistic" ? 0.25 : 1.0;
  const Eigen::MatrixXd h = weight / kM * synthetic_.a.transpose() * synthetic_.a +
                            kL2 * Eigen::MatrixXd::Identity(kD, kD);
  const double top = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(h).eigenvalues().maxCoeff();
  EXPECT_GE(problem_->SmoothnessBound(), top);
  EXPECT_LE(problem_->SmoothnessBound(), top * (1 + 1e-6));
}

TEST_P(ProblemTest, DenseAndSparseStorageAgree) {
  auto dense = MakeProblem(spec_, FromDense(synthetic_.a, synthetic_.labels, false), 1.0 / kM);
  auto sparse = MakeProblem(spec_, FromDense(synthetic_.a, synthetic_.labels, true), 1.0 / kM);
  const Vec x = Point(13);
  const Vec v = Point(14);
  EXPECT_LT(RelErr(dense->Value(x), sparse->Value(x)), 1e-13);
  Vec gd, gs;
  dense->Gradient(x, &gd);
  sparse->Gradient(x, &gs);
  EXPECT_LT(RelErr(gd, gs), 1e-13);
  dense->HessianVector(x, v, &gd);
  sparse->HessianVector(x, v, &gs);
  EXPECT_LT(RelErr(gd, gs), 1e-13);
  dense->BatchGradient(x, {5, 1, 5, 22}, &gd);
  sparse->BatchGradient(x, {5, 1, 5, 22}, &gs);
  EXPECT_LT(RelErr(gd, gs), 1e-13);
  EXPECT_LT(RelErr(dense->SmoothnessBound(), sparse->SmoothnessBound()), 1e-12);
  EXPECT_EQ(dense->Accuracy(x), sparse->Accuracy(x));
}

TEST_P(ProblemTest, ShardsWithLossScaleNOverMAverageToTheCentralizedProblem) {
  // Sort rows by label so that shards see different label sets (the non-i.i.d. case).
  std::vector<int> order(kM);
  for (int i = 0; i < kM; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int i, int j) { return synthetic_.labels[i] < synthetic_.labels[j]; });
  const std::vector<int> sizes = {7, 11, 12};  // unequal on purpose
  const int n = static_cast<int>(sizes.size());
  const bool sparse = std::get<1>(GetParam());
  auto central = MakeProblem(spec_, FromDense(synthetic_.a, synthetic_.labels, sparse), 1.0 / kM);

  std::vector<std::unique_ptr<Problem>> shards;
  int start = 0;
  for (int size : sizes) {
    Eigen::MatrixXd a(size, kD);
    Vec y(size);
    for (int k = 0; k < size; ++k) {
      a.row(k) = synthetic_.a.row(order[start + k]);
      y[k] = synthetic_.labels[order[start + k]];
    }
    shards.push_back(MakeProblem(spec_, FromDense(a, y, sparse), static_cast<double>(n) / kM));
    start += size;
  }
  for (unsigned seed : {15u, 16u}) {
    const Vec x = Point(seed);
    double mean_value = 0.0;
    Vec mean_grad = Vec::Zero(central->dim());
    Vec g;
    for (const auto& shard : shards) {
      mean_value += shard->Value(x) / n;
      shard->Gradient(x, &g);
      mean_grad += g / n;
    }
    central->Gradient(x, &g);
    EXPECT_LT(std::abs(mean_value - central->Value(x)) / std::abs(central->Value(x)), 1e-12);
    EXPECT_LT((mean_grad - g).norm() / g.norm(), 1e-12);
  }
}

TEST_P(ProblemTest, ConcurrentCallsAtDifferentPointsMatchSerialResults) {
  // The classes cache the last point; threads asking about different points must not see each
  // other's cache entries.
  constexpr int kThreads = 4;
  std::vector<Vec> xs, vs, serial_g(kThreads), serial_hv(kThreads);
  std::vector<double> serial_f(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    xs.push_back(Point(20 + t));
    vs.push_back(Point(40 + t));
    serial_f[t] = problem_->Value(xs[t]);
    problem_->Gradient(xs[t], &serial_g[t]);
    problem_->HessianVector(xs[t], vs[t], &serial_hv[t]);
  }
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Vec g, hv;
      for (int rep = 0; rep < 200; ++rep) {
        mismatches[t] += problem_->Value(xs[t]) != serial_f[t];
        problem_->Gradient(xs[t], &g);
        mismatches[t] += g != serial_g[t];
        problem_->HessianVector(xs[t], vs[t], &hv);
        mismatches[t] += hv != serial_hv[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

INSTANTIATE_TEST_SUITE_P(AllKinds, ProblemTest,
                         ::testing::Combine(::testing::Values("logistic", "multinomial",
                                                              "least-squares"),
                                            ::testing::Bool()),
                         [](const ::testing::TestParamInfo<ProblemTest::ParamType>& info) {
                           std::string name = std::get<0>(info.param);
                           name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
                           return name + (std::get<1>(info.param) ? "Sparse" : "Dense");
                         });

// ---------------------------------------------------------------------------------------------
// Large shards (min(m, d) > 2000) take the power-iteration path for lambda_max(A^T A).

Dataset Diagonal(const Vec& diagonal) {
  const int n = static_cast<int>(diagonal.size());
  Dataset data;
  data.is_sparse = true;
  data.num_features = n;
  data.sparse.resize(n, n);
  std::vector<Eigen::Triplet<double>> entries;
  for (int i = 0; i < n; ++i) entries.emplace_back(i, i, diagonal[i]);
  data.sparse.setFromTriplets(entries.begin(), entries.end());
  data.labels = Vec::Zero(n);
  data.source = "diagonal";
  return data;
}

TEST(SmoothnessBoundTest, LargeShardWithSeparatedTopEigenvalueIsTight) {
  Vec diagonal = Vec::LinSpaced(2100, 0.1, 1.0);
  diagonal[1234] = 2.0;  // lambda_max(A^T A) = 4, next 1
  auto problem = MakeProblem({"least-squares", 0.0, 0}, Diagonal(diagonal), 1.0);
  EXPECT_GE(problem->SmoothnessBound(), 4.0);
  EXPECT_LE(problem->SmoothnessBound(), 4.0 * (1 + 1e-5));
}

TEST(SmoothnessBoundTest, LargeShardWithClusteredTopEigenvaluesStaysAbove) {
  // 2100 eigenvalues spread over [0.25, 1]: power iteration cannot resolve the top one within
  // its iteration cap, and the bound must still be above it.
  std::mt19937_64 rng(31);
  std::uniform_real_distribution<double> uniform(0.5, 1.0);
  Vec diagonal(2100);
  for (int i = 0; i < diagonal.size(); ++i) diagonal[i] = uniform(rng);
  const double top = diagonal.maxCoeff() * diagonal.maxCoeff();
  Dataset data = Diagonal(diagonal);
  data.labels = Vec::Ones(diagonal.size());
  auto problem = MakeProblem({"logistic", 0.5, 0}, std::move(data), 2.0);
  EXPECT_GE(problem->SmoothnessBound(), 0.25 * 2.0 * top + 0.5);
  EXPECT_LE(problem->SmoothnessBound(), 1.05 * (0.25 * 2.0 * top + 0.5));
}

// ---------------------------------------------------------------------------------------------
// Numerics at extreme margins.

TEST(LogisticRegressionTest, StableForHugeMargins) {
  Eigen::MatrixXd a(1, 1);
  a << 1.0;
  auto problem = MakeProblem({"logistic", 0.0, 0}, FromDense(a, Vec::Constant(1, 1.0), false), 1.0);
  Vec g;
  // y a^T x = -1000: loss 1000, slope -1.
  EXPECT_DOUBLE_EQ(problem->Value(Vec::Constant(1, -1000.0)), 1000.0);
  problem->Gradient(Vec::Constant(1, -1000.0), &g);
  EXPECT_DOUBLE_EQ(g[0], -1.0);
  // y a^T x = +1000: loss e^-1000 (0 in doubles), slope -e^-1000.
  EXPECT_EQ(problem->Value(Vec::Constant(1, 1000.0)), 0.0);
  problem->Gradient(Vec::Constant(1, 1000.0), &g);
  EXPECT_TRUE(g.allFinite());
  EXPECT_LE(std::abs(g[0]), 1e-300);
  // y a^T x = 40: loss e^-40 to full relative precision (log1p, not log(1 + tiny)).
  EXPECT_NEAR(problem->Value(Vec::Constant(1, 40.0)) / std::exp(-40.0), 1.0, 1e-14);
  problem->HessianVector(Vec::Constant(1, 1000.0), Vec::Ones(1), &g);
  EXPECT_TRUE(g.allFinite());
}

TEST(MultinomialRegressionTest, StableForHugeLogits) {
  Eigen::MatrixXd a(1, 1);
  a << 1.0;
  auto problem =
      MakeProblem({"multinomial", 0.0, 2}, FromDense(a, Vec::Constant(1, 1.0), false), 1.0);
  Vec x(2);
  x << 1000.0, -1000.0;  // logits (1000, -1000), label 1
  EXPECT_DOUBLE_EQ(problem->Value(x), 2000.0);
  Vec g;
  problem->Gradient(x, &g);
  EXPECT_DOUBLE_EQ(g[0], 1.0);  // p - e_y = (1, 0) - (0, 1)
  EXPECT_DOUBLE_EQ(g[1], -1.0);
}

TEST(MultinomialRegressionTest, ModelIsColumnMajorFeatureByClass) {
  // d = 2 features, K = 3 classes: x[c * d + f] is the weight of feature f for class c.
  Eigen::MatrixXd a(1, 2);
  a << 2.0, 3.0;
  auto problem =
      MakeProblem({"multinomial", 0.0, 3}, FromDense(a, Vec::Constant(1, 2.0), false), 1.0);
  Vec x(6);
  x << 0, 0, 1, 0, 0, 1;  // class 1 reads feature 0, class 2 reads feature 1
  // Logits (0, 2, 3), label 2: loss = log(1 + e^2 + e^3) - 3.
  EXPECT_NEAR(problem->Value(x), std::log(1 + std::exp(2.0) + std::exp(3.0)) - 3.0, 1e-14);
}

// ---------------------------------------------------------------------------------------------
// Accuracy on hand-made data.

TEST(AccuracyTest, LogisticCountsSignsWithZeroAsPositive) {
  Eigen::MatrixXd a(4, 2);
  a << 1, 0, 0, 1, 1, 1, -1, 0;
  Vec y(4);
  y << 1, 1, 1, -1;
  auto problem = MakeProblem({"logistic", 0.0, 0}, FromDense(a, y, false), 0.25);
  Vec x(2);
  x << 1, -1;  // margins 1, -1, 0, -1: right, wrong, right (0 -> +1), right
  EXPECT_EQ(problem->Accuracy(x), 0.75);
}

TEST(AccuracyTest, MultinomialTakesArgmaxWithLowestClassOnTies) {
  Eigen::MatrixXd a(4, 2);
  a << 2, 1, 1, 3, -1, -1, 1, 1;
  Vec y(4);
  y << 0, 1, 2, 1;
  auto problem = MakeProblem({"multinomial", 0.0, 3}, FromDense(a, y, true), 0.25);
  Vec x(6);
  x << 1, 0, 0, 1, 0, 0;  // logits (2,1,0), (1,3,0), (-1,-1,0), (1,1,0): 0, 1, 2, tie -> 0
  EXPECT_EQ(problem->Accuracy(x), 0.75);
}

TEST(AccuracyTest, LeastSquaresHasNone) {
  auto problem = MakeProblem({"least-squares", 0.0, 0},
                             FromDense(Eigen::MatrixXd::Ones(2, 2), Vec::Ones(2), false), 0.5);
  EXPECT_EQ(problem->Accuracy(Vec::Zero(2)), std::nullopt);
}

// ---------------------------------------------------------------------------------------------
// Exact proximal solve (least squares).

class SolveProximalTest : public ::testing::TestWithParam<bool> {};

TEST_P(SolveProximalTest, SatisfiesOptimalityConditionForSeveralMu) {
  constexpr int kM = 25, kD = 8;
  const double l2 = 0.01, s = 1.0 / kM;
  const Synthetic data = MakeSynthetic("least-squares", kM, kD, 21);
  auto problem =
      MakeProblem({"least-squares", l2, 0}, FromDense(data.a, data.labels, GetParam()), s);
  const Vec shift = RandomVec(kD, 22);
  const Vec center = RandomVec(kD, 23);
  // Alternating mu exercises the factorisation cache.
  for (double mu : {0.5, 2.0, 0.5, 0.0, 2.0}) {
    Vec z;
    ASSERT_TRUE(problem->SolveProximal(shift, mu, center, &z));
    Vec g;
    problem->Gradient(z, &g);
    const Vec condition = g - shift + mu * (z - center);
    EXPECT_LT(condition.norm(), 1e-12 * std::max(1.0, shift.norm())) << "mu " << mu;
    // And the same point from an independent dense solve.
    const Eigen::MatrixXd system =
        s * data.a.transpose() * data.a + (l2 + mu) * Eigen::MatrixXd::Identity(kD, kD);
    const Vec expected = system.colPivHouseholderQr().solve(s * data.a.transpose() * data.labels +
                                                            shift + mu * center);
    EXPECT_LT(RelErr(z, expected), 1e-12) << "mu " << mu;
  }
}

TEST_P(SolveProximalTest, ConcurrentCallsWithDifferentMuMatchSerialResults) {
  constexpr int kM = 25, kD = 8;
  const Synthetic data = MakeSynthetic("least-squares", kM, kD, 24);
  auto problem =
      MakeProblem({"least-squares", 0.01, 0}, FromDense(data.a, data.labels, GetParam()), 0.04);
  const Vec shift = RandomVec(kD, 25);
  const Vec center = RandomVec(kD, 26);
  const std::vector<double> mus = {0.1, 1.0, 10.0, 100.0};
  std::vector<Vec> serial(mus.size());
  for (size_t k = 0; k < mus.size(); ++k) {
    ASSERT_TRUE(problem->SolveProximal(shift, mus[k], center, &serial[k]));
  }
  std::vector<int> bad(mus.size(), 0);
  std::vector<std::thread> threads;
  for (size_t k = 0; k < mus.size(); ++k) {
    threads.emplace_back([&, k] {
      Vec z;
      for (int rep = 0; rep < 100; ++rep) {
        bad[k] +=
            !problem->SolveProximal(shift, mus[k], center, &z) || RelErr(z, serial[k]) > 1e-14;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (size_t k = 0; k < mus.size(); ++k) EXPECT_EQ(bad[k], 0) << "mu " << mus[k];
}

TEST_P(SolveProximalTest, ReportsNoUniqueMinimiserForRankDeficientUnregularizedShard) {
  // 3 samples, 6 features, lambda = mu = 0: A^T A is singular.
  const Synthetic data = MakeSynthetic("least-squares", 3, 6, 27);
  auto problem =
      MakeProblem({"least-squares", 0.0, 0}, FromDense(data.a, data.labels, GetParam()), 1.0);
  Vec z = Vec::Constant(6, 42.0);
  EXPECT_FALSE(problem->SolveProximal(Vec::Zero(6), 0.0, Vec::Zero(6), &z));
  EXPECT_EQ(z, Vec::Constant(6, 42.0));
  EXPECT_TRUE(problem->SolveProximal(Vec::Zero(6), 1.0, Vec::Zero(6), &z));
  EXPECT_ANY_THROW(problem->SolveProximal(Vec::Zero(6), -1.0, Vec::Zero(6), &z));
  EXPECT_ANY_THROW(problem->SolveProximal(Vec::Zero(5), 1.0, Vec::Zero(6), &z));
}

INSTANTIATE_TEST_SUITE_P(Storage, SolveProximalTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Sparse" : "Dense";
                         });

TEST(SolveProximalTest, ClassifiersHaveNoExactSolve) {
  const Synthetic data = MakeSynthetic("multinomial", 10, 3, 28);
  const Synthetic binary = MakeSynthetic("logistic", 10, 3, 28);
  for (const char* kind : {"logistic", "multinomial"}) {
    const bool logistic = std::string(kind) == "logistic";
    const Synthetic& d = logistic ? binary : data;
    auto problem = MakeProblem({kind, 0.1, logistic ? 0 : kClasses},
                               FromDense(d.a, d.labels, false), 0.1);
    Vec z;
    EXPECT_FALSE(
        problem->SolveProximal(Vec::Zero(problem->dim()), 1.0, Vec::Zero(problem->dim()), &z))
        << kind;
  }
}

// ---------------------------------------------------------------------------------------------
// Labels.

Dataset WithLabels(std::vector<double> labels, const std::string& source = "labels.txt") {
  const int m = static_cast<int>(labels.size());
  return FromDense(Eigen::MatrixXd::Ones(m, 2), Eigen::Map<Vec>(labels.data(), m), false, source);
}
std::vector<double> LabelsOf(const Dataset& data) {
  return std::vector<double>(data.labels.data(), data.labels.data() + data.labels.size());
}

// How a file's labels become these labels is LabelMap's (tests/labels_test.cc).

TEST(MakeProblemTest, ErrorsNameTheKindAndTheData) {
  const auto expect_throw = [](const ProblemSpec& spec, Dataset data, double scale,
                               const std::string& text) {
    try {
      MakeProblem(spec, std::move(data), scale);
      ADD_FAILURE() << "no exception for " << spec.kind;
    } catch (const std::runtime_error& e) {
      EXPECT_THAT(e.what(), HasSubstr(spec.kind));
      EXPECT_THAT(e.what(), HasSubstr("bad.csv"));
      EXPECT_THAT(e.what(), HasSubstr(text));
    }
  };
  expect_throw({"multinomial", 0.1, 3}, WithLabels({0, 2.5}, "bad.csv"), 1.0, "2.5");
  expect_throw({"multinomial", 0.1, 3}, WithLabels({0, 3}, "bad.csv"), 1.0, "[0, 3)");
  expect_throw({"multinomial", 0.1, 0}, WithLabels({0, 1}, "bad.csv"), 1.0, "number of classes");
  expect_throw({"logistic", 0.1, 0}, WithLabels({0, 1, 2}, "bad.csv"), 1.0, "not -1 or +1");
  expect_throw({"logistic", 0.1, 4}, WithLabels({-1, 1}, "bad.csv"), 1.0, "binary, not 4");
  expect_throw({"least-squares", 0.1, 0}, WithLabels({0, NAN}, "bad.csv"), 1.0, "non-finite");
  expect_throw({"least-squares", -0.1, 0}, WithLabels({0, 1}, "bad.csv"), 1.0, "l2");
  expect_throw({"least-squares", 0.1, 0}, WithLabels({0, 1}, "bad.csv"), 0.0, "loss scale");
  expect_throw({"least-squares", 0.1, 0}, WithLabels({}, "bad.csv"), 1.0, "no samples");
  expect_throw({"svm", 0.1, 0}, WithLabels({0, 1}, "bad.csv"), 1.0, "least-squares");

  Dataset nan_feature = WithLabels({1, -1}, "bad.csv");
  nan_feature.dense(1, 1) = NAN;
  expect_throw({"logistic", 0.1, 0}, nan_feature, 1.0, "non-finite feature");
  Dataset wrong_shape = WithLabels({1, -1}, "bad.csv");
  wrong_shape.num_features = 3;
  expect_throw({"logistic", 0.1, 0}, wrong_shape, 1.0, "features");
}

}  // namespace
}  // namespace starling::algorithms
