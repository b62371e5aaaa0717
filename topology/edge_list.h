// Plain edge-list files: one "U V" pair per line (0-based ids), '#' comments (at the start of a
// line or after a field), blank lines ignored. An optional first line "nodes N" fixes the node
// count; otherwise it is max id + 1. A repeated edge, in either direction, counts once.
#pragma once

#include <string>

#include "topology/graph.h"

namespace starling::topology {

// Throws std::runtime_error "PATH:LINE: reason" on a malformed line (field count, an id that is
// not an integer in range, a self loop, "nodes" after the first line), and "PATH: reason" if the
// file is unreadable, has no nodes, or the graph is disconnected (naming unreachable nodes).
Graph ReadEdgeList(const std::string& path);
// Writes a "nodes N" line and then the edges in Graph::Edges() order. Throws std::runtime_error
// naming the file if it cannot be written.
void WriteEdgeList(const Graph& graph, const std::string& path);

}  // namespace starling::topology
