#include "topology/text_file.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace starling::topology::internal {

std::vector<TextLine> ReadTextLines(const std::string& path) {
  // std::ifstream happily "opens" a directory and then reads nothing, which would surface as a
  // confusing "empty file" error; say what is wrong instead.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw std::runtime_error(path + ": cannot read: is a directory");
  }
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error(path + ": cannot read: " + std::strerror(errno));
  }
  std::vector<TextLine> lines;
  std::string text;
  int number = 0;
  while (std::getline(in, text)) {
    ++number;
    std::istringstream words(text);
    TextLine line;
    line.number = number;
    std::string field;
    while (words >> field) line.fields.push_back(field);
    if (!line.fields.empty()) lines.push_back(std::move(line));
  }
  if (in.bad()) {
    throw std::runtime_error(path + ": cannot read: I/O error after line " +
                             std::to_string(number));
  }
  return lines;
}

void StripComment(std::vector<std::string>* fields, int keep) {
  for (size_t i = 0; i < fields->size(); ++i) {
    if (static_cast<int>(i) == keep) continue;
    if ((*fields)[i].front() == '#') {
      fields->resize(i);
      return;
    }
  }
}

bool ParseNonNegativeInt(const std::string& field, int max_value, int* value) {
  if (field.empty() || field.front() < '0' || field.front() > '9') return false;  // no sign
  int parsed = 0;
  const char* end = field.data() + field.size();
  auto [ptr, ec] = std::from_chars(field.data(), end, parsed);
  if (ec != std::errc() || ptr != end || parsed > max_value) return false;
  *value = parsed;
  return true;
}

void FailAt(const std::string& path, int line, const std::string& reason) {
  throw std::runtime_error(path + ":" + std::to_string(line) + ": " + reason);
}

std::string DescribeUnreachable(const Graph& graph) {
  const int n = graph.num_nodes();
  std::vector<char> seen(static_cast<size_t>(n), 0);
  std::vector<int> stack;
  if (n > 0) {
    seen[0] = 1;
    stack.push_back(0);
  }
  while (!stack.empty()) {
    const int u = stack.back();
    stack.pop_back();
    for (int v : graph.Neighbors(u)) {
      if (!seen[v]) {
        seen[v] = 1;
        stack.push_back(v);
      }
    }
  }
  constexpr int kShown = 5;  // enough to locate the problem without flooding the line
  std::vector<int> unreachable;
  for (int u = 0; u < n; ++u) {
    if (!seen[u]) unreachable.push_back(u);
  }
  std::string text = unreachable.size() == 1 ? "node " : "nodes ";
  for (size_t i = 0; i < unreachable.size() && i < kShown; ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(unreachable[i]);
  }
  if (unreachable.size() > kShown) {
    text += " (and " + std::to_string(unreachable.size() - kShown) + " more)";
  }
  text += unreachable.size() == 1 ? " is" : " are";
  text += " unreachable from node 0";
  return text;
}

}  // namespace starling::topology::internal
