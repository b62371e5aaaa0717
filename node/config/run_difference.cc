#include "node/config/run_difference.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "net/envelope.h"
#include "node/config/run_id.h"
#include "topology/graph.h"

namespace starling::node {

namespace {

// "file:ring.edges:48" for "file:/some/where/ring.edges": the same graph file sits at different
// paths on different hosts.
std::string TopologyTag(const std::string& spec) {
  if (spec.rfind("file:", 0) != 0) return spec;
  const std::string path = spec.substr(5);
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return "file:" + std::filesystem::path(path).filename().string() + ":" +
         (ec ? std::string("?") : std::to_string(size));
}

// name -> value of "name=value" lines, with their order.
std::vector<std::pair<std::string, std::string>> Split(const std::vector<std::string>& lines) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& line : lines) {
    const size_t eq = line.find('=');
    out.emplace_back(line.substr(0, eq), eq == std::string::npos ? "" : line.substr(eq + 1));
  }
  return out;
}

// A value as a user wrote it: the canonical text spells numbers as exact hexadecimal floats
// ("0x1.999999999999ap-4"), shown here as the shortest decimal that reads back the same (0.1).
std::string Readable(const std::string& value) {
  const size_t start = value[0] == '-' ? 1 : 0;
  if (value.compare(start, 2, "0x") != 0) return value;
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (end == nullptr || *end != '\0') return value;
  char text[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, v);
    if (std::strtod(text, nullptr) == v) break;
  }
  return text;
}

std::string OptionName(std::string name) {
  for (char& c : name) {
    if (c == '_') c = '-';
  }
  return "--" + name;
}

}  // namespace

std::vector<std::string> JoinOptionLines(const RunConfig& config, int nodes) {
  RunConfig c = config;
  c.nodes = nodes;
  std::istringstream text(CanonicalRunText(c, topology::Graph(0)));
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(text, line)) {
    if (line.rfind("edges=", 0) == 0) continue;
    lines.push_back(line);
  }
  lines.push_back("topology=" + TopologyTag(c.topology));
  return lines;
}

uint64_t OptionLinesFingerprint(const std::vector<std::string>& lines) {
  std::string joined;
  for (const std::string& line : lines) joined += line + "\n";
  return net::RunIdOf(joined);
}

std::string FirstDifference(const std::vector<std::string>& here,
                            const std::vector<std::string>& there, const std::string& there_name) {
  const auto mine = Split(here);
  const auto theirs = Split(there);
  std::map<std::string, std::string> their_values(theirs.begin(), theirs.end());
  std::map<std::string, std::string> my_values(mine.begin(), mine.end());
  auto describe = [&](const std::string& name, const std::string* a, const std::string* b) {
    return OptionName(name) + " " + (a ? Readable(*a) : "(not set)") + " here, " +
           (b ? Readable(*b) : "(not set)") + " at " + there_name;
  };
  for (const auto& [name, value] : mine) {
    auto it = their_values.find(name);
    if (it == their_values.end()) return describe(name, &value, nullptr);
    if (it->second != value) return describe(name, &value, &it->second);
  }
  for (const auto& [name, value] : theirs) {
    if (my_values.count(name) == 0) return describe(name, nullptr, &value);
  }
  return "";
}

}  // namespace starling::node
