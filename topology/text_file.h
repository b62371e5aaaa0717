// Internal helpers shared by the line-oriented readers in topology/ (edge lists, cluster files):
// reading a file into numbered lines of fields, error locations, and the disconnected-graph
// message. Not part of the layer's interface.
#pragma once

#include <string>
#include <vector>

#include "topology/graph.h"

namespace starling::topology::internal {

struct TextLine {
  int number = 0;                   // 1-based line number in the file
  std::vector<std::string> fields;  // whitespace-separated, comments NOT yet removed
};

// Reads every non-empty line of `path`. Throws std::runtime_error "PATH: cannot read: REASON" if
// the file cannot be opened or read (a directory counts as unreadable).
std::vector<TextLine> ReadTextLines(const std::string& path);

// Drops the field that starts a comment (the first one beginning with '#') and all after it.
// A comment therefore starts at the beginning of a line or after whitespace, so '#' inside a
// field (an ipc path, a Z85 key) is data. `keep` is the index of a field that is data even if it
// begins with '#' (-1 for none); the caller decides when that applies.
void StripComment(std::vector<std::string>* fields, int keep = -1);

// Parses a whole decimal field as an int in [0, max_value]; false on anything else.
bool ParseNonNegativeInt(const std::string& field, int max_value, int* value);

// "PATH:LINE: reason" as std::runtime_error.
[[noreturn]] void FailAt(const std::string& path, int line, const std::string& reason);

// For a disconnected graph: "nodes 5, 6, 9 (and 3 more) are unreachable from node 0".
std::string DescribeUnreachable(const Graph& graph);

}  // namespace starling::topology::internal
