// When every node of a pairwise run has done its budget of local steps, learnt from the
// neighbours alone (the end phase of node/daemon/pairwise_node.h;
// docs/explanations/algorithms/swarmsgd.md).
//
// A node that has done its budget stays up as a passive partner (it answers and offers pure
// averaging merges, which keep the sum of models) until the whole network has done its budget,
// so that the last nodes still stepping keep mixing with everybody instead of training alone.
// No node sees the whole network, so each computes a level from its neighbours': 0 while
// stepping, then 1 + the smallest level among its neighbours, capped at D + 1 (D the graph's
// diameter), and says each new level to its neighbours. By induction, level >= k means that
// every node within distance k - 1 has done its budget; level D + 1 means every node has. A
// neighbour that left (or was never heard of) counts as infinite (resp. 0): a node that never
// came up holds the others until their linger time-out, which is what lets a late node still
// find partners.
//
// Pure logic: no clock, no socket. Not thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topology/graph.h"

namespace starling::node {

class FinishWave {
 public:
  // `self` in `graph` (the whole network's graph, as every node reads it from the cluster file).
  FinishWave(const topology::Graph& graph, int self);

  // This node has done its budget. Returns true if its level rose (say it to the neighbours).
  bool SetFinished();
  // Neighbour `peer` said it is at `level` (>= 1). Returns true if this node's level rose.
  bool NoteLevel(int peer, int level);
  // Neighbour `peer` left the run: it no longer holds anybody. Returns true if the level rose.
  bool NoteGone(int peer);

  int level() const { return level_; }
  // Every node of the network has done its budget (the level reached D + 1).
  bool AllFinished() const { return level_ >= cap_; }
  // Every neighbour knows that too (or left): none of them will offer an exchange any more.
  bool NeighboursAllFinished() const;
  int diameter() const { return cap_ - 1; }

  // The BYE texts: "finished" for level 1 (what a node that has done its budget has always
  // said), "finished:K" for K >= 2. ParseBye returns the level, or nullopt for another text
  // (from the network: anything else, a level out of 1..cap, or trailing bytes, is not one).
  std::string ByeText() const;
  std::optional<int> ParseBye(const std::string& text) const;

 private:
  bool Update();

  std::vector<int> neighbors_;
  std::map<int, int> heard_;  // the highest level each neighbour said; kGone once it left
  bool finished_ = false;
  int level_ = 0;
  int cap_;
};

// The graph's diameter over the nodes reachable from `self` (its eccentricity bound: the largest
// eccentricity in its component), by breadth-first search from every node of that component.
int ComponentDiameter(const topology::Graph& graph, int self);

}  // namespace starling::node
