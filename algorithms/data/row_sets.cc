#include "algorithms/data/row_sets.h"

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

}  // namespace starling::algorithms
