// The reject counts a daemon states in its exit line ("node K done (exit C): ... rejected N:
// a=1 b=2"), for tests that attack a live daemon and check what it counted.
#pragma once

#include <cstdint>
#include <map>
#include <regex>
#include <string>

namespace starling::testing {

// reason -> count from the exit line in `log`; empty if there is no exit line with rejects.
inline std::map<std::string, uint64_t> RejectSummary(const std::string& log) {
  std::map<std::string, uint64_t> counts;
  std::smatch m;
  if (!std::regex_search(log, m, std::regex(R"(done \(exit \d+\).*rejected \d+: ([^\n]*))"))) {
    return counts;
  }
  const std::string list = m[1];
  const std::regex item(R"(([a-z_]+)=(\d+))");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), item); it != std::sregex_iterator();
       ++it) {
    counts[(*it)[1]] = std::stoull((*it)[2]);
  }
  return counts;
}

}  // namespace starling::testing
