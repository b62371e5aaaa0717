// The graph of a run whose members come and go (docs/explanations/membership.md, "Nodes that
// come and go"): which links a leaving node's neighbours make, and which members a joining node
// links to, so that the graph of the members stays connected. A ring stays a ring; in other
// graphs a leave can add a link to its former neighbours' degrees.
//
//  - Leave(v): v's links go; its former neighbours are linked in a chain, the two of highest
//    degree at its ends (ties by id), skipping links that exist. Every path that went through v
//    now goes along the chain, so the graph stays connected; in a ring (degree 2) each former
//    neighbour gains the one link it lost.
//  - Join(v): v is linked with round(mean degree of the members) members (at least 1): for each
//    pair of links it takes a link a-b whose ends have the smallest degree sum (ties by ids),
//    and splices itself into it (a-b becomes a-v-b: a and b keep their degrees, and stay
//    connected through v); an odd last link goes to the member of smallest degree (ties by id).
// Deterministic: no randomness, so every node that applies the same changes in the same order
// holds the same graph. Nodes are slot ids 0..size-1; not thread-safe.
#pragma once

#include <utility>
#include <vector>

namespace starling::topology {

class MembershipGraph {
 public:
  // Every slot a member, linked as `neighbors` (symmetric, no self-links; checked).
  explicit MembershipGraph(const std::vector<std::vector<int>>& neighbors);

  int size() const { return static_cast<int>(adjacency_.size()); }
  bool member(int v) const { return member_.at(v); }
  int num_members() const;
  // v's neighbours in increasing order (empty for a non-member).
  const std::vector<int>& neighbors(int v) const { return adjacency_.at(v); }
  int degree(int v) const { return static_cast<int>(adjacency_.at(v).size()); }
  // True when the members form one connected graph (or there are none).
  bool Connected() const;

  // Member v leaves; returns the links made among its former neighbours. Throws
  // std::invalid_argument if v is not a member.
  std::vector<std::pair<int, int>> Leave(int v);
  // Non-member v joins; returns its neighbours. Throws std::invalid_argument if v is a member.
  std::vector<int> Join(int v);

 private:
  void Link(int a, int b);
  void Unlink(int a, int b);
  bool Linked(int a, int b) const;

  std::vector<std::vector<int>> adjacency_;  // each sorted
  std::vector<bool> member_;
};

}  // namespace starling::topology
