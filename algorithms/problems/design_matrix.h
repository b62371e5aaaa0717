// Helpers shared by the linear-model problems (logistic, multinomial, least squares) for a
// shard's design matrix A, which is either dense or sparse (Dataset::is_sparse). Internal to
// algorithms/: callers outside it use Problem.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "algorithms/data/dataset.h"
#include "algorithms/types.h"

namespace starling::algorithms {

// Calls f(A) with the matrix that holds `data`'s features (DenseMatrix or SparseMatrix), so one
// templated implementation serves both storage kinds.
template <typename F>
decltype(auto) WithFeatures(const Dataset& data, F&& f) {
  if (data.is_sparse) return std::forward<F>(f)(data.sparse);
  return std::forward<F>(f)(data.dense);
}

// Rows per block for dense products: 64 x 784 doubles = 400 KB stays in L2 between uses.
inline constexpr Eigen::Index kBlockRows = 64;

// The product A V as a row-major m x k matrix (DenseMatrix), V d x k. For a tall row-major A and
// a few columns, Eigen's general product over the whole matrix runs several times slower (0.6 s
// against 0.1 s for 60000 x 784 times 784 x 10) than the same product by blocks of rows into a
// row-major result, so dense data goes by blocks.
template <typename In>
DenseMatrix FeaturesTimes(const Dataset& data, const In& v) {
  if (data.is_sparse) return data.sparse * v;
  const DenseMatrix& a = data.dense;
  DenseMatrix out(a.rows(), v.cols());
  for (Eigen::Index first = 0; first < a.rows(); first += kBlockRows) {
    const Eigen::Index n = std::min(kBlockRows, a.rows() - first);
    out.middleRows(first, n).noalias() = a.middleRows(first, n) * v;
  }
  return out;
}

// *out = A^T op(A V) for a row-local op: op(first_row, U) rewrites U = (A V) restricted to rows
// first_row .. first_row + U.rows() - 1 in place. V is d x k: a Vec (U is then a Vec) or a matrix
// (U is then a row-major DenseMatrix, for the reason given at FeaturesTimes). *out must already
// be d x k. Hessian-vector products have this shape. On dense data the rows go in blocks that
// stay in cache between the two products, so A is read from memory once instead of twice.
template <typename In, typename Out, typename Op>
void TransposeTimesRowOp(const Dataset& data, const In& v, Op&& op, Out* out) {
  using Block = std::conditional_t<In::ColsAtCompileTime == 1, Vec, DenseMatrix>;
  if (data.is_sparse) {
    Block u = data.sparse * v;
    op(Eigen::Index{0}, u);
    out->noalias() = data.sparse.transpose() * u;
    return;
  }
  const DenseMatrix& a = data.dense;
  out->setZero();
  Block u;
  for (Eigen::Index first = 0; first < a.rows(); first += kBlockRows) {
    const auto rows = a.middleRows(first, std::min(kBlockRows, a.rows() - first));
    u.noalias() = rows * v;
    op(first, u);
    out->noalias() += rows.transpose() * u;
  }
}

// "'path'" or "(unnamed data)", for error messages.
std::string DataName(const Dataset& data);

// Checks what every problem needs of its shard: at least one sample, the used matrix has
// num_samples() rows and num_features >= 1 columns, all features and labels finite, l2 >= 0 and
// loss_scale > 0 (both finite). Throws std::runtime_error starting with "KIND problem on DATA:".
void CheckProblemInput(const char* kind, const Dataset& data, double l2, double loss_scale);

// Throws std::invalid_argument "CONTEXT: NAME has dimension N, expected D" unless v.size() == d.
void CheckSize(const char* context, const char* name, const Vec& v, Eigen::Index d);
// Throws unless `samples` is non-empty and every index is in [0, m): std::invalid_argument for
// an empty batch, std::out_of_range otherwise.
void CheckBatch(const char* context, const std::vector<int>& samples, int m);

// A^T A as a dense d x d matrix (both triangles filled).
Eigen::MatrixXd FeatureGram(const Dataset& data);

// An upper bound on lambda_max(A^T A), deterministic for a given shard and binary. When
// min(m, d) <= kExactGramLimit the smaller Gram matrix (A^T A or A A^T, same non-zero spectrum)
// is formed and its spectrum computed exactly, then inflated by a relative 1e-8 to cover
// rounding. Above that size, power iteration from the all-ones vector (at most 10^4 steps)
// returns Rayleigh quotient + residual norm, times (1 + 1e-6): safe in practice for power
// iterates, though not a proof.
double GramMaxEigenvalue(const Dataset& data);
inline constexpr int kExactGramLimit = 2000;

}  // namespace starling::algorithms
