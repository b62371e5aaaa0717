#include "node/report/metrics_file.h"

#include <stdexcept>

namespace starling::node {

MetricsFile::MetricsFile(const std::string& path) : path_(path) {
  if (path_.empty()) return;
  file_.open(path_, std::ios::trunc);
  if (!file_) throw std::runtime_error(path_ + ": cannot open metrics file");
}

void MetricsFile::Write(const JsonLine& line) {
  if (file_.is_open()) file_ << line.str() << '\n';
}

void MetricsFile::Finish() {
  if (!file_.is_open()) return;
  file_.flush();
  if (!file_) throw std::runtime_error(path_ + ": write failed");
}

}  // namespace starling::node
