#include "algorithms/problems/design_matrix.h"

#include <Eigen/Eigenvalues>
#include <Eigen/SparseCore>
#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace starling::algorithms {
namespace {

[[noreturn]] void Fail(const char* kind, const Dataset& data, const std::string& what) {
  throw std::runtime_error(std::string(kind) + " problem on " + DataName(data) + ": " + what);
}

bool AllFinite(const DenseMatrix& a) { return a.allFinite(); }
bool AllFinite(const SparseMatrix& a) {
  const double* values = a.valuePtr();
  return std::all_of(values, values + a.nonZeros(), [](double v) { return std::isfinite(v); });
}

// The Gram matrix on the smaller side: A^T A (d x d) or A A^T (m x m).
Eigen::MatrixXd SmallGram(const DenseMatrix& a, bool transposed_side) {
  const Eigen::Index n = transposed_side ? a.rows() : a.cols();
  Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(n, n);
  // A symmetric rank-k update touches one triangle only: half the flops of a general product.
  if (transposed_side) {
    gram.selfadjointView<Eigen::Lower>().rankUpdate(a);
  } else {
    gram.selfadjointView<Eigen::Lower>().rankUpdate(a.transpose());
  }
  gram.triangularView<Eigen::StrictlyUpper>() = gram.transpose();
  return gram;
}
Eigen::MatrixXd SmallGram(const SparseMatrix& a, bool transposed_side) {
  if (transposed_side) return Eigen::MatrixXd(a * a.transpose());
  return Eigen::MatrixXd(a.transpose() * a);
}

// Power iteration on A^T A from the all-ones vector. It stops once the residual
// r = A^T A v - theta v is below kRelTol * theta and returns theta + ||r||: the Rayleigh
// quotient theta alone approaches lambda_max from below, while theta + ||r|| is above it as soon
// as the top eigenvector carries the largest weight in v, which power iteration quickly ensures.
// With a cluster of near-equal top eigenvalues the iteration may hit the cap first; the
// residual is then larger and the bound looser, but still on the safe side.
template <typename Matrix>
double PowerIteration(const Matrix& a) {
  constexpr int kMaxIterations = 10000;
  constexpr double kRelTol = 1e-10;
  Vec v = Vec::Ones(a.cols()) / std::sqrt(static_cast<double>(a.cols()));
  double bound = 0.0;
  for (int it = 0; it < kMaxIterations; ++it) {
    const Vec av = a * v;
    const Vec w = a.transpose() * av;
    const double theta = av.squaredNorm();  // v^T A^T A v with ||v|| = 1
    const double norm = w.norm();
    if (norm == 0.0) return 0.0;
    const double residual = (w - theta * v).norm();
    bound = theta + residual;
    if (residual <= kRelTol * theta) break;
    v = w / norm;
  }
  return bound;
}

}  // namespace

std::string DataName(const Dataset& data) {
  return data.source.empty() ? std::string("(unnamed data)") : "'" + data.source + "'";
}

void CheckProblemInput(const char* kind, const Dataset& data, double l2, double loss_scale) {
  if (!std::isfinite(l2) || l2 < 0.0) {
    Fail(kind, data, "l2 must be finite and >= 0, got " + std::to_string(l2));
  }
  if (!std::isfinite(loss_scale) || loss_scale <= 0.0) {
    Fail(kind, data, "loss scale must be finite and > 0, got " + std::to_string(loss_scale));
  }
  const int m = data.num_samples();
  if (m == 0) Fail(kind, data, "no samples");
  if (data.num_features < 1) Fail(kind, data, "no features");
  const Eigen::Index rows = data.is_sparse ? data.sparse.rows() : data.dense.rows();
  const Eigen::Index cols = data.is_sparse ? data.sparse.cols() : data.dense.cols();
  if (rows != m || cols != data.num_features) {
    Fail(kind, data,
         "feature matrix is " + std::to_string(rows) + " x " + std::to_string(cols) +
             " but there are " + std::to_string(m) + " labels and " +
             std::to_string(data.num_features) + " features");
  }
  if (!data.labels.allFinite()) Fail(kind, data, "non-finite label");
  if (!WithFeatures(data, [](const auto& a) { return AllFinite(a); })) {
    Fail(kind, data, "non-finite feature value");
  }
}

void CheckSize(const char* context, const char* name, const Vec& v, Eigen::Index d) {
  if (v.size() != d) {
    throw std::invalid_argument(std::string(context) + ": " + name + " has dimension " +
                                std::to_string(v.size()) + ", expected " + std::to_string(d));
  }
}

void CheckBatch(const char* context, const std::vector<int>& samples, int m) {
  if (samples.empty()) throw std::invalid_argument(std::string(context) + ": empty mini-batch");
  for (int i : samples) {
    if (i < 0 || i >= m) {
      throw std::out_of_range(std::string(context) + ": sample " + std::to_string(i) +
                              " outside the shard's " + std::to_string(m) + " rows");
    }
  }
}

Eigen::MatrixXd FeatureGram(const Dataset& data) {
  return WithFeatures(data, [](const auto& a) { return SmallGram(a, /*transposed_side=*/false); });
}

double GramMaxEigenvalue(const Dataset& data) {
  return WithFeatures(data, [](const auto& a) {
    const Eigen::Index small = std::min(a.rows(), a.cols());
    if (small <= kExactGramLimit) {
      const Eigen::MatrixXd gram = SmallGram(a, /*transposed_side=*/a.rows() < a.cols());
      const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(gram, Eigen::EigenvaluesOnly);
      return std::max(0.0, eig.eigenvalues().maxCoeff()) * (1.0 + 1e-8);
    }
    return PowerIteration(a) * (1.0 + 1e-6);
  });
}

}  // namespace starling::algorithms
