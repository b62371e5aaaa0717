#include "algorithms/data/training_rows.h"

#include <stdexcept>
#include <utility>

namespace starling::algorithms {

TrainingRows::TrainingRows(Dataset data) : table_(std::move(data)) {}

TrainingRows::TrainingRows(IdxImages images) {
  table_.is_sparse = false;
  table_.source = images.source;
  table_.num_features = images.pixels;
  table_.labels = images.labels;
  images_ = std::move(images);
}

Dataset TrainingRows::Subset(const std::vector<int>& rows) const {
  return images_ ? IdxImagesToDataset(*images_, &rows) : table_.Subset(rows);
}

Dataset TrainingRows::TakeAll() {
  Dataset all = images_ ? IdxImagesToDataset(*images_, nullptr) : std::move(table_);
  images_.reset();
  table_ = Dataset();
  return all;
}

TrainingRows ReadTrainingRows(const std::string& path, const std::string& format,
                              int declared_features, const CsvColumns& csv) {
  const std::string resolved = ResolveDataFormat(path, format);
  // A node column in IDX data is ReadDataset's error to report.
  if (resolved != "idx" || csv.node >= 0) {
    return TrainingRows(ReadDataset(path, resolved, declared_features, csv));
  }
  TrainingRows rows(ReadIdxImages(path, IdxLabelsPathFor(path)));
  // As ReadDataset: a dense format fixes its own dimension; a declared one is only checked.
  if (declared_features > 0 && rows.table().num_features != declared_features) {
    throw std::runtime_error(path + ": has " + std::to_string(rows.table().num_features) +
                             " features but " + std::to_string(declared_features) +
                             " were declared");
  }
  return rows;
}

}  // namespace starling::algorithms
