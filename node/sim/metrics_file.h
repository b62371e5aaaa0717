// The JSON-lines metrics file of a starling-sim run (--metrics), shared by the optimization and
// the inference loops so that both open, write and check it the same way. Internal to node/sim/.
#pragma once

#include <fstream>
#include <string>

#include "node/report/json_line.h"

namespace starling::node {

class MetricsFile {
 public:
  // An empty `path` means no file: Write does nothing. Otherwise truncates the file; throws
  // std::runtime_error naming it if it cannot be opened.
  explicit MetricsFile(const std::string& path);

  // Appends `line` and a newline (buffered).
  void Write(const JsonLine& line);
  // Flushes; throws std::runtime_error naming the file if a write failed. Call once at the end.
  void Finish();

 private:
  std::string path_;
  std::ofstream file_;
};

}  // namespace starling::node
