#include "node/config/spanning_tree.h"

#include <algorithm>
#include <queue>

namespace starling::node {

std::vector<algorithms::TreePlace> BfsSpanningTree(const topology::Graph& graph) {
  const int n = graph.num_nodes();
  std::vector<algorithms::TreePlace> tree(n);
  if (n == 0) return tree;
  for (auto& place : tree) {
    place.depth = -1;
    place.num_nodes = n;
  }
  tree[0].depth = 0;
  std::queue<int> frontier;
  frontier.push(0);
  int height = 0;
  while (!frontier.empty()) {
    const int u = frontier.front();
    frontier.pop();
    for (int v : graph.Neighbors(u)) {
      if (tree[v].depth >= 0) continue;
      tree[v].depth = tree[u].depth + 1;
      tree[v].parent = u;
      // u's neighbours come in ascending order, so its children do too.
      tree[u].children.push_back(v);
      height = std::max(height, tree[v].depth);
      frontier.push(v);
    }
  }
  for (auto& place : tree) place.height = height;
  return tree;
}

}  // namespace starling::node
