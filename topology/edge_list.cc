#include "topology/edge_list.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "topology/text_file.h"

namespace starling::topology {
namespace {

// Far above any run this project makes; it turns a typo like "0 70000000" into a clear error
// instead of a huge allocation.
constexpr int kMaxNodes = 1000000;

}  // namespace

Graph ReadEdgeList(const std::string& path) {
  std::vector<internal::TextLine> lines = internal::ReadTextLines(path);
  int declared_nodes = -1;  // from a "nodes N" line, if any
  bool seen_edge_or_count = false;
  std::vector<std::pair<int, int>> edges;
  int max_id = -1;
  for (internal::TextLine& line : lines) {
    internal::StripComment(&line.fields);
    const std::vector<std::string>& f = line.fields;
    if (f.empty()) continue;
    if (f[0] == "nodes") {
      if (seen_edge_or_count) {
        internal::FailAt(path, line.number, "'nodes N' must be the first line");
      }
      seen_edge_or_count = true;
      if (f.size() != 2) {
        internal::FailAt(path, line.number,
                         "expected 'nodes N', got " + std::to_string(f.size()) + " fields");
      }
      if (!internal::ParseNonNegativeInt(f[1], kMaxNodes, &declared_nodes) || declared_nodes == 0) {
        internal::FailAt(
            path, line.number,
            "node count '" + f[1] + "' is not an integer in 1.." + std::to_string(kMaxNodes));
      }
      continue;
    }
    seen_edge_or_count = true;
    if (f.size() != 2) {
      internal::FailAt(path, line.number,
                       "expected 'U V', got " + std::to_string(f.size()) + " fields");
    }
    const int limit = declared_nodes > 0 ? declared_nodes - 1 : kMaxNodes - 1;
    int ends[2];
    for (int k = 0; k < 2; ++k) {
      if (!internal::ParseNonNegativeInt(f[k], limit, &ends[k])) {
        internal::FailAt(path, line.number,
                         "node id '" + f[k] + "' is not an integer in 0.." + std::to_string(limit));
      }
    }
    if (ends[0] == ends[1]) {
      internal::FailAt(path, line.number, "self loop on node " + f[0]);
    }
    edges.emplace_back(ends[0], ends[1]);
    max_id = std::max({max_id, ends[0], ends[1]});
  }
  const int n = declared_nodes > 0 ? declared_nodes : max_id + 1;
  if (n == 0) throw std::runtime_error(path + ": no edges and no 'nodes N' line");
  Graph graph(n);
  for (const auto& [u, v] : edges) graph.AddEdge(u, v);  // repeats (incl. "V U") are ignored
  if (!graph.IsConnected()) {
    throw std::runtime_error(path +
                             ": graph is disconnected: " + internal::DescribeUnreachable(graph));
  }
  return graph;
}

void WriteEdgeList(const Graph& graph, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error(path + ": cannot open for writing");
  // "nodes N" keeps the node count even when the highest ids have no edges.
  out << "# Starling edge list: " << graph.num_nodes() << " nodes, " << graph.num_edges()
      << " edges\n";
  out << "nodes " << graph.num_nodes() << "\n";
  for (const auto& [u, v] : graph.Edges()) out << u << " " << v << "\n";
  out.close();
  if (!out) throw std::runtime_error(path + ": write failed");
}

}  // namespace starling::topology
