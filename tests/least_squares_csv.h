// Least-squares test data for daemon tests that read CSV (label first), with its optimum solved
// here from the normal equations, independently of the code under test, and the check that every
// daemon ended there.
#pragma once

#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "algorithms/types.h"
#include "tests/daemon_cluster.h"
#include "tests/subprocess.h"

namespace starling::testing {

// Writes rows x dim data to `path` and returns the optimum of
// (1/M) sum_r (a_r.x - b_r)^2 / 2 + (l2/2)|x|^2 (the mean of the node objectives).
inline Vec WriteLeastSquaresCsv(const std::string& path, int rows, int dim, double l2,
                                uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  Eigen::MatrixXd a(rows, dim);
  Vec b(rows);
  std::ofstream out(path);
  out.precision(17);
  for (int r = 0; r < rows; ++r) {
    for (int k = 0; k < dim; ++k) a(r, k) = normal(rng) * (1 + k % 3);
    b(r) = 2.0 + a.row(r).sum() * 0.5 + normal(rng);
    out << b(r);
    for (int k = 0; k < dim; ++k) out << ',' << a(r, k);
    out << '\n';
  }
  const Eigen::MatrixXd gram = a.transpose() * a / rows + l2 * Eigen::MatrixXd::Identity(dim, dim);
  return gram.ldlt().solve(a.transpose() * b / rows);
}

// Waits for every daemon (each within `timeout`), expects exit 0 (else prints its log,
// dir/node-K.log) and its final model dir/model-K.txt within `tolerance` of x_star, relatively.
inline void ExpectEveryDaemonAtTheOptimum(const std::vector<std::unique_ptr<Subprocess>>& procs,
                                          const std::string& dir, const Vec& x_star,
                                          std::chrono::seconds timeout, double tolerance) {
  for (size_t i = 0; i < procs.size(); ++i) {
    const int code = procs[i]->Wait(timeout);
    EXPECT_EQ(code, 0) << "node " << i << ":\n"
                       << ReadFile(dir + "/node-" + std::to_string(i) + ".log");
  }
  for (size_t i = 0; i < procs.size(); ++i) {
    const Vec x = ReadModelFile(dir + "/model-" + std::to_string(i) + ".txt");
    ASSERT_EQ(x.size(), x_star.size()) << "node " << i;
    const double err = (x - x_star).norm() / x_star.norm();
    std::printf("node %zu: |x - x*| / |x*| = %.3g\n", i, err);
    EXPECT_LE(err, tolerance) << "node " << i;
  }
}

}  // namespace starling::testing
