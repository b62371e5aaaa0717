// CSV reader: numeric columns, one sample per line, an optional header line.

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/data/readers.h"
#include "algorithms/data/row_sets.h"
#include "algorithms/data/text_lines.h"

namespace starling::algorithms {

namespace {

// A token for an error message: shortened, and with control bytes replaced, so that a binary file
// given by mistake still produces a short, printable message.
std::string Quote(const char* begin, const char* end) {
  constexpr ptrdiff_t kMax = 40;
  std::string text(begin, end - begin > kMax ? begin + kMax : end);
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  if (end - begin > kMax) text += "...";
  return "'" + text + "'";
}

// Splits a CSV line into fields. Each field, unquoted ("" inside quotes is one ") and with the
// blanks around it removed, is appended to *cells followed by a NUL, so strtod can parse it in
// place; *starts gets each field's offset. Returns an error description, or nullptr.
const char* SplitFields(const std::string& line, std::string* cells, std::vector<size_t>* starts) {
  cells->clear();
  starts->clear();
  const size_t n = line.size();
  auto is_blank = [](char c) { return c == ' ' || c == '\t'; };
  size_t i = 0;
  for (;;) {
    while (i < n && is_blank(line[i])) ++i;
    starts->push_back(cells->size());
    if (i < n && line[i] == '"') {
      for (++i;; ++i) {
        if (i >= n) return "unterminated quoted field";
        if (line[i] == '"') {
          if (i + 1 < n && line[i + 1] == '"') {
            ++i;
          } else {
            break;
          }
        }
        cells->push_back(line[i]);
      }
      ++i;  // the closing quote
      while (i < n && is_blank(line[i])) ++i;
      if (i < n && line[i] != ',') return "text after a closing quote";
    } else {
      size_t stop = line.find(',', i);
      if (stop == std::string::npos) stop = n;
      size_t last = stop;
      while (last > i && is_blank(line[last - 1])) --last;
      cells->append(line, i, last - i);
      i = stop;
    }
    cells->push_back('\0');
    if (i >= n) return nullptr;
    ++i;  // the comma
  }
}

// Parses a whole NUL-terminated field of `length` bytes as a finite double.
bool ParseNumber(const char* cell, size_t length, double* value) {
  if (length == 0) return false;
  char* parsed = nullptr;
  *value = std::strtod(cell, &parsed);
  return parsed == cell + length && std::isfinite(*value);
}

// Dense rows kept by a streaming read: the matrix is sized once the column count is known.
struct DenseRows {
  DenseMatrix features;
  std::vector<double> labels;
};

// ReadCsv, keeping the features of every row (sets == nullptr: the result is *all) or of the
// rows of `sets` (into *kept, one per set); *table gets every label and node id.
void ParseCsv(const std::string& path, int label_column, int node_column, RowSets* sets,
              Dataset* all, Dataset* table, std::vector<Dataset>* kept) {
  if (label_column < 0) {
    throw std::runtime_error(path + ": label column " + std::to_string(label_column) +
                             " is negative");
  }
  if (node_column == label_column) {
    throw std::runtime_error(path + ": column " + std::to_string(label_column) +
                             " cannot be both the label and the node column");
  }
  TextLines lines(path);
  std::string text;
  std::string cells;
  std::vector<size_t> starts;
  std::vector<double> features;  // row-major, columns - 1 per row (without sets)
  std::vector<double> row;       // the current row's features (with sets)
  std::vector<DenseRows> kept_rows(sets != nullptr ? sets->count() : 0);
  std::vector<double> labels;
  std::vector<int> nodes;
  size_t columns = 0;  // 0 until the first header or data line fixes it
  long columns_line = 0;
  bool header = false;
  long line = 0;
  auto fail = [&](const std::string& what) {
    throw std::runtime_error(path + ":" + std::to_string(line) + ": " + what);
  };

  while (lines.Next(&text)) {
    ++line;
    const size_t first = text.find_first_not_of(" \t");
    // Blank lines and whole-line '#' comments are skipped: data folders often annotate CSVs so.
    if (first == std::string::npos || text[first] == '#') continue;
    if (const char* error = SplitFields(text, &cells, &starts)) fail(error);
    const size_t count = starts.size();
    auto cell = [&](size_t k) { return cells.data() + starts[k]; };
    auto length = [&](size_t k) {
      return (k + 1 < count ? starts[k + 1] : cells.size()) - starts[k] - 1;
    };

    if (columns == 0) {
      if (count > static_cast<size_t>(INT_MAX)) fail("too many columns (more than INT_MAX)");
      columns = count;
      columns_line = line;
      if (static_cast<size_t>(label_column) >= columns) {
        fail("label column " + std::to_string(label_column) + " but the line has only " +
             std::to_string(columns) + " columns");
      }
      if (node_column >= 0 && static_cast<size_t>(node_column) >= columns) {
        fail("node column " + std::to_string(node_column) + " but the line has only " +
             std::to_string(columns) + " columns");
      }
      double ignored;
      for (size_t k = 0; k < count && !header; ++k) {
        header = !ParseNumber(cell(k), length(k), &ignored);
      }
      if (header) continue;
    }
    if (count != columns) {
      fail(std::to_string(count) + " columns, expected " + std::to_string(columns) + " (as " +
           (header ? "in the header on line " : "on line ") + std::to_string(columns_line) + ")");
    }
    if (labels.size() >= static_cast<size_t>(INT_MAX)) fail("too many rows (more than INT_MAX)");
    std::vector<double>* out = sets != nullptr ? &row : &features;
    row.clear();
    for (size_t k = 0; k < count; ++k) {
      double value;
      if (!ParseNumber(cell(k), length(k), &value)) {
        if (length(k) == 0) fail("column " + std::to_string(k) + " is empty");
        fail("value " + Quote(cell(k), cell(k) + length(k)) + " in column " + std::to_string(k) +
             " is not a finite number");
      }
      if (k == static_cast<size_t>(label_column)) {
        labels.push_back(value);
      } else if (node_column >= 0 && k == static_cast<size_t>(node_column)) {
        if (value < 0 || value > INT_MAX || value != std::floor(value)) {
          fail("node id " + Quote(cell(k), cell(k) + length(k)) + " in column " +
               std::to_string(k) + " is not a non-negative integer");
        }
        nodes.push_back(static_cast<int>(value));
      } else {
        out->push_back(value);
      }
    }
    if (sets != nullptr) {
      const int index = static_cast<int>(labels.size()) - 1;
      sets->ForRow(index, [&](int k) {
        DenseRows& rows = kept_rows[k];
        if (rows.features.rows() == 0) rows.features.resize(sets->size(k), row.size());
        std::copy(row.begin(), row.end(), rows.features.row(rows.labels.size()).data());
        rows.labels.push_back(labels.back());
      });
    }
  }
  if (labels.empty()) throw std::runtime_error(path + ": no samples (the file has no data lines)");

  Dataset data;
  data.is_sparse = false;
  data.source = path;
  data.num_features = static_cast<int>(columns - (node_column >= 0 ? 2 : 1));
  data.node_of_row = std::move(nodes);
  const Eigen::Index rows = static_cast<Eigen::Index>(labels.size());
  data.labels = Eigen::Map<const Vec>(labels.data(), rows);
  if (sets == nullptr) {
    data.dense = Eigen::Map<const DenseMatrix>(features.data(), rows, data.num_features);
    *all = std::move(data);
    return;
  }
  sets->CheckAllSeen(static_cast<int>(rows), path);
  // Reserved: Dataset's move may copy (Eigen's sparse matrix), so a growing vector would copy.
  kept->reserve(kept_rows.size());
  for (DenseRows& kept_set : kept_rows) {
    Dataset set;
    set.is_sparse = false;
    set.source = path;
    set.num_features = data.num_features;
    set.labels = Eigen::Map<const Vec>(kept_set.labels.data(), kept_set.labels.size());
    // A set of no rows is 0 x num_features, as Dataset::Subset makes it.
    set.dense = kept_set.features.rows() > 0 ? std::move(kept_set.features)
                                             : DenseMatrix(0, data.num_features);
    kept->push_back(std::move(set));
  }
  *table = std::move(data);
}

}  // namespace

Dataset ReadCsv(const std::string& path, int label_column, int node_column) {
  Dataset all;
  ParseCsv(path, label_column, node_column, nullptr, &all, nullptr, nullptr);
  return all;
}

StreamedRows ReadCsvRows(const std::string& path, int label_column, int node_column,
                         RowSets* sets) {
  StreamedRows out;
  ParseCsv(path, label_column, node_column, sets, nullptr, &out.table, &out.sets);
  return out;
}

}  // namespace starling::algorithms
