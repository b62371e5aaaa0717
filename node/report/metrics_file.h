// A JSON-lines metrics file (--metrics): opened, written and checked the same way wherever a
// run writes one (the simulator's optimization and inference loops).
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
