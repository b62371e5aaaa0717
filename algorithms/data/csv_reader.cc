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

// ReadCsv line by line, keeping the features of every row (sets == nullptr) or of the rows of
// `sets` (one DenseRows per set); every label and node id is kept too.
class CsvParser {
 public:
  CsvParser(const std::string& path, int label_column, int node_column, RowSets* sets)
      : path_(path), label_column_(label_column), node_column_(node_column), sets_(sets) {
    if (label_column < 0) {
      throw std::runtime_error(path + ": label column " + std::to_string(label_column) +
                               " is negative");
    }
    if (node_column == label_column) {
      throw std::runtime_error(path + ": column " + std::to_string(label_column) +
                               " cannot be both the label and the node column");
    }
    if (sets != nullptr) kept_rows_.resize(sets->count());
  }

  // For a read of the rows an index gave: the columns as the first read found them.
  void SetColumns(const TextRowIndex& index) {
    columns_ = static_cast<size_t>(index.columns);
    columns_line_ = index.columns_line;
    header_ = index.header;
    kept_rows_.assign(1, DenseRows());
  }

  // Parses one line; false for a line with no row (blank, comment, header).
  bool ParseLine(const std::string& text, long line) {
    line_ = line;
    const size_t first = text.find_first_not_of(" \t");
    // Blank lines and whole-line '#' comments are skipped: data folders often annotate CSVs so.
    if (first == std::string::npos || text[first] == '#') return false;
    if (const char* error = SplitFields(text, &cells_, &starts_)) Fail(error);
    const size_t count = starts_.size();

    if (columns_ == 0) {
      if (count > static_cast<size_t>(INT_MAX)) Fail("too many columns (more than INT_MAX)");
      columns_ = count;
      columns_line_ = line;
      if (static_cast<size_t>(label_column_) >= columns_) {
        Fail("label column " + std::to_string(label_column_) + " but the line has only " +
             std::to_string(columns_) + " columns");
      }
      if (node_column_ >= 0 && static_cast<size_t>(node_column_) >= columns_) {
        Fail("node column " + std::to_string(node_column_) + " but the line has only " +
             std::to_string(columns_) + " columns");
      }
      double ignored;
      for (size_t k = 0; k < count && !header_; ++k) {
        header_ = !ParseNumber(Cell(k), Length(k), &ignored);
      }
      if (header_) return false;
    }
    if (labels_.size() >= static_cast<size_t>(INT_MAX)) Fail("too many rows (more than INT_MAX)");
    ParseValues(sets_ != nullptr ? &row_ : &features_);
    if (sets_ != nullptr) {
      const int index = static_cast<int>(labels_.size()) - 1;
      sets_->ForRow(index, [&](int k) { KeepRow(sets_->size(k), &kept_rows_[k]); });
    }
    return true;
  }

  // Parses the line of a row the index gave (after SetColumns) and keeps it, one of `rows` (the
  // first set of FinishSets).
  void ParseIndexedLine(const std::string& text, long line, size_t rows) {
    line_ = line;
    const size_t first = text.find_first_not_of(" \t");
    if (first == std::string::npos || text[first] == '#') {
      Fail("no row on this line, unlike when the file was first read (did it change?)");
    }
    if (const char* error = SplitFields(text, &cells_, &starts_)) Fail(error);
    ParseValues(&row_);
    KeepRow(rows, &kept_rows_[0]);
  }

  // Every row's label and node id, and every row's features without sets.
  Dataset Finish() {
    if (labels_.empty()) {
      throw std::runtime_error(path_ + ": no samples (the file has no data lines)");
    }
    Dataset data;
    data.is_sparse = false;
    data.source = path_;
    data.num_features = NumFeatures();
    data.node_of_row = std::move(nodes_);
    const Eigen::Index rows = static_cast<Eigen::Index>(labels_.size());
    data.labels = Eigen::Map<const Vec>(labels_.data(), rows);
    if (sets_ == nullptr) {
      data.dense = Eigen::Map<const DenseMatrix>(features_.data(), rows, data.num_features);
    }
    return data;
  }

  // The rows kept for each set (ParseLine with sets, or ParseIndexedLine: one set).
  std::vector<Dataset> FinishSets() {
    std::vector<Dataset> kept;
    // Reserved: Dataset's move may copy (Eigen's sparse matrix), so a growing vector would copy.
    kept.reserve(kept_rows_.size());
    for (DenseRows& kept_set : kept_rows_) {
      Dataset set;
      set.is_sparse = false;
      set.source = path_;
      set.num_features = NumFeatures();
      set.labels = Eigen::Map<const Vec>(kept_set.labels.data(), kept_set.labels.size());
      // A set of no rows is 0 x num_features, as Dataset::Subset makes it.
      set.dense = kept_set.features.rows() > 0 ? std::move(kept_set.features)
                                               : DenseMatrix(0, NumFeatures());
      kept.push_back(std::move(set));
    }
    return kept;
  }

  int columns() const { return static_cast<int>(columns_); }
  long columns_line() const { return columns_line_; }
  bool header() const { return header_; }

 private:
  const char* Cell(size_t k) const { return cells_.data() + starts_[k]; }
  size_t Length(size_t k) const {
    return (k + 1 < starts_.size() ? starts_[k + 1] : cells_.size()) - starts_[k] - 1;
  }
  int NumFeatures() const { return static_cast<int>(columns_ - (node_column_ >= 0 ? 2 : 1)); }

  // The split line's values: the label and node id to labels_ and nodes_, features to *out
  // (cleared first when it is row_).
  void ParseValues(std::vector<double>* out) {
    const size_t count = starts_.size();
    if (count != columns_) {
      Fail(std::to_string(count) + " columns, expected " + std::to_string(columns_) + " (as " +
           (header_ ? "in the header on line " : "on line ") + std::to_string(columns_line_) + ")");
    }
    row_.clear();
    for (size_t k = 0; k < count; ++k) {
      double value;
      if (!ParseNumber(Cell(k), Length(k), &value)) {
        if (Length(k) == 0) Fail("column " + std::to_string(k) + " is empty");
        Fail("value " + Quote(Cell(k), Cell(k) + Length(k)) + " in column " + std::to_string(k) +
             " is not a finite number");
      }
      if (k == static_cast<size_t>(label_column_)) {
        labels_.push_back(value);
      } else if (node_column_ >= 0 && k == static_cast<size_t>(node_column_)) {
        if (value < 0 || value > INT_MAX || value != std::floor(value)) {
          Fail("node id " + Quote(Cell(k), Cell(k) + Length(k)) + " in column " +
               std::to_string(k) + " is not a non-negative integer");
        }
        nodes_.push_back(static_cast<int>(value));
      } else {
        out->push_back(value);
      }
    }
  }

  // Appends the row just parsed (row_, labels_.back()) to *rows, sized for `size` rows.
  void KeepRow(size_t size, DenseRows* rows) {
    if (rows->features.rows() == 0) {
      rows->features.resize(static_cast<Eigen::Index>(size),
                            static_cast<Eigen::Index>(row_.size()));
    }
    std::copy(row_.begin(), row_.end(), rows->features.row(rows->labels.size()).data());
    rows->labels.push_back(labels_.back());
  }

  [[noreturn]] void Fail(const std::string& what) const {
    throw std::runtime_error(path_ + ":" + std::to_string(line_) + ": " + what);
  }

  std::string path_;
  int label_column_;
  int node_column_;
  RowSets* sets_;
  std::string cells_;
  std::vector<size_t> starts_;
  std::vector<double> features_;  // row-major, columns - 1 per row (without sets)
  std::vector<double> row_;       // the current row's features (with sets)
  std::vector<DenseRows> kept_rows_;
  std::vector<double> labels_;
  std::vector<int> nodes_;
  size_t columns_ = 0;  // 0 until the first header or data line fixes it
  long columns_line_ = 0;
  bool header_ = false;
  long line_ = 0;
};

}  // namespace

Dataset ReadCsv(const std::string& path, int label_column, int node_column) {
  CsvParser parser(path, label_column, node_column, nullptr);
  TextLines lines(path);
  std::string text;
  long line = 0;
  while (lines.Next(&text)) parser.ParseLine(text, ++line);
  return parser.Finish();
}

StreamedRows ReadCsvRows(const std::string& path, int label_column, int node_column, RowSets* sets,
                         TextRowIndex* index) {
  CsvParser parser(path, label_column, node_column, sets);
  TextLines lines(path);
  std::string text;
  long line = 0;
  while (lines.Next(&text)) {
    if (parser.ParseLine(text, ++line) && index != nullptr) index->Add(lines.line_start(), line);
  }
  StreamedRows out;
  out.table = parser.Finish();
  sets->CheckAllSeen(out.table.num_samples(), path);
  out.sets = parser.FinishSets();
  if (index != nullptr) {
    index->source = path;
    index->num_features = out.table.num_features;
    index->columns = parser.columns();
    index->columns_line = parser.columns_line();
    index->header = parser.header();
  }
  return out;
}

Dataset ReadCsvIndexed(const std::string& path, int label_column, int node_column,
                       const TextRowIndex& index, const std::vector<int>& rows) {
  CsvParser parser(path, label_column, node_column, nullptr);
  parser.SetColumns(index);
  TextLines lines(path);
  std::string text;
  for (int row : rows) {
    lines.Seek(index.starts[row]);
    if (!lines.Next(&text)) text.clear();  // the file is shorter than when it was first read
    parser.ParseIndexedLine(text, index.LineOf(row), rows.size());
  }
  return std::move(parser.FinishSets()[0]);
}

}  // namespace starling::algorithms
