// The payloads a node sent for its most recent steps, kept so that a neighbour restarted from an
// older checkpoint can ask for them again (RESEND) and replay the steps it lost, ending with the
// same iterates as a run without the crash (docs/explanations/architecture.md: round-based methods
// wait for a node to return from its checkpoint).
//
// A neighbour that checkpoints every C steps can come back at most C + 1 steps behind its last
// position, and it was at most one step behind us, so a window of C + 3 steps suffices; the
// daemon keeps a margin above that.
//
// Not thread-safe; owned by the node's poll loop.
#pragma once

#include <cstddef>
#include <deque>
#include <utility>
#include <vector>

#include "algorithms/round/round_algorithm.h"

namespace starling::node {

class PayloadHistory {
 public:
  explicit PayloadHistory(size_t capacity) : capacity_(capacity) {}

  // Records our payload for `key` (keys arrive in increasing order; a repeat is ignored).
  void Record(const algorithms::StepKey& key, const Vec& payload);
  // Our payload for `key` if still kept, else null.
  const Vec* Find(const algorithms::StepKey& key) const;
  // The newest `n` entries (fewer if it holds fewer), oldest first: what a checkpoint keeps.
  std::vector<std::pair<algorithms::StepKey, const Vec*>> Newest(size_t n) const;
  // The oldest key still kept, or null if none is.
  const algorithms::StepKey* Oldest() const {
    return entries_.empty() ? nullptr : &entries_.front().first;
  }
  size_t size() const { return entries_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  size_t capacity_;
  std::deque<std::pair<algorithms::StepKey, Vec>> entries_;  // oldest first
};

}  // namespace starling::node
