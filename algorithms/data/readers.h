// Data set readers. Every error is a std::runtime_error whose message starts with "PATH:LINE:"
// (text formats) or "PATH:" (binary formats) and says what is wrong; a file that cannot be opened
// gives "PATH: cannot open (reason)", and a file with no samples is an error. Every reader also
// reads gzipped files (zlib detects them by their magic bytes). Numbers are parsed in the C locale.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/data/dataset.h"

namespace starling::algorithms {

// LIBSVM / svmlight text: "label index:value ..." with 1-based increasing indices. Produces a
// sparse data set. num_features = declared_features if > 0 (an index beyond it is an error),
// otherwise the largest index seen. Labels and values are any finite doubles ("+1", "-1", "3.5");
// NaN and Inf are errors. Blank lines and '#' comments are skipped, svmlight "qid:N" tokens are
// ignored, a line with a label only is a row of zeros, and explicit 0 values are not stored.
Dataset ReadLibsvm(const std::string& path, int declared_features = 0);

// IDX (MNIST / Fashion-MNIST), gzipped or not (detected from the magic bytes). `images` is an
// idx3 uint8 file, `labels` an idx1 uint8 file with the same count. Pixels are scaled by 1/255.
Dataset ReadIdx(const std::string& images, const std::string& labels);
// An IDX images file as its bytes: what ReadIdx reads, before each pixel becomes a double. A
// daemon keeps Fashion-MNIST this way (47 MB instead of 376 MB of doubles) and converts only the
// rows of its own shard (training_rows.h).
struct IdxImages {
  std::string source;          // the images file, for messages
  int pixels = 0;              // features per image (rows x columns)
  std::vector<uint8_t> bytes;  // image after image, pixels in file order
  Vec labels;                  // one per image, as read
  int count() const { return static_cast<int>(labels.size()); }
};
// Reads and checks both files as ReadIdx does (same errors).
IdxImages ReadIdxImages(const std::string& images, const std::string& labels);
// Images `rows` (in that order; every image when null) as a dense data set, pixels scaled by
// 1/255: ReadIdx is IdxImagesToDataset(ReadIdxImages(...), nullptr), so both give the same
// doubles. Throws std::out_of_range for a row outside [0, count()).
Dataset IdxImagesToDataset(const IdxImages& images, const std::vector<int>* rows);

// The labels file that goes with an images file: "...-images-idx3-ubyte[.gz]" ->
// "...-labels-idx1-ubyte[.gz]" (also "images.idx3-ubyte" -> "labels.idx1-ubyte", as some MNIST
// copies are named). Throws std::runtime_error if the name does not follow that pattern.
std::string IdxLabelsPathFor(const std::string& images);

// CSV: one sample per line, label in column `label_column` (0-based), all other columns are
// features. A first line that does not parse as numbers is taken as a header and skipped. Blank
// lines and lines starting with '#' are skipped; fields may be double-quoted. Every other line
// must have the first line's column count and finite numbers only. Columns in messages are
// counted from 0, like label_column. With node_column >= 0 (pre-partitioned data), that column
// holds the 0-based id of the node each row belongs to: it must be a non-negative integer, is
// stored in Dataset::node_of_row and is not a feature.
Dataset ReadCsv(const std::string& path, int label_column = 0, int node_column = -1);

// Which CSV columns are not features (ignored by the other formats).
struct CsvColumns {
  int label = 0;
  int node = -1;  // -1: none
};

// The format ReadDataset reads `path` as: `format` itself, or for "auto" the one the name or the
// content shows (below). Throws std::runtime_error for a file that cannot be opened.
std::string ResolveDataFormat(const std::string& path, const std::string& format);

// Reads by format name: "libsvm", "idx" (path = images file), "csv" (label in column 0), or
// "auto": by extension (".csv", ".svm"/".libsvm"/".svmlight", "...idx3-ubyte", each optionally
// ".gz"), else by content (the IDX images magic number; else text whose first data line has a
// ':' is LIBSVM and one with a ',' is CSV; else LIBSVM). Throws std::invalid_argument for an
// unknown format. For IDX and CSV, declared_features > 0 must equal the file's feature count.
// A node column given in `csv` is an error for the other formats.
Dataset ReadDataset(const std::string& path, const std::string& format, int declared_features = 0,
                    const CsvColumns& csv = {});

// Streaming reads, for a process that keeps only some rows of the file (a daemon and its
// shard): memory follows the rows kept, not the file. Gzipped files stream too.
struct StreamedRows {
  // The file as ReadDataset reads it, without features: every label, the node column (CSV),
  // num_features, is_sparse and source. `dense` and `sparse` are empty.
  Dataset table;
  // sets[k] is ReadDataset(same arguments).Subset(row_sets[k]), bit for bit.
  std::vector<Dataset> sets;
};
// Where every row of a text file (LIBSVM, CSV) starts, recorded while the file is checked
// (ReadDatasetLabels), so that a later read parses only the lines of the rows it keeps: 8 bytes
// a row, plus 16 for every row whose line does not follow the previous row's (after a blank,
// comment or header line). Empty for IDX.
struct TextRowIndex {
  std::string source;                           // the file
  std::vector<int64_t> starts;                  // row r's line starts at byte starts[r] of the text
  std::vector<std::pair<int, long>> line_runs;  // (row, its line number), as above
  int num_features = 0;                         // the file's
  // CSV: the column count, the line that fixed it and whether that line is a header.
  int columns = 0;
  long columns_line = 0;
  bool header = false;

  int rows() const { return static_cast<int>(starts.size()); }
  // Records the next row: its line starts at byte `start` and is line `line` (1-based).
  void Add(int64_t start, long line);
  // The line number of `row` (in [0, rows())), for messages.
  long LineOf(int row) const;
};
// One pass over the file, keeping the features of the rows in `row_sets` (each strictly
// ascending; std::invalid_argument otherwise). Same formats, checks and errors as ReadDataset:
// every line of a text file is parsed and checked, kept or not; a row beyond the file is
// std::out_of_range as in Dataset::Subset.
StreamedRows ReadDatasetRows(const std::string& path, const std::string& format,
                             int declared_features, const CsvColumns& csv,
                             const std::vector<std::vector<int>>& row_sets);
// ReadDatasetRows's sets handed to `use` one at a time, in order (use(k, rows of set k)), each
// made only after `use` returned for the one before: a caller that drops a set before taking the
// next never holds two. Same checks and errors as ReadDatasetRows. IDX is read in one pass, the
// sets held as bytes until their turn. A text file is parsed in full once (to check every line
// and find where the rows start; skipped when `index` is given: ReadDatasetLabels's for the same
// path, format and columns), then for each set only its rows' lines are read and parsed, from
// their offsets: an uncompressed file is seeked, a gzipped one decompressed again per set
// (zlib's gzseek, which does not look at the skipped bytes).
void ReadDatasetRowsInTurn(const std::string& path, const std::string& format,
                           int declared_features, const CsvColumns& csv,
                           const std::vector<std::vector<int>>& row_sets,
                           const std::function<void(int, Dataset)>& use,
                           const TextRowIndex* index = nullptr);
// ReadDatasetRows(...).table alone. For IDX, the images file's header and the labels file are
// read, not the pixels (ReadDatasetRows checks those); text files are parsed in full, and with
// `index` non-null, *index gets where their rows start (for ReadDatasetRowsInTurn).
Dataset ReadDatasetLabels(const std::string& path, const std::string& format, int declared_features,
                          const CsvColumns& csv, TextRowIndex* index = nullptr);

}  // namespace starling::algorithms
