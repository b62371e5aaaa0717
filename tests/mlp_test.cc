// The MLP problem: gradients against central finite differences, mini-batch gradients against
// the full gradient, and bad input.
#include <gtest/gtest.h>

#include <random>

#include "algorithms/problems/mlp.h"

namespace starling {
namespace {

algorithms::Dataset SmallData(int rows, int features, int classes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  algorithms::Dataset data;
  data.num_features = features;
  data.dense.resize(rows, features);
  data.labels.resize(rows);
  for (int r = 0; r < rows; ++r) {
    for (int k = 0; k < features; ++k) data.dense(r, k) = normal(rng);
    data.labels[r] = static_cast<double>(rng() % classes);
  }
  data.source = "small";
  return data;
}

TEST(Mlp, GradientMatchesFiniteDifferences) {
  const algorithms::Mlp mlp(SmallData(30, 6, 3, 1), 3, 5, 0.01, 0.5);
  EXPECT_EQ(mlp.dim(), 5 * 7 + 3 * 6);
  std::mt19937_64 rng(2);
  std::normal_distribution<double> normal;
  Vec x(mlp.dim());
  for (int k = 0; k < x.size(); ++k) x[k] = 0.5 * normal(rng);
  Vec g;
  mlp.Gradient(x, &g);
  const double h = 1e-6;
  for (int k = 0; k < x.size(); ++k) {
    Vec plus = x, minus = x;
    plus[k] += h;
    minus[k] -= h;
    const double fd = (mlp.Value(plus) - mlp.Value(minus)) / (2 * h);
    EXPECT_NEAR(g[k], fd, 1e-5 * (1 + std::abs(fd))) << "coordinate " << k;
  }
  // A "batch" of every row once is the full gradient.
  std::vector<int> all(30);
  for (int r = 0; r < 30; ++r) all[r] = r;
  Vec gb;
  mlp.BatchGradient(x, all, &gb);
  EXPECT_LT((gb - g).norm(), 1e-12 * (1 + g.norm()));
  const std::optional<double> accuracy = mlp.Accuracy(x);
  ASSERT_TRUE(accuracy.has_value());
  EXPECT_GE(*accuracy, 0.0);
  EXPECT_LE(*accuracy, 1.0);
}

TEST(Mlp, RejectsBadInput) {
  algorithms::Dataset data = SmallData(4, 2, 2, 3);
  data.labels[1] = 2;  // not a class of 2
  EXPECT_THROW(algorithms::Mlp(data, 2, 3, 0.0, 1.0), std::runtime_error);
  EXPECT_THROW(algorithms::Mlp(SmallData(4, 2, 2, 3), 2, 0, 0.0, 1.0), std::runtime_error);
}

}  // namespace
}  // namespace starling
