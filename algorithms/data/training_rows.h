// The training file as a process holds it before it takes its shard: every label (the label map
// and the partition need them all), and the features in the most compact exact form the format
// allows. IDX images stay bytes (Fashion-MNIST: 47 MB, not 376 MB of doubles) and become doubles
// only for the rows taken; the other formats are held as read. Every process still sees the same
// rows, labels and numbers. A daemon that needs no other node's rows does not use this: it reads
// its shard streaming (ReadDatasetRowsInTurn, readers.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "algorithms/data/dataset.h"
#include "algorithms/data/readers.h"

namespace starling::algorithms {

class TrainingRows {
 public:
  explicit TrainingRows(Dataset data);
  explicit TrainingRows(IdxImages images);

  // The labels as read, the node column, the feature count and the source; the feature matrices
  // too unless compact() (then they are empty: use Subset or TakeAll for features).
  const Dataset& table() const { return table_; }
  bool compact() const { return images_.has_value(); }
  int num_samples() const { return table_.num_samples(); }

  // The rows `rows` with their features (labels as read), as Dataset::Subset. Throws
  // std::out_of_range for a row outside [0, num_samples()).
  Dataset Subset(const std::vector<int>& rows) const;
  // Every row with its features; *this is left empty.
  Dataset TakeAll();

 private:
  Dataset table_;
  std::optional<IdxImages> images_;
};

// Reads `path` as ReadDataset does (same formats, checks and errors); IDX images are held compact.
TrainingRows ReadTrainingRows(const std::string& path, const std::string& format,
                              int declared_features, const CsvColumns& csv);

}  // namespace starling::algorithms
