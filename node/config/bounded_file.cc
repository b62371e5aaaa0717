#include "node/config/bounded_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace starling::node {

std::string ReadBoundedFile(const std::string& path, size_t limit, const std::string& kind) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read " + kind + ": " + std::strerror(errno));
  std::string text;
  char buffer[4096];
  while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > limit) {
      throw std::runtime_error(path + ": larger than " + std::to_string(limit) + " bytes: not " +
                               kind);
    }
  }
  if (in.bad()) throw std::runtime_error(path + ": read failed");
  return text;
}

}  // namespace starling::node
