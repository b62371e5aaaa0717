// A whole file read with a size bound, for files that may come from elsewhere (a rendezvous
// publication, a trust file): a large file is refused, not read into memory.
#pragma once

#include <string>

namespace starling::node {

// The file's bytes if it has at most `limit`; throws std::runtime_error naming it otherwise, or
// when it cannot be read ("PATH: cannot read KIND: reason", "PATH: larger than LIMIT bytes: not
// KIND"). Reads in pieces, so a large limit costs nothing for a small file.
std::string ReadBoundedFile(const std::string& path, size_t limit, const std::string& kind);

}  // namespace starling::node
