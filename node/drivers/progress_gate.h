// Keeps a pairwise node's count of local steps within a window of its neighbours' (the start and
// middle of a run; docs/explanations/algorithms/swarmsgd.md).
//
// Why: on a loaded machine nodes get unequal shares of the CPU, so the fast ones used to run
// thousands of steps ahead; the slowest then did their last steps after everybody else had
// finished. A pairwise merge keeps the sum of models, so the average model moves only by local
// steps: a tail of steps by one or two nodes on non-i.i.d. shards moved it toward their shards
// (test accuracy 0.72-0.78 at the average model where the simulator, whose nodes are activated
// uniformly, has 0.82). Each node says its count to its neighbours every window/4 steps, and a
// node more than `window` steps ahead of a live neighbour still stepping waits (serving and
// merging meanwhile) until that neighbour catches up. The slowest node never waits, so there is
// no deadlock; a neighbour that never said its count, has finished, or is silent holds no one.
//
// Pure logic: no clock, no socket. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace starling::node {

class ProgressGate {
 public:
  // `window` >= 1 local steps. A count older than `stale_ms` holds no one: its sender is alive
  // but not stepping (still waiting to meet its neighbours, say), and waiting for it could be
  // for ever.
  explicit ProgressGate(int64_t window, int64_t stale_ms = 3000)
      : window_(window < 1 ? 1 : window), stale_ms_(stale_ms) {}
  // The window for a budget of `budget` local steps with H = `local_steps` on a graph of
  // diameter `diameter`: max(8H, budget/(40 x diameter)). The gate holds each edge to the window,
  // so two nodes k hops apart may be k windows apart: dividing by the diameter keeps the whole
  // network within budget/40 of its slowest node. On a ring of 16, budget/40 per edge would let
  // one side of the ring run 8 windows (a fifth of the run) ahead of the other, whose last steps,
  // taken after the first side has finished, move the average model toward its shards alone
  // (docs/explanations/exchange.md).
  static int64_t WindowFor(int64_t budget, int local_steps, int diameter);

  int64_t window() const { return window_; }
  // Neighbour `peer` said it has done `steps` local steps (counts only grow: an older note that
  // arrives late is ignored).
  void Note(int peer, int64_t steps, int64_t now_ms);
  // `peer` finished its budget, or left: it holds no one any more.
  void Release(int peer);
  // True if a node that has done `steps` must wait: some neighbour with `live(peer)` is more than
  // the window behind.
  bool Holds(int64_t steps, int64_t now_ms, const std::function<bool(int)>& live) const;
  // The neighbour that holds it (for a log line), or nullopt.
  std::optional<int> Holder(int64_t steps, int64_t now_ms,
                            const std::function<bool(int)>& live) const;
  // True when the node should say its count (every window/4 steps, and at step 0).
  bool AnnounceDue(int64_t steps);

  // The BYE text that carries a count ("progress:S"), and its strict parser (from the network:
  // digits only, at most 15 of them).
  static std::string Text(int64_t steps);
  static std::optional<int64_t> Parse(const std::string& text);

 private:
  struct Count {
    int64_t steps, noted_ms;
  };
  int64_t window_, stale_ms_;
  std::map<int, Count> steps_;  // the last count each neighbour said
  int64_t last_announced_ = -1;
};

}  // namespace starling::node
