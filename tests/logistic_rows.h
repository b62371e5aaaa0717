// Rows for a logistic problem that a test writes as LIBSVM text and keeps, so that it can
// evaluate the L2-logistic objective and the accuracy of a model itself, independently of the
// project's problems: (1/M) sum log(1 + exp(-y a.x)) + (lambda/2)||x||^2.
#pragma once

#include <cmath>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace starling::testing {

struct Row {
  double y;
  std::vector<double> a;
};

// Rows with labels -1/+1 and features of different scales, written as LIBSVM text.
inline std::vector<Row> WriteRows(const std::string& path, int rows, int dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<Row> out;
  std::ofstream file(path);
  file.precision(17);
  for (int i = 0; i < rows; ++i) {
    Row r;
    double margin = 0;
    for (int j = 0; j < dim; ++j) {
      r.a.push_back(normal(rng) * (1.0 + 3.0 * j));
      margin += r.a.back() * (j % 2 ? 1.0 : -0.5);
    }
    r.y = margin + normal(rng) > 0 ? 1.0 : -1.0;
    file << (r.y > 0 ? "+1" : "-1");
    for (int j = 0; j < dim; ++j) file << ' ' << j + 1 << ':' << r.a[j];
    file << '\n';
    out.push_back(r);
  }
  return out;
}

inline double Dot(const std::vector<double>& a, const std::vector<double>& x) {
  double s = 0;
  for (size_t j = 0; j < a.size(); ++j) s += a[j] * x[j];
  return s;
}

inline double Objective(const std::vector<Row>& rows, double l2, const std::vector<double>& x) {
  double loss = 0;
  for (const Row& r : rows) {
    const double u = -r.y * Dot(r.a, x);  // log(1 + e^u), without overflow for large u
    loss += u > 0 ? u + std::log1p(std::exp(-u)) : std::log1p(std::exp(u));
  }
  double norm2 = 0;
  for (double v : x) norm2 += v * v;
  return loss / static_cast<double>(rows.size()) + 0.5 * l2 * norm2;
}

inline double Accuracy(const std::vector<Row>& rows, const std::vector<double>& x) {
  int correct = 0;
  for (const Row& r : rows) correct += (Dot(r.a, x) >= 0 ? 1.0 : -1.0) == r.y;
  return static_cast<double>(correct) / static_cast<double>(rows.size());
}

}  // namespace starling::testing
