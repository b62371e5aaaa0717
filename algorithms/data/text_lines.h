// Lines of a text file, gzipped or not, for the text readers (LIBSVM, CSV). Internal to
// algorithms/.
#pragma once

#include <zlib.h>

#include <cstddef>
#include <string>
#include <vector>

namespace starling::algorithms {

// zlib's gzread passes uncompressed files through. Reads in fixed-size blocks, so memory
// follows the data actually present, and handles any bytes (including NUL) without crashing.
// Errors are std::runtime_error "PATH: what (reason)".
class TextLines {
 public:
  explicit TextLines(const std::string& path);
  ~TextLines();
  TextLines(const TextLines&) = delete;
  TextLines& operator=(const TextLines&) = delete;

  // The next line, without "\n" or "\r\n", into *line; false at the end of the file.
  bool Next(std::string* line);

 private:
  static constexpr unsigned kBlock = 1 << 16;

  // Refills the block; false at the end of the file.
  bool Fill();
  [[noreturn]] void Fail(const char* what);

  std::string path_;
  gzFile file_ = nullptr;
  std::vector<char> block_;
  size_t begin_ = 0;
  size_t end_ = 0;
};

}  // namespace starling::algorithms
