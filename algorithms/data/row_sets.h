// The sets of rows a streaming read keeps (ReadDatasetRows, readers.h). Internal to
// algorithms/data: the readers visit rows in file order and ask which sets want each one.
#pragma once

#include <string>
#include <vector>

#include "algorithms/data/readers.h"

namespace starling::algorithms {

class RowSets {
 public:
  // Each set must be strictly ascending with no negative row; std::invalid_argument otherwise.
  // The sets are borrowed: they must outlive *this.
  explicit RowSets(const std::vector<std::vector<int>>* sets);

  int count() const { return static_cast<int>(sets_->size()); }
  int size(int set) const { return static_cast<int>((*sets_)[set].size()); }

  // Calls want(k) for every set k that holds `row`. Rows must be visited in strictly increasing
  // order (0, 1, 2, ... as the file is read, rows may be skipped).
  template <typename F>
  void ForRow(int row, F&& want) {
    for (int k = 0; k < count(); ++k) {
      const std::vector<int>& set = (*sets_)[k];
      size_t& at = cursor_[k];
      if (at < set.size() && set[at] == row) {
        ++at;
        want(k);
      }
    }
  }
  // Throws std::out_of_range, as Dataset::Subset does, for a row at or beyond `rows` (the file's
  // row count), once every row has been visited.
  void CheckAllSeen(int rows, const std::string& source) const;

 private:
  const std::vector<std::vector<int>>* sets_;
  std::vector<size_t> cursor_;
};

// The readers' streaming forms, behind ReadDatasetRows. For IDX, `sets` null reads the labels
// only (no set). With `index` non-null, the text readers record where each row starts in it.
StreamedRows ReadLibsvmRows(const std::string& path, int declared_features, RowSets* sets,
                            TextRowIndex* index = nullptr);
StreamedRows ReadCsvRows(const std::string& path, int label_column, int node_column, RowSets* sets,
                         TextRowIndex* index = nullptr);
// The rows `rows` (strictly ascending, each in [0, index.rows())) of a text file already checked
// by the reader that recorded `index`: only their lines are read (TextLines::Seek) and parsed.
// What ReadLibsvmRows / ReadCsvRows give as the set of those rows, bit for bit.
Dataset ReadLibsvmIndexed(const std::string& path, const TextRowIndex& index,
                          const std::vector<int>& rows);
Dataset ReadCsvIndexed(const std::string& path, int label_column, int node_column,
                       const TextRowIndex& index, const std::vector<int>& rows);
StreamedRows ReadIdxRows(const std::string& images, const std::string& labels, RowSets* sets);
// The sets' images as bytes (IdxImagesToDataset makes each one ReadIdxRows's set), in one pass;
// *all_labels gets every label and *pixels the features per image.
std::vector<IdxImages> ReadIdxImageSets(const std::string& images, const std::string& labels,
                                        RowSets* sets, Vec* all_labels, int* pixels);

}  // namespace starling::algorithms
