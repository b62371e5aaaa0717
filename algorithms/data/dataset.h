// A labelled data set: one row per sample. This is what readers produce, partitioners split and
// problems are built over.
#pragma once

#include <string>
#include <vector>

#include "algorithms/types.h"

namespace starling::algorithms {

struct Dataset {
  Dataset() = default;
  Dataset(const Dataset&) = default;
  Dataset& operator=(const Dataset&) = default;
  // O(1) and without copies: Eigen 3.4's SparseMatrix has no move constructor (moving one copies
  // it), so the sparse matrix is swapped. A moved-from data set is empty.
  Dataset(Dataset&& other) noexcept;
  Dataset& operator=(Dataset&& other) noexcept;

  // Exactly one of the two feature matrices is used: sparse data (LIBSVM) stays sparse, the rest
  // is dense. Both have num_samples() rows and num_features columns.
  bool is_sparse = false;
  DenseMatrix dense;
  SparseMatrix sparse;
  // One label per row: +-1 for binary data, 0..K-1 for classes, a real value for regression.
  Vec labels;
  int num_features = 0;
  std::string source;  // file it was read from, for messages
  // Pre-partitioned data only (a CSV read with a node column): the node each row belongs to.
  // Empty otherwise. Subset() does not carry it: it is consumed by the partitioner.
  std::vector<int> node_of_row;

  int num_samples() const { return static_cast<int>(labels.size()); }
  // Number of classes K if the labels are 0..K-1 integers, 0 otherwise (+-1 labels, regression,
  // an empty data set). K is the largest label + 1: smaller classes may be absent, but a shard
  // that lacks the top class reports a smaller K, so size models from the full data set. Labels
  // of 2^20 or more are taken as regression targets.
  int NumClasses() const;
  // The rows in `rows` (in that order, repetitions allowed) as a new data set. Throws
  // std::out_of_range for a row outside [0, num_samples()).
  Dataset Subset(const std::vector<int>& rows) const;
  // Fraction of the num_samples() x num_features cells that hold a non-zero value (an explicitly
  // stored 0 does not count); 0 for an empty data set.
  double Density() const;
};

}  // namespace starling::algorithms
