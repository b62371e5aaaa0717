#include "node/config/slow_nodes.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>
#include <stdexcept>

namespace starling::node {

namespace {

[[noreturn]] void Fail(const std::string& item, const std::string& why) {
  throw std::invalid_argument("--slow-node '" + item + "': " + why);
}

}  // namespace

std::vector<std::pair<int, double>> ParseSlowNodes(const std::string& spec) {
  std::vector<std::pair<int, double>> items;
  if (spec.empty()) return items;
  if (spec.back() == ',') Fail(spec, "a trailing ','");
  std::set<int> seen;
  std::stringstream list(spec);
  std::string item;
  while (std::getline(list, item, ',')) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == item.size()) {
      Fail(item, "expected NODE:FACTOR, e.g. 3:4 (node 3 four times slower)");
    }
    const std::string id_text = item.substr(0, colon), factor_text = item.substr(colon + 1);
    char* end = nullptr;
    errno = 0;
    const long id = std::strtol(id_text.c_str(), &end, 10);
    if (*end != '\0' || errno != 0 || id < 0 || id > INT_MAX) {
      Fail(item, "NODE '" + id_text + "' is not a node id (an integer >= 0)");
    }
    end = nullptr;
    const double factor = std::strtod(factor_text.c_str(), &end);
    if (*end != '\0' || !(factor >= 1) || std::isinf(factor)) {
      Fail(item, "FACTOR '" + factor_text + "' must be a finite number >= 1");
    }
    if (!seen.insert(static_cast<int>(id)).second) Fail(item, "node " + id_text + " given twice");
    items.emplace_back(static_cast<int>(id), factor);
  }
  return items;
}

std::vector<double> SlowFactors(const std::string& spec, int nodes) {
  std::vector<double> factors(nodes > 0 ? nodes : 0, 1.0);
  for (const auto& [id, factor] : ParseSlowNodes(spec)) {
    if (id >= nodes) {
      Fail(spec, "node " + std::to_string(id) + " is not in 0.." + std::to_string(nodes - 1) +
                     " (the run has " + std::to_string(nodes) + " nodes)");
    }
    factors[id] = factor;
  }
  return factors;
}

bool AnySlow(const std::vector<double>& factors) {
  for (double f : factors) {
    if (f != 1.0) return true;
  }
  return false;
}

}  // namespace starling::node
