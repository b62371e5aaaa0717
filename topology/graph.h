// An undirected simple graph over nodes 0..n-1 with sorted adjacency lists.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace starling::topology {

class Graph {
 public:
  Graph() = default;
  // A graph with num_nodes nodes and no edges; a negative count throws std::invalid_argument.
  explicit Graph(int num_nodes);

  int num_nodes() const { return static_cast<int>(adjacency_.size()); }
  int num_edges() const { return num_edges_; }
  // Adds the undirected edge {u, v}. Self-loops and out-of-range ids throw std::invalid_argument;
  // a repeated edge is ignored.
  void AddEdge(int u, int v);
  // False for ids out of range (never throws).
  bool HasEdge(int u, int v) const;
  // Neighbours of u in strictly ascending order.
  const std::vector<int>& Neighbors(int u) const { return adjacency_[u]; }
  int Degree(int u) const { return static_cast<int>(adjacency_[u].size()); }
  int MaxDegree() const;
  // Edges {u, v} with u < v, in lexicographic order.
  std::vector<std::pair<int, int>> Edges() const;
  // Graphs with 0 or 1 nodes count as connected.
  bool IsConnected() const;
  // The largest number of hops between two nodes (0 for fewer than two nodes); of a
  // disconnected graph, the largest within one of its components.
  int Diameter() const;

 private:
  std::vector<std::vector<int>> adjacency_;
  int num_edges_ = 0;
};

}  // namespace starling::topology
