#include "algorithms/data/row_sets.h"

#include <algorithm>
#include <stdexcept>

namespace starling::algorithms {

RowSets::RowSets(const std::vector<std::vector<int>>* sets)
    : sets_(sets), cursor_(sets->size(), 0) {
  for (size_t k = 0; k < sets->size(); ++k) {
    const std::vector<int>& set = (*sets)[k];
    for (size_t i = 0; i < set.size(); ++i) {
      if (set[i] < 0 || (i > 0 && set[i] <= set[i - 1])) {
        throw std::invalid_argument("row set " + std::to_string(k) +
                                    " is not strictly ascending and non-negative at position " +
                                    std::to_string(i));
      }
    }
  }
}

void RowSets::CheckAllSeen(int rows, const std::string& source) const {
  for (size_t k = 0; k < sets_->size(); ++k) {
    const std::vector<int>& set = (*sets_)[k];
    if (cursor_[k] < set.size()) {
      throw std::out_of_range(source + ": row " + std::to_string(set[cursor_[k]]) +
                              " out of range (the data set has " + std::to_string(rows) + " rows)");
    }
  }
}

void TextRowIndex::Add(int64_t start, long line) {
  const int row = rows();
  const long follows =
      line_runs.empty() ? row + 1L : line_runs.back().second + (row - line_runs.back().first);
  if (line != follows) line_runs.emplace_back(row, line);
  starts.push_back(start);
}

long TextRowIndex::LineOf(int row) const {
  // The last run that starts at or before `row`.
  auto run = std::upper_bound(line_runs.begin(), line_runs.end(), row,
                              [](int r, const std::pair<int, long>& p) { return r < p.first; });
  if (run == line_runs.begin()) return row + 1L;
  --run;
  return run->second + (row - run->first);
}

}  // namespace starling::algorithms
