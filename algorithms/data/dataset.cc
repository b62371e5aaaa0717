#include "algorithms/data/dataset.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace starling::algorithms {

namespace {

// Labels at or above this are not treated as class indices: a regression target such as a
// price would otherwise look like a data set with millions of classes.
constexpr double kMaxClassLabel = 1 << 20;

}  // namespace

Dataset::Dataset(Dataset&& other) noexcept
    : is_sparse(other.is_sparse),
      dense(std::move(other.dense)),
      labels(std::move(other.labels)),
      num_features(other.num_features),
      source(std::move(other.source)),
      node_of_row(std::move(other.node_of_row)) {
  sparse.swap(other.sparse);
}

Dataset& Dataset::operator=(Dataset&& other) noexcept {
  if (this != &other) {
    is_sparse = other.is_sparse;
    dense = std::move(other.dense);
    sparse.swap(other.sparse);
    SparseMatrix().swap(other.sparse);  // frees what was ours, without allocating
    labels = std::move(other.labels);
    num_features = other.num_features;
    source = std::move(other.source);
    node_of_row = std::move(other.node_of_row);
  }
  return *this;
}

int Dataset::NumClasses() const {
  if (labels.size() == 0) return 0;
  double largest = 0;
  for (Eigen::Index i = 0; i < labels.size(); ++i) {
    const double y = labels[i];
    if (!(y >= 0 && y < kMaxClassLabel) || y != std::floor(y)) return 0;
    if (y > largest) largest = y;
  }
  return static_cast<int>(largest) + 1;
}

Dataset Dataset::Subset(const std::vector<int>& rows) const {
  const int n = num_samples();
  for (int r : rows) {
    if (r < 0 || r >= n) {
      throw std::out_of_range(source + ": row " + std::to_string(r) +
                              " out of range (the data set has " + std::to_string(n) + " rows)");
    }
  }
  Dataset out;
  out.is_sparse = is_sparse;
  out.num_features = num_features;
  out.source = source;
  const Eigen::Index m = static_cast<Eigen::Index>(rows.size());
  out.labels.resize(m);
  for (Eigen::Index i = 0; i < m; ++i) out.labels[i] = labels[rows[i]];

  if (is_sparse) {
    // Rows are appended in order, so reserving each row's exact size makes every insert O(1).
    Eigen::VectorXi row_sizes(m);
    for (Eigen::Index i = 0; i < m; ++i) {
      const int r = rows[i];
      // A matrix built elsewhere may be uncompressed, with slack between rows.
      row_sizes[i] = sparse.isCompressed()
                         ? sparse.outerIndexPtr()[r + 1] - sparse.outerIndexPtr()[r]
                         : sparse.innerNonZeroPtr()[r];
    }
    out.sparse.resize(m, sparse.cols());
    out.sparse.reserve(row_sizes);
    for (Eigen::Index i = 0; i < m; ++i) {
      for (SparseMatrix::InnerIterator it(sparse, rows[i]); it; ++it) {
        out.sparse.insert(i, it.col()) = it.value();
      }
    }
    out.sparse.makeCompressed();
  } else {
    out.dense.resize(m, dense.cols());
    for (Eigen::Index i = 0; i < m; ++i) out.dense.row(i) = dense.row(rows[i]);
  }
  return out;
}

double Dataset::Density() const {
  const double cells = static_cast<double>(num_samples()) * static_cast<double>(num_features);
  if (cells == 0) return 0;
  Eigen::Index nonzero = 0;
  if (is_sparse) {
    // Count values rather than nonZeros(): an explicitly stored 0 is not a non-zero feature.
    for (Eigen::Index r = 0; r < sparse.outerSize(); ++r) {
      for (SparseMatrix::InnerIterator it(sparse, r); it; ++it) nonzero += it.value() != 0;
    }
  } else {
    nonzero = (dense.array() != 0).count();
  }
  return static_cast<double>(nonzero) / cells;
}

}  // namespace starling::algorithms
