#include "topology/membership_graph.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace starling::topology {

MembershipGraph::MembershipGraph(const std::vector<std::vector<int>>& neighbors)
    : adjacency_(neighbors.size()), member_(neighbors.size(), true) {
  const int n = size();
  for (int v = 0; v < n; ++v) {
    for (int u : neighbors[v]) {
      if (u < 0 || u >= n || u == v) {
        throw std::invalid_argument("membership graph: node " + std::to_string(v) +
                                    " has a link to " + std::to_string(u));
      }
      const auto& back = neighbors[u];
      if (std::find(back.begin(), back.end(), v) == back.end()) {
        throw std::invalid_argument("membership graph: link " + std::to_string(v) + "-" +
                                    std::to_string(u) + " is not symmetric");
      }
      if (!Linked(v, u)) Link(v, u);
    }
  }
}

int MembershipGraph::num_members() const {
  return static_cast<int>(std::count(member_.begin(), member_.end(), true));
}

bool MembershipGraph::Linked(int a, int b) const {
  return std::binary_search(adjacency_[a].begin(), adjacency_[a].end(), b);
}

void MembershipGraph::Link(int a, int b) {
  adjacency_[a].insert(std::lower_bound(adjacency_[a].begin(), adjacency_[a].end(), b), b);
  adjacency_[b].insert(std::lower_bound(adjacency_[b].begin(), adjacency_[b].end(), a), a);
}

void MembershipGraph::Unlink(int a, int b) {
  adjacency_[a].erase(std::lower_bound(adjacency_[a].begin(), adjacency_[a].end(), b));
  adjacency_[b].erase(std::lower_bound(adjacency_[b].begin(), adjacency_[b].end(), a));
}

bool MembershipGraph::Connected() const {
  int start = -1;
  for (int v = 0; v < size() && start < 0; ++v) {
    if (member_[v]) start = v;
  }
  if (start < 0) return true;
  std::vector<bool> seen(adjacency_.size(), false);
  std::vector<int> stack{start};
  seen[start] = true;
  int reached = 1;
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    for (int u : adjacency_[v]) {
      if (seen[u]) continue;
      seen[u] = true;
      ++reached;
      stack.push_back(u);
    }
  }
  return reached == num_members();
}

std::vector<std::pair<int, int>> MembershipGraph::Leave(int v) {
  if (v < 0 || v >= size() || !member_[v]) {
    throw std::invalid_argument("membership graph: node " + std::to_string(v) +
                                " is not a member and cannot leave");
  }
  std::vector<int> former = adjacency_[v];
  for (int u : former) Unlink(v, u);
  member_[v] = false;
  // Ascending by degree (then id); the highest goes first, so that the two highest end the chain
  // and the lower ones, which gain two links, sit inside.
  std::sort(former.begin(), former.end(),
            [&](int a, int b) { return degree(a) != degree(b) ? degree(a) < degree(b) : a < b; });
  if (former.size() > 2) std::rotate(former.rbegin(), former.rbegin() + 1, former.rend());
  std::vector<std::pair<int, int>> made;
  for (size_t k = 1; k < former.size(); ++k) {
    const int a = former[k - 1], b = former[k];
    if (Linked(a, b)) continue;
    Link(a, b);
    made.emplace_back(std::min(a, b), std::max(a, b));
  }
  return made;
}

std::vector<int> MembershipGraph::Join(int v) {
  if (v < 0 || v >= size() || member_[v]) {
    throw std::invalid_argument("membership graph: node " + std::to_string(v) +
                                " is a member already and cannot join");
  }
  const int members = num_members();
  member_[v] = true;
  if (members == 0) return {};
  int degree_sum = 0;
  for (int u = 0; u < size(); ++u) {
    if (member_[u] && u != v) degree_sum += degree(u);
  }
  int wanted = static_cast<int>(std::lround(static_cast<double>(degree_sum) / members));
  wanted = std::clamp(wanted, 1, members);
  // Splices: a link a-b (neither end linked to v yet) of smallest degree sum becomes a-v-b.
  while (wanted - degree(v) >= 2) {
    int best_a = -1, best_b = -1;
    for (int a = 0; a < size(); ++a) {
      if (!member_[a] || a == v || Linked(a, v)) continue;
      for (int b : adjacency_[a]) {
        if (b <= a || b == v || Linked(b, v)) continue;
        if (best_a < 0 || degree(a) + degree(b) < degree(best_a) + degree(best_b)) {
          best_a = a;
          best_b = b;
        }
      }
    }
    if (best_a < 0) break;
    Unlink(best_a, best_b);
    Link(best_a, v);
    Link(best_b, v);
  }
  // The rest, one at a time, to the members of smallest degree.
  while (degree(v) < wanted) {
    int best = -1;
    for (int u = 0; u < size(); ++u) {
      if (!member_[u] || u == v || Linked(u, v)) continue;
      if (best < 0 || degree(u) < degree(best)) best = u;
    }
    if (best < 0) break;
    Link(best, v);
  }
  return adjacency_[v];
}

}  // namespace starling::topology
