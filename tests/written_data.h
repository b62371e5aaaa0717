// Small data sets the tests write themselves (LIBSVM text): a seeded generator, so that every run
// of a test sees the same rows, with features of different scales per column.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace starling::testing {

// `rows` samples of `dim` features, column j scaled by 0.5 + 2.5 j / (dim - 1). Logistic labels
// are -1/+1 from a noisy linear model; multinomial labels 0..classes-1 from the nearest of
// `classes` random centres plus noise. Returns `path`.
inline std::string WriteLogisticData(const std::string& path, int rows, int dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> w(dim);
  for (double& v : w) v = normal(rng);
  std::ofstream out(path);
  out.precision(9);
  for (int i = 0; i < rows; ++i) {
    std::vector<double> x(dim);
    double margin = 0.0;
    for (int j = 0; j < dim; ++j) {
      x[j] = normal(rng) * (0.5 + 2.5 * j / std::max(1, dim - 1));
      margin += w[j] * x[j];
    }
    margin = margin / std::sqrt(static_cast<double>(dim)) + normal(rng);
    out << (margin > 0 ? "+1" : "-1");
    for (int j = 0; j < dim; ++j) out << ' ' << j + 1 << ':' << x[j];
    out << '\n';
  }
  return path;
}

inline std::string WriteMultinomialData(const std::string& path, int rows, int dim, int classes,
                                        uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<std::vector<double>> centres(classes, std::vector<double>(dim));
  for (auto& c : centres) {
    for (double& v : c) v = normal(rng);
  }
  std::ofstream out(path);
  out.precision(9);
  for (int i = 0; i < rows; ++i) {
    const int label = static_cast<int>(rng() % static_cast<uint64_t>(classes));
    out << label;
    for (int j = 0; j < dim; ++j) {
      out << ' ' << j + 1 << ':' << (centres[label][j] + 1.5 * normal(rng)) * (1.0 + j % 3);
    }
    out << '\n';
  }
  return path;
}

}  // namespace starling::testing
