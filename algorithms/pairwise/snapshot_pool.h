// Vectors for the messages a pairwise algorithm hands out (offers and replies), shared with
// whoever still reads them (issue 7).
//
// A message leaves the algorithm as a std::shared_ptr<const Vec>: the daemon passes it to the
// transport as the keepalive of a zero-copy send, so ZeroMQ reads the algorithm's own vector
// (possibly later, on its I/O thread) instead of a copy. The algorithm therefore must never
// write into a vector someone else still holds. Take() returns a vector nobody else holds: a
// pooled one whose other owners have all let go (use_count() == 1, the pool's own reference),
// or a fresh allocation. Reusing buffers keeps the pages of a large model mapped, as the
// transport's SendBuffers pool does for copied payloads.
//
// Not thread-safe itself (one algorithm, one thread); only the release of a reference may
// happen on another thread, which the acquire fence in Take orders before the reuse.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "algorithms/types.h"

namespace starling::algorithms {

class SnapshotPool {
 public:
  // Keeps at most max_pooled vectors for reuse; more messages in flight at once are allocated
  // and freed on their own.
  explicit SnapshotPool(size_t max_pooled = 4) : max_pooled_(max_pooled) {}

  // A vector that no other owner holds, for the caller to fill (its contents and size are
  // unspecified). The caller may write it until it hands out a reference.
  std::shared_ptr<Vec> Take() {
    for (const std::shared_ptr<Vec>& v : pool_) {
      if (v.use_count() == 1) {
        // The last other owner may have dropped its reference on another thread (ZeroMQ's I/O
        // thread, after sending); its reads of the vector happen before that release, and this
        // fence, after our load of the count, makes them happen before our writes.
        std::atomic_thread_fence(std::memory_order_acquire);
        return v;
      }
    }
    auto fresh = std::make_shared<Vec>();
    if (pool_.size() < max_pooled_) pool_.push_back(fresh);
    return fresh;
  }

  // Vectors held by the pool (for tests).
  size_t pooled() const { return pool_.size(); }

 private:
  size_t max_pooled_;
  std::vector<std::shared_ptr<Vec>> pool_;
};

}  // namespace starling::algorithms
