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

class LibsvmParser {
 public:
  LibsvmParser(const std::string& path, int declared) : path_(path), declared_(declared) {
    outer_.push_back(0);
  }

  void ParseLine(std::string* text, long line) {
    line_ = line;
    // svmlight allows a trailing "# info" comment; a line that is only a comment is skipped.
    const size_t hash = text->find('#');
    if (hash != std::string::npos) text->resize(hash);
    const char* p = text->c_str();
    const char* const end = p + text->size();
    while (p < end && IsSpace(*p)) ++p;
    if (p == end) return;

    if (labels_.size() >= static_cast<size_t>(INT_MAX)) Fail("too many rows (more than INT_MAX)");
    const char* token_end = TokenEnd(p, end);
    labels_.push_back(ParseLabel(p, token_end));
    p = token_end;

    long previous = 0;
    for (;;) {
      while (p < end && IsSpace(*p)) ++p;
      if (p == end) break;
      token_end = TokenEnd(p, end);
      ParseFeature(p, token_end, &previous);
      p = token_end;
    }
    outer_.push_back(static_cast<int>(inner_.size()));
  }

  Dataset Finish() {
    if (labels_.empty()) {
      throw std::runtime_error(path_ + ": no samples (the file has no data lines)");
    }
    Dataset data;
    data.is_sparse = true;
    data.source = path_;
    data.num_features = declared_ > 0 ? declared_ : static_cast<int>(largest_index_);
    const Eigen::Index rows = static_cast<Eigen::Index>(labels_.size());
    data.labels = Eigen::Map<const Vec>(labels_.data(), rows);
    data.sparse = Eigen::Map<const SparseMatrix>(rows, data.num_features,
                                                 static_cast<Eigen::Index>(inner_.size()),
                                                 outer_.data(), inner_.data(), values_.data());
    return data;
  }

 private:
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
    if (inner_.size() >= static_cast<size_t>(INT_MAX)) Fail("too many non-zero values");
    inner_.push_back(static_cast<int>(index - 1));
    values_.push_back(value);
  }

  [[noreturn]] void Fail(const std::string& what) const {
    throw std::runtime_error(path_ + ":" + std::to_string(line_) + ": " + what);
  }

  std::string path_;
  int declared_;
  long line_ = 0;
  long largest_index_ = 0;
  // The CSR arrays of the result, built row by row.
  std::vector<int> outer_;
  std::vector<int> inner_;
  std::vector<double> values_;
  std::vector<double> labels_;
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

}  // namespace starling::algorithms
