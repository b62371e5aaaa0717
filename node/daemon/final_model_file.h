// The final model file (--final-model: one value per line), reserved at start-up: PATH.tmp is
// opened before the network is up and kept open, so that writing the model at the end needs no
// new descriptor (a node whose descriptors were all taken by connections would fail exactly
// there and exit without a word to its neighbours). Write() fills PATH.tmp, fsyncs it and
// renames it over PATH, so a reader sees the previous file or the whole new one, never a part.
#pragma once

#include <cstdio>
#include <string>

#include "algorithms/types.h"

namespace starling::node {

class FinalModelFile {
 public:
  // An empty `path` reserves nothing (and Write does nothing). Throws std::runtime_error naming
  // PATH.tmp if it cannot be created.
  explicit FinalModelFile(const std::string& path);
  ~FinalModelFile();
  FinalModelFile(const FinalModelFile&) = delete;
  FinalModelFile& operator=(const FinalModelFile&) = delete;

  // Writes `model` (%.17g, exact for binary64) and renames it into place; once only. Throws
  // std::runtime_error naming the file if any step fails.
  void Write(const Vec& model);

 private:
  std::string path_, tmp_path_;
  std::FILE* tmp_ = nullptr;
};

}  // namespace starling::node
