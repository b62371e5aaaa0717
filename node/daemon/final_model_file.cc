#include "node/daemon/final_model_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace starling::node {

FinalModelFile::FinalModelFile(const std::string& path) : path_(path), tmp_path_(path + ".tmp") {
  if (path_.empty()) return;
  tmp_ = std::fopen(tmp_path_.c_str(), "we");  // "e": O_CLOEXEC
  if (tmp_ == nullptr) {
    throw std::runtime_error(tmp_path_ +
                             ": cannot create the final model file: " + std::strerror(errno));
  }
}

FinalModelFile::~FinalModelFile() {
  if (tmp_ != nullptr) {
    std::fclose(tmp_);
    std::remove(tmp_path_.c_str());  // reserved, never written: the node did not finish
  }
}

void FinalModelFile::Write(const Vec& model) {
  if (path_.empty()) return;
  if (tmp_ == nullptr) throw std::runtime_error(path_ + ": the final model was written already");
  std::FILE* f = tmp_;
  tmp_ = nullptr;
  bool ok = true;
  for (Eigen::Index k = 0; k < model.size() && ok; ++k)
    ok = std::fprintf(f, "%.17g\n", model[k]) > 0;
  ok = ok && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) {
    throw std::runtime_error(tmp_path_ +
                             ": writing the final model failed: " + std::strerror(errno));
  }
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    throw std::runtime_error(path_ +
                             ": cannot rename the final model into place: " + std::strerror(errno));
  }
}

}  // namespace starling::node
