// Least-squares test data for daemon tests that read CSV (label first), with its optimum solved
// here from the normal equations, independently of the code under test.
#pragma once

#include <Eigen/Cholesky>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>

#include "algorithms/types.h"

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

}  // namespace starling::testing
