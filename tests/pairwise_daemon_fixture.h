// What the daemon tests of the asynchronous pairwise methods share (async_pairwise_daemon_test,
// dadao_daemon_test): a least-squares data set written as LIBSVM text with its exact optimum,
// and starting, waiting for and scoring real starlingd processes with per-node files in one folder.
#pragma once

#include <Eigen/Cholesky>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "algorithms/types.h"
#include "tests/daemon_cluster.h"
#include "tests/subprocess.h"

namespace starling::testing {

struct Written {
  Eigen::MatrixXd a;
  Vec b;
};

// b = A w + noise + 2, columns of different scales; written as LIBSVM text.
inline Written WriteLeastSquares(const std::string& path, int rows, int dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Written d{Eigen::MatrixXd(rows, dim), Vec(rows)};
  Vec w(dim);
  for (int j = 0; j < dim; ++j) w[j] = normal(rng);
  std::ofstream out(path);
  out.precision(17);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < dim; ++j) d.a(i, j) = normal(rng) * (0.5 + j);
    d.b[i] = d.a.row(i).dot(w) + 0.3 * normal(rng) + 2.0;
    out << d.b[i];
    for (int j = 0; j < dim; ++j) out << ' ' << j + 1 << ':' << d.a(i, j);
    out << '\n';
  }
  return d;
}

// argmin (1/M) sum 0.5 (a^T x - b)^2 + (l2/2)||x||^2.
inline Vec NormalEquations(const Written& d, double l2) {
  const double m = static_cast<double>(d.a.rows());
  Eigen::MatrixXd h = d.a.transpose() * d.a / m;
  h.diagonal().array() += l2;
  return h.ldlt().solve(d.a.transpose() * d.b / m);
}

inline std::string NodePath(const std::string& dir, const std::string& what, int i) {
  return dir + "/" + what + "-" + std::to_string(i);
}

inline std::unique_ptr<Subprocess> Start(const std::string& dir, const std::string& cluster, int i,
                                         const std::vector<std::string>& args,
                                         const std::string& log) {
  std::vector<std::string> argv = {kDaemonBinary,
                                   "--cluster",
                                   cluster,
                                   "--id",
                                   std::to_string(i),
                                   "--final-model",
                                   NodePath(dir, "model", i) + ".txt",
                                   "--checkpoint",
                                   NodePath(dir, "checkpoint", i) + ".bin",
                                   "--metrics",
                                   NodePath(dir, "metrics", i) + ".jsonl",
                                   "--allow-plaintext",
                                   "--fault-seed",
                                   std::to_string(31 + i)};
  argv.insert(argv.end(), args.begin(), args.end());
  return std::make_unique<Subprocess>(argv, log);
}

inline std::vector<Vec> WaitAll(std::vector<std::unique_ptr<Subprocess>>* procs,
                                const std::string& dir, int victim = -1) {
  std::vector<Vec> models;
  for (size_t i = 0; i < procs->size(); ++i) {
    const int code = (*procs)[i]->Wait(std::chrono::seconds(240));
    const std::string log = NodePath(dir, "log", static_cast<int>(i)) +
                            (static_cast<int>(i) == victim ? "-resumed" : "");
    EXPECT_EQ(code, 0) << "node " << i << " log:\n" << ReadFile(log);
    models.push_back(ReadModelFile(NodePath(dir, "model", static_cast<int>(i)) + ".txt"));
  }
  return models;
}

inline double WorstError(const std::vector<Vec>& models, const Vec& x_star) {
  double worst = 0;
  for (const Vec& m : models) {
    if (m.size() != x_star.size()) return 1e300;
    worst = std::max(worst, (m - x_star).norm() / x_star.norm());
  }
  return worst;
}

}  // namespace starling::testing
