#include "topology/graph.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace starling::topology {

Graph::Graph(int num_nodes) {
  if (num_nodes < 0) {
    throw std::invalid_argument("Graph: negative node count " + std::to_string(num_nodes));
  }
  adjacency_.resize(static_cast<size_t>(num_nodes));
}

void Graph::AddEdge(int u, int v) {
  const int n = num_nodes();
  if (u < 0 || u >= n || v < 0 || v >= n) {
    throw std::invalid_argument("Graph::AddEdge: edge {" + std::to_string(u) + ", " +
                                std::to_string(v) + "} outside nodes 0.." + std::to_string(n - 1));
  }
  if (u == v) {
    throw std::invalid_argument("Graph::AddEdge: self loop on node " + std::to_string(u));
  }
  std::vector<int>& nu = adjacency_[u];
  auto it = std::lower_bound(nu.begin(), nu.end(), v);
  if (it != nu.end() && *it == v) return;  // Repeated edge: the graph stays simple.
  nu.insert(it, v);
  std::vector<int>& nv = adjacency_[v];
  nv.insert(std::lower_bound(nv.begin(), nv.end(), u), u);
  ++num_edges_;
}

bool Graph::HasEdge(int u, int v) const {
  if (u < 0 || u >= num_nodes() || v < 0 || v >= num_nodes()) return false;
  const std::vector<int>& nu = adjacency_[u];
  return std::binary_search(nu.begin(), nu.end(), v);
}

int Graph::MaxDegree() const {
  int max_degree = 0;
  for (const auto& neighbors : adjacency_) {
    max_degree = std::max(max_degree, static_cast<int>(neighbors.size()));
  }
  return max_degree;
}

std::vector<std::pair<int, int>> Graph::Edges() const {
  std::vector<std::pair<int, int>> edges;
  edges.reserve(static_cast<size_t>(num_edges_));
  for (int u = 0; u < num_nodes(); ++u) {
    // Adjacency lists are sorted, so scanning u in order yields lexicographic order.
    for (int v : adjacency_[u]) {
      if (u < v) edges.emplace_back(u, v);
    }
  }
  return edges;
}

bool Graph::IsConnected() const {
  const int n = num_nodes();
  if (n <= 1) return true;
  std::vector<char> seen(static_cast<size_t>(n), 0);
  std::vector<int> stack = {0};
  seen[0] = 1;
  int reached = 1;
  while (!stack.empty()) {
    const int u = stack.back();
    stack.pop_back();
    for (int v : adjacency_[u]) {
      if (!seen[v]) {
        seen[v] = 1;
        ++reached;
        stack.push_back(v);
      }
    }
  }
  return reached == n;
}

int Graph::Diameter() const {
  const int n = num_nodes();
  int diameter = 0;
  std::vector<int> hops(static_cast<size_t>(n));
  std::vector<int> queue;
  queue.reserve(static_cast<size_t>(n));
  for (int source = 0; source < n; ++source) {  // one breadth-first search per node
    std::fill(hops.begin(), hops.end(), -1);
    hops[source] = 0;
    queue.assign(1, source);
    for (size_t head = 0; head < queue.size(); ++head) {
      const int u = queue[head];
      diameter = std::max(diameter, hops[u]);
      for (int v : adjacency_[u]) {
        if (hops[v] < 0) {
          hops[v] = hops[u] + 1;
          queue.push_back(v);
        }
      }
    }
  }
  return diameter;
}

}  // namespace starling::topology
