#include "algorithms/data/text_lines.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace starling::algorithms {

TextLines::TextLines(const std::string& path) : path_(path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw std::runtime_error(path + ": cannot open (is a directory)");
  }
  errno = 0;
  file_ = gzopen(path.c_str(), "rb");
  if (file_ == nullptr) {
    throw std::runtime_error(path + ": cannot open (" +
                             (errno != 0 ? std::strerror(errno) : "out of memory") + ")");
  }
  gzbuffer(file_, kBlock);
  block_.resize(kBlock);
}

TextLines::~TextLines() { gzclose(file_); }

bool TextLines::Next(std::string* line) {
  line->clear();
  line_start_ = block_start_ + static_cast<int64_t>(begin_);
  for (;;) {
    const char* begin = block_.data() + begin_;
    const char* newline = static_cast<const char*>(std::memchr(begin, '\n', end_ - begin_));
    if (newline != nullptr) {
      line->append(begin, newline - begin);
      begin_ = newline - block_.data() + 1;
      break;
    }
    line->append(begin, end_ - begin_);
    block_start_ += static_cast<int64_t>(end_);
    begin_ = end_ = 0;
    if (!Fill()) {
      if (line->empty()) return false;
      break;
    }
  }
  if (!line->empty() && line->back() == '\r') line->pop_back();
  return true;
}

void TextLines::Seek(int64_t offset) {
  if (offset >= block_start_ && offset <= block_start_ + static_cast<int64_t>(end_)) {
    begin_ = static_cast<size_t>(offset - block_start_);
    return;
  }
  static_assert(sizeof(z_off_t) >= sizeof(int64_t), "gzseek takes 64-bit offsets");
  // Before the first read zlib has not yet looked whether the file is gzipped; gzdirect makes it
  // look, so that gzseek on an uncompressed file seeks instead of reading up to the offset.
  gzdirect(file_);
  errno = 0;
  if (gzseek(file_, static_cast<z_off_t>(offset), SEEK_SET) != offset) {
    throw std::runtime_error(path_ + ": cannot seek to byte " + std::to_string(offset) + " (" +
                             (errno != 0 ? std::strerror(errno) : "zlib") + ")");
  }
  block_start_ = offset;
  begin_ = end_ = 0;
}

bool TextLines::Fill() {
  const int n = gzread(file_, block_.data(), kBlock);
  if (n < 0) Fail("read error");
  if (n == 0) {
    int code = Z_OK;
    gzerror(file_, &code);
    // zlib reports a gzip stream cut short as Z_BUF_ERROR at the end, not as a failed read.
    if (code == Z_BUF_ERROR) Fail("truncated gzip stream");
    if (code != Z_OK) Fail("read error");
    return false;
  }
  end_ = static_cast<size_t>(n);
  return true;
}

void TextLines::Fail(const char* what) {
  int code = Z_OK;
  const char* message = gzerror(file_, &code);
  std::string reason = code == Z_ERRNO ? std::strerror(errno) : message;
  // zlib prefixes its messages with the path; we put the path first ourselves.
  const std::string prefix = path_ + ": ";
  if (reason.compare(0, prefix.size(), prefix) == 0) reason.erase(0, prefix.size());
  throw std::runtime_error(path_ + ": " + what + " (" + reason + ")");
}

}  // namespace starling::algorithms
