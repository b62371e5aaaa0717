#include "node/report/metrics_header.h"

namespace starling::node {

JsonLine MetricsHeaderLine(const std::string& tool,
                           const std::vector<std::pair<std::string, std::string>>& fields) {
  JsonLine line;
  line.Add("header", tool);
  for (const auto& [key, value] : fields) line.Add(key, value);
  return line;
}

}  // namespace starling::node
