// Lines of a text file, gzipped or not, for the text readers (LIBSVM, CSV). Internal to
// algorithms/.
#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdint>
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
  // Where the line Next last returned starts: its byte offset in the text (the uncompressed
  // bytes of a gzipped file).
  int64_t line_start() const { return line_start_; }
  // Makes the line starting at byte `offset` of the text the next one. An offset inside the
  // block read last costs nothing; beyond it, an uncompressed file is seeked (lseek), a gzipped
  // one decompressed up to it without looking at the bytes (zlib's gzseek); backwards, a gzipped
  // file is decompressed again from its start.
  void Seek(int64_t offset);

 private:
  static constexpr unsigned kBlock = 1 << 16;

  // Refills the block; false at the end of the file.
  bool Fill();
  [[noreturn]] void Fail(const char* what);

  std::string path_;
  gzFile file_ = nullptr;
  std::vector<char> block_;
  int64_t block_start_ = 0;  // the text's offset of block_[0]
  size_t begin_ = 0;
  size_t end_ = 0;
  int64_t line_start_ = 0;
};

}  // namespace starling::algorithms
