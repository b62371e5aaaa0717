// ReadDataset: format dispatch, including "auto" detection by file name and content.

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "algorithms/data/readers.h"
#include "algorithms/data/row_sets.h"

namespace starling::algorithms {

namespace {

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The format the file name announces, or "" when it does not tell (a9a has no extension).
std::string FormatFromName(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (EndsWith(name, ".gz")) name.resize(name.size() - 3);
  if (EndsWith(name, "idx3-ubyte")) return "idx";
  if (EndsWith(name, ".csv")) return "csv";
  if (EndsWith(name, ".svm") || EndsWith(name, ".libsvm") || EndsWith(name, ".svmlight")) {
    return "libsvm";
  }
  return "";
}

// The format the first bytes show: the IDX images magic number, or else text whose first data
// line has "index:value" pairs (LIBSVM) or commas (CSV). Files are looked at through gzread, so a
// gzipped file is judged by its content.
std::string FormatFromContent(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw std::runtime_error(path + ": cannot open (is a directory)");
  }
  errno = 0;
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    throw std::runtime_error(path + ": cannot open (" +
                             (errno != 0 ? std::strerror(errno) : "out of memory") + ")");
  }
  std::string head(1 << 16, '\0');
  const int n = gzread(file, head.data(), static_cast<unsigned>(head.size()));
  gzclose(file);
  // A read error is left for the reader to report: it says more than we could here.
  head.resize(n > 0 ? static_cast<size_t>(n) : 0);

  if (head.size() >= 4 && head.compare(0, 4, std::string("\0\0\x08\x03", 4)) == 0) return "idx";
  if (head.size() >= 4 && head.compare(0, 4, std::string("\0\0\x08\x01", 4)) == 0) {
    throw std::runtime_error(path +
                             ": is an IDX labels file; give the images file (...-images-idx3-ubyte"
                             "[.gz]), whose labels file is found by name");
  }
  size_t begin = 0;
  while (begin < head.size()) {
    size_t end = head.find('\n', begin);
    if (end == std::string::npos) end = head.size();
    const std::string line = head.substr(begin, end - begin);
    begin = end + 1;
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    if (line.find(':') != std::string::npos) return "libsvm";
    if (line.find(',') != std::string::npos) return "csv";
    break;
  }
  // A label-only first line, or no data line at all: the LIBSVM reader reports what it finds.
  return "libsvm";
}

}  // namespace

std::string ResolveDataFormat(const std::string& path, const std::string& format) {
  if (format != "auto") return format;
  const std::string by_name = FormatFromName(path);
  return by_name.empty() ? FormatFromContent(path) : by_name;
}

namespace {

// The format of `path`, with the checks ReadDataset makes before it reads.
std::string CheckedFormat(const std::string& path, const std::string& format,
                          const CsvColumns& csv) {
  const std::string resolved = ResolveDataFormat(path, format);
  if (csv.node >= 0 && resolved != "csv") {
    throw std::invalid_argument(path + ": a node column needs CSV data, but this is " + resolved);
  }
  if (resolved != "libsvm" && resolved != "idx" && resolved != "csv") {
    throw std::invalid_argument("unknown data format '" + format +
                                "' (expected libsvm, idx, csv or auto)");
  }
  return resolved;
}

// Dense formats fix their own dimension; a declared one can only be checked against it.
void CheckDeclaredFeatures(const std::string& path, int found, int declared_features) {
  if (declared_features > 0 && found != declared_features) {
    throw std::runtime_error(path + ": has " + std::to_string(found) + " features but " +
                             std::to_string(declared_features) + " were declared");
  }
}

// ReadDatasetRows, or its table alone when `sets` is null; *index (if not null) gets where a text
// file's rows start.
StreamedRows ReadRows(const std::string& path, const std::string& format, int declared_features,
                      const CsvColumns& csv, const std::vector<std::vector<int>>* row_sets,
                      TextRowIndex* index = nullptr) {
  const std::string resolved = CheckedFormat(path, format, csv);
  const std::vector<std::vector<int>> none;
  RowSets sets(row_sets != nullptr ? row_sets : &none);
  if (index != nullptr) *index = TextRowIndex();
  if (resolved == "libsvm") return ReadLibsvmRows(path, declared_features, &sets, index);
  StreamedRows rows = resolved == "idx" ? ReadIdxRows(path, IdxLabelsPathFor(path),
                                                      row_sets != nullptr ? &sets : nullptr)
                                        : ReadCsvRows(path, csv.label, csv.node, &sets, index);
  CheckDeclaredFeatures(path, rows.table.num_features, declared_features);
  return rows;
}

}  // namespace

StreamedRows ReadDatasetRows(const std::string& path, const std::string& format,
                             int declared_features, const CsvColumns& csv,
                             const std::vector<std::vector<int>>& row_sets) {
  return ReadRows(path, format, declared_features, csv, &row_sets);
}

void ReadDatasetRowsInTurn(const std::string& path, const std::string& format,
                           int declared_features, const CsvColumns& csv,
                           const std::vector<std::vector<int>>& row_sets,
                           const std::function<void(int, Dataset)>& use,
                           const TextRowIndex* index) {
  const std::string resolved = CheckedFormat(path, format, csv);
  if (resolved != "idx") {
    RowSets sets(&row_sets);  // checks that each set is ascending
    TextRowIndex own;
    if (index == nullptr) {
      ReadRows(path, format, declared_features, csv, nullptr, &own);
      index = &own;
    } else if (index->source != path) {
      throw std::invalid_argument(path + ": the row index is of " + index->source);
    }
    for (const std::vector<int>& set : row_sets) {
      if (!set.empty() && set.back() >= index->rows()) {
        throw std::out_of_range(path + ": row " + std::to_string(set.back()) +
                                " out of range (the data set has " + std::to_string(index->rows()) +
                                " rows)");
      }
    }
    for (size_t k = 0; k < row_sets.size(); ++k) {
      use(static_cast<int>(k),
          resolved == "libsvm" ? ReadLibsvmIndexed(path, *index, row_sets[k])
                               : ReadCsvIndexed(path, csv.label, csv.node, *index, row_sets[k]));
    }
    return;
  }
  RowSets sets(&row_sets);
  Vec labels;
  int pixels = 0;
  std::vector<IdxImages> compact =
      ReadIdxImageSets(path, IdxLabelsPathFor(path), &sets, &labels, &pixels);
  CheckDeclaredFeatures(path, pixels, declared_features);
  for (size_t k = 0; k < compact.size(); ++k) {
    Dataset rows = IdxImagesToDataset(compact[k], nullptr);
    compact[k] = IdxImages();
    use(static_cast<int>(k), std::move(rows));
  }
}

Dataset ReadDatasetLabels(const std::string& path, const std::string& format, int declared_features,
                          const CsvColumns& csv, TextRowIndex* index) {
  return ReadRows(path, format, declared_features, csv, nullptr, index).table;
}

Dataset ReadDataset(const std::string& path, const std::string& format, int declared_features,
                    const CsvColumns& csv) {
  const std::string resolved = ResolveDataFormat(path, format);
  if (csv.node >= 0 && resolved != "csv") {
    throw std::invalid_argument(path + ": a node column needs CSV data, but this is " + resolved);
  }
  if (resolved == "libsvm") return ReadLibsvm(path, declared_features);

  Dataset data;
  if (resolved == "idx") {
    data = ReadIdx(path, IdxLabelsPathFor(path));
  } else if (resolved == "csv") {
    data = ReadCsv(path, csv.label, csv.node);
  } else {
    throw std::invalid_argument("unknown data format '" + format +
                                "' (expected libsvm, idx, csv or auto)");
  }
  // Dense formats fix their own dimension; a declared one can only be checked against it.
  if (declared_features > 0 && data.num_features != declared_features) {
    throw std::runtime_error(path + ": has " + std::to_string(data.num_features) +
                             " features but " + std::to_string(declared_features) +
                             " were declared");
  }
  return data;
}

}  // namespace starling::algorithms
