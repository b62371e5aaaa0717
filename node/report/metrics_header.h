// The first line of a metrics file: {"header": TOOL, key: value, ...}. It has no "iter", which is
// how every reader of the metrics points tells it apart (and skips it).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "node/report/json_line.h"

namespace starling::node {

JsonLine MetricsHeaderLine(const std::string& tool,
                           const std::vector<std::pair<std::string, std::string>>& fields);

}  // namespace starling::node
