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

// "file:48:HASH" for "file:/some/where/ring.edges": the same graph file sits at different paths
// on different hosts.
std::string TopologyTag(const std::string& spec) {
  if (spec.rfind("file:", 0) != 0) return spec;
  return "file:" + FileIdentity(spec.substr(5));
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

// What a file option's value (run_id.cc: "SIZE:HASH") means to a user.
bool IsFileOption(const std::string& name) {
  return name == "data" || name == "test_data" || name == "x0" || name == "mixing" ||
         name == "laplacian";
}

std::string ReadableFile(const std::string& value) {
  const size_t colon = value.find(':');
  if (colon == std::string::npos || colon == 0) return value;
  return "a file of " + value.substr(0, colon) + " bytes (content " + value.substr(colon + 1) + ")";
}

// Options whose 0 stands for a rule rather than a number: a refusal shows the rule, so that
// "--step 0.2 here, default at node 0" is not read as a step of zero.
std::string ZeroMeaning(const std::string& name) {
  if (name == "step") return "default";
  if (name == "loss_scale") return "default (N/M)";
  if (name == "batch") return "0 (full gradients)";
  if (name == "features") return "0 (from the data)";
  if (name == "num_classes") return "0 (the labels found)";
  return "";
}

bool IsZero(const std::string& value) {
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  return !value.empty() && end != nullptr && *end == '\0' && v == 0.0;
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
    auto show = [&](const std::string* v) {
      if (v == nullptr) return std::string("(not set)");
      if (IsFileOption(name)) return ReadableFile(*v);
      const std::string zero = ZeroMeaning(name);
      return !zero.empty() && IsZero(*v) ? zero : Readable(*v);
    };
    return OptionName(name) + " " + show(a) + " here, " + show(b) + " at " + there_name;
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

std::string OptionLinesText(const std::vector<std::string>& lines, size_t max_bytes) {
  static const std::string kMore = "...";
  std::string text;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string next = (text.empty() ? "" : ";") + lines[i];
    // Room for this line and, unless it is the last, for the marker.
    const size_t need = text.size() + next.size() + (i + 1 < lines.size() ? 1 + kMore.size() : 0);
    if (need > max_bytes) return text + (text.empty() ? "" : ";") + kMore;
    text += next;
  }
  return text;
}

std::vector<std::string> ParseOptionLinesText(const std::string& text, bool* truncated) {
  constexpr size_t kMaxLines = 256;
  *truncated = false;
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(';', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    if (line == "..." && end == text.size()) {
      *truncated = true;
      break;
    }
    if (line.find('=') == std::string::npos || line[0] == '=' || lines.size() == kMaxLines) {
      *truncated = false;
      return {};
    }
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

RunDifference ExplainRunDifference(const std::vector<std::string>& mine,
                                   const std::string& their_text, const std::string& my_name,
                                   const std::string& their_name) {
  bool truncated = false;
  const std::vector<std::string> theirs = ParseOptionLinesText(their_text, &truncated);
  std::vector<std::string> compared = mine;
  if (truncated) {
    // Only what both sides said: a line left off is not a difference.
    std::map<std::string, bool> said;
    for (const auto& [name, value] : Split(theirs)) said[name] = true;
    compared.clear();
    for (const std::string& line : mine) {
      if (said.count(line.substr(0, line.find('=')))) compared.push_back(line);
    }
  }
  if (!theirs.empty()) {
    const std::string here = FirstDifference(compared, theirs, their_name);
    if (!here.empty()) {
      return {"other run options: " + here,
              "other run options: " + FirstDifference(theirs, compared, my_name)};
    }
  }
  const std::string why =
      theirs.empty()
          ? "other run options (" + their_name + " does not say which)"
          : "the same run options, but another graph (cluster file edges), or training data "
            "whose labels or feature scaling differ";
  return {why, theirs.empty() ? "other run options (" + my_name + " could not compare them)" : why};
}

std::string AsSeenByOthers(const std::string& difference, const std::string& here_name) {
  const size_t at = difference.find(" here, ");
  if (at == std::string::npos) return difference;
  return difference.substr(0, at) + " at " + here_name + ", " + difference.substr(at + 7);
}

}  // namespace starling::node
