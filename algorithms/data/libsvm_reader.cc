// LIBSVM / svmlight text reader.
//
// Numbers are parsed with strtod/strtol on a line buffer: it is an order of magnitude faster than
// iostream extraction per token, and a9a-sized files read in milliseconds. strtod follows the C
// locale, which is the default as long as the program does not call setlocale().

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

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

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

// The CSR arrays of a sparse data set, built row by row.
struct CsrRows {
  std::vector<int> outer{0};
  std::vector<int> inner;
  std::vector<double> values;
  std::vector<double> labels;

  Dataset Finish(const std::string& source, int num_features) const {
    Dataset data;
    data.is_sparse = true;
    data.source = source;
    data.num_features = num_features;
    const Eigen::Index rows = static_cast<Eigen::Index>(labels.size());
    data.labels = Eigen::Map<const Vec>(labels.data(), rows);
    data.sparse =
        Eigen::Map<const SparseMatrix>(rows, num_features, static_cast<Eigen::Index>(inner.size()),
                                       outer.data(), inner.data(), values.data());
    return data;
  }
};

class LibsvmParser {
 public:
  // With `sets`, keeps the features of those rows only (and every label); else of every row.
  LibsvmParser(const std::string& path, int declared, RowSets* sets = nullptr)
      : path_(path), declared_(declared), sets_(sets) {
    if (sets_ != nullptr) kept_.resize(sets_->count());
  }

  // Parses one line; false for a line with no row (blank, comment).
  bool ParseLine(std::string* text, long line) {
    double label;
    if (!ParseRow(text, line, &label)) return false;
    const int row = static_cast<int>(labels_.size());
    labels_.push_back(label);
    if (sets_ == nullptr) {
      Keep(label, &all_);
    } else {
      sets_->ForRow(row, [&](int k) { Keep(label, &kept_[k]); });
    }
    return true;
  }

  // Parses the line of a row the index gave and keeps it (features and label only).
  void ParseIndexedLine(std::string* text, long line) {
    double label;
    if (!ParseRow(text, line, &label)) {
      Fail("no row on this line, unlike when the file was first read (did it change?)");
    }
    Keep(label, &all_);
  }
  // The rows ParseIndexedLine kept.
  Dataset FinishIndexed() const { return all_.Finish(path_, NumFeatures()); }

  Dataset Finish() {
    CheckNotEmpty();
    all_.labels = std::move(labels_);
    return all_.Finish(path_, NumFeatures());
  }

  StreamedRows FinishRows() {
    CheckNotEmpty();
    sets_->CheckAllSeen(static_cast<int>(labels_.size()), path_);
    StreamedRows out;
    out.table.is_sparse = true;
    out.table.source = path_;
    out.table.num_features = NumFeatures();
    out.table.labels = Eigen::Map<const Vec>(labels_.data(), labels_.size());
    // Reserved: Dataset's move may copy (Eigen's sparse matrix), so a growing vector would copy.
    out.sets.reserve(kept_.size());
    for (CsrRows& rows : kept_) {
      out.sets.push_back(rows.Finish(path_, NumFeatures()));
      rows = CsrRows();  // frees the arrays before the next set is copied
    }
    return out;
  }

 private:
  // Parses a line into *label and row_inner_ / row_values_; false for a line with no row.
  bool ParseRow(std::string* text, long line, double* label) {
    line_ = line;
    // svmlight allows a trailing "# info" comment; a line that is only a comment is skipped.
    const size_t hash = text->find('#');
    if (hash != std::string::npos) text->resize(hash);
    const char* p = text->c_str();
    const char* const end = p + text->size();
    while (p < end && IsSpace(*p)) ++p;
    if (p == end) return false;

    if (labels_.size() >= static_cast<size_t>(INT_MAX)) Fail("too many rows (more than INT_MAX)");
    const char* token_end = TokenEnd(p, end);
    *label = ParseLabel(p, token_end);
    p = token_end;

    row_inner_.clear();
    row_values_.clear();
    long previous = 0;
    for (;;) {
      while (p < end && IsSpace(*p)) ++p;
      if (p == end) break;
      token_end = TokenEnd(p, end);
      ParseFeature(p, token_end, &previous);
      p = token_end;
    }
    return true;
  }

  static const char* TokenEnd(const char* p, const char* end) {
    while (p < end && !IsSpace(*p)) ++p;
    return p;
  }

  double ParseLabel(const char* begin, const char* end) {
    char* parsed = nullptr;
    const double label = std::strtod(begin, &parsed);
    if (parsed != end) {
      Fail("label " + Quote(begin, end) + " is not a number (expected 'label index:value ...')");
    }
    if (!std::isfinite(label)) Fail("label " + Quote(begin, end) + " is not a finite number");
    return label;
  }

  void ParseFeature(const char* begin, const char* end, long* previous) {
    const char* colon = static_cast<const char*>(std::memchr(begin, ':', end - begin));
    if (colon == nullptr) {
      Fail("feature " + Quote(begin, end) + " has no ':' (expected index:value)");
    }
    if (colon + 1 == end) {
      Fail("truncated feature " + Quote(begin, end) + " (expected index:value)");
    }
    // svmlight's query id is not a feature; ranking data can then be read as plain rows.
    if (colon - begin == 3 && std::strncmp(begin, "qid", 3) == 0) return;

    if (*begin < '0' || *begin > '9') {
      Fail("feature index " + Quote(begin, colon) + " is not a positive integer");
    }
    char* parsed = nullptr;
    errno = 0;
    const long long index = std::strtoll(begin, &parsed, 10);
    if (parsed != colon) {
      Fail("feature index " + Quote(begin, colon) + " is not a positive integer");
    }
    if (errno == ERANGE || index > INT_MAX) {
      Fail("feature index " + Quote(begin, colon) + " is too large");
    }
    if (index == 0) Fail("feature index 0 in " + Quote(begin, end) + " (indices are 1-based)");
    if (index <= *previous) {
      Fail("feature index " + std::to_string(index) + " is not greater than the previous index " +
           std::to_string(*previous) + " (indices must be strictly increasing)");
    }
    if (declared_ > 0 && index > declared_) {
      Fail("feature index " + std::to_string(index) + " beyond the declared dimension " +
           std::to_string(declared_));
    }
    *previous = static_cast<long>(index);

    const double value = std::strtod(colon + 1, &parsed);
    if (parsed != end) {
      Fail("feature value " + Quote(colon + 1, end) + " in " + Quote(begin, end) +
           " is not a number");
    }
    if (!std::isfinite(value)) {
      Fail("feature value " + Quote(colon + 1, end) + " is not a finite number");
    }
    if (index > largest_index_) largest_index_ = static_cast<long>(index);
    // Explicit zeros carry no information in a sparse matrix; the index was still validated.
    if (value == 0) return;
    row_inner_.push_back(static_cast<int>(index - 1));
    row_values_.push_back(value);
  }

  // Appends the parsed row to `rows`.
  void Keep(double label, CsrRows* rows) {
    if (rows->inner.size() + row_inner_.size() > static_cast<size_t>(INT_MAX)) {
      Fail("too many non-zero values");
    }
    rows->inner.insert(rows->inner.end(), row_inner_.begin(), row_inner_.end());
    rows->values.insert(rows->values.end(), row_values_.begin(), row_values_.end());
    rows->outer.push_back(static_cast<int>(rows->inner.size()));
    rows->labels.push_back(label);
  }

  void CheckNotEmpty() const {
    if (labels_.empty()) {
      throw std::runtime_error(path_ + ": no samples (the file has no data lines)");
    }
  }
  int NumFeatures() const { return declared_ > 0 ? declared_ : static_cast<int>(largest_index_); }

  [[noreturn]] void Fail(const std::string& what) const {
    throw std::runtime_error(path_ + ":" + std::to_string(line_) + ": " + what);
  }

  std::string path_;
  int declared_;
  long line_ = 0;
  long largest_index_ = 0;
  RowSets* sets_;
  std::vector<double> labels_;  // every row's
  // The current row's features.
  std::vector<int> row_inner_;
  std::vector<double> row_values_;
  CsrRows all_;                // every row (without sets_)
  std::vector<CsrRows> kept_;  // one per set (with sets_)
};

}  // namespace

Dataset ReadLibsvm(const std::string& path, int declared_features) {
  TextLines lines(path);
  LibsvmParser parser(path, declared_features);
  std::string text;
  long line = 0;
  while (lines.Next(&text)) parser.ParseLine(&text, ++line);
  return parser.Finish();
}

StreamedRows ReadLibsvmRows(const std::string& path, int declared_features, RowSets* sets,
                            TextRowIndex* index) {
  TextLines lines(path);
  LibsvmParser parser(path, declared_features, sets);
  std::string text;
  long line = 0;
  while (lines.Next(&text)) {
    if (parser.ParseLine(&text, ++line) && index != nullptr) index->Add(lines.line_start(), line);
  }
  StreamedRows out = parser.FinishRows();
  if (index != nullptr) {
    index->source = path;
    index->num_features = out.table.num_features;
  }
  return out;
}

Dataset ReadLibsvmIndexed(const std::string& path, const TextRowIndex& index,
                          const std::vector<int>& rows) {
  TextLines lines(path);
  // The file's dimension as declared: every index was checked against it on the first read.
  LibsvmParser parser(path, index.num_features);
  std::string text;
  for (int row : rows) {
    lines.Seek(index.starts[row]);
    if (!lines.Next(&text)) text.clear();  // the file is shorter than when it was first read
    parser.ParseIndexedLine(&text, index.LineOf(row));
  }
  return parser.FinishIndexed();
}

}  // namespace starling::algorithms
