#include "topology/mixing.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace starling::topology {
namespace {

void RequireSquare(const Eigen::MatrixXd& w, const char* what) {
  if (w.rows() != w.cols()) {
    throw std::invalid_argument(std::string(what) + ": matrix is " + std::to_string(w.rows()) +
                                "x" + std::to_string(w.cols()) + ", not square");
  }
}

}  // namespace

Eigen::MatrixXd MetropolisHastings(const Graph& graph) {
  const int n = graph.num_nodes();
  Eigen::MatrixXd w = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i) {
    // Summed in ascending neighbour order so every node computes its own row bit for bit the way
    // this function does (numerics are deterministic: the same inputs give the same bits).
    double off_diagonal = 0.0;
    for (int j : graph.Neighbors(i)) {
      const double w_ij = 1.0 / (std::max(graph.Degree(i), graph.Degree(j)) + 1);
      w(i, j) = w_ij;
      off_diagonal += w_ij;
    }
    w(i, i) = 1.0 - off_diagonal;
  }
  return w;
}

Eigen::MatrixXd Lazy(const Eigen::MatrixXd& w) {
  RequireSquare(w, "Lazy");
  const Eigen::Index n = w.rows();
  if (n == 0) return w;
  const double c = LazyFactor(w);
  Eigen::MatrixXd lazy = c * w;
  lazy.diagonal().array() += 1.0 - c;
  return lazy;
}

double LazyFactor(const Eigen::MatrixXd& w) {
  RequireSquare(w, "LazyFactor");
  if (w.rows() == 0) return 1.0;
  const double min_diagonal = w.diagonal().minCoeff();
  // 1 - min W_ii <= 0 only when W = I (no edges): there is nothing to damp.
  return min_diagonal < 1.0 ? std::min(1.0, 0.9 / (1.0 - min_diagonal)) : 1.0;
}

Eigen::MatrixXd LaplacianOf(const Eigen::MatrixXd& w) {
  RequireSquare(w, "LaplacianOf");
  Eigen::MatrixXd laplacian = -w;
  laplacian.diagonal().array() += 1.0;
  return laplacian;
}

}  // namespace starling::topology
