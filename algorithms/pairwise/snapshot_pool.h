// Vectors for the messages a pairwise algorithm hands out (offers and replies), shared with
// whoever still reads them (the transport sends them without a copy).
//
// A message leaves the algorithm as a std::shared_ptr<const Vec>: the daemon passes it to the
// transport as the keepalive of a zero-copy send, so ZeroMQ reads the algorithm's own vector
// (possibly later, on its I/O thread) instead of a copy. The algorithm therefore must never
// write into a vector someone else still holds. Take() returns a vector nobody else holds: a
// pooled one whose other owners have all let go (use_count() == 1, the pool's own reference),
// or a fresh allocation. Reusing buffers keeps the pages of a large model mapped, as the
// transport's SendBuffers pool does for copied payloads.
//
// Sizing: a vector that cannot come from the pool is a fresh allocation of the
// model's size, and at d = 1e6-1e7 (8-80 MB) its first touch costs thousands of page faults, more
// than the merge itself. So by default the pool keeps as many vectors as a pairwise algorithm can
// have handed out at once (kPooledSnapshots): its kept offers (the outstanding one and
// kKeptOfferSnapshots abandoned ones, pairwise_algorithm.h), the vector of a new offer (taken
// before the oldest kept one is dropped) and kRepliesInFlight replies the transport is still
// sending. It grows only on demand: a run without time-outs keeps two or three.
//
// Not thread-safe itself (one algorithm, one thread); only the release of a reference may
// happen on another thread, which the acquire fence in Take orders before the reuse.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/types.h"

namespace starling::algorithms {

// Replies a responder may have handed to the transport and not yet got back when it takes the
// vector of the next message: about one per neighbour whose request it served while an earlier
// reply was still being sent (encrypted and written by ZeroMQ's I/O thread); a few cover the
// graphs Starling runs (degree 2-4).
inline constexpr size_t kRepliesInFlight = 4;
// Vectors out at once: kKeptOfferSnapshots + 1 kept offers, the one being taken, and the replies
// in flight. SnapshotPool's default.
inline constexpr size_t kPooledSnapshots = kKeptOfferSnapshots + 2 + kRepliesInFlight;

class SnapshotPool {
 public:
  // Keeps at most max_pooled vectors for reuse; more messages in flight at once are allocated
  // and freed on their own.
  explicit SnapshotPool(size_t max_pooled = kPooledSnapshots) : max_pooled_(max_pooled) {}

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
    ++allocations_;
    if (pool_.size() < max_pooled_) pool_.push_back(fresh);
    return fresh;
  }

  // Vectors held by the pool (for tests).
  size_t pooled() const { return pool_.size(); }
  // Vectors Take had to allocate, pooled or not (for tests and benchmarks): once the pool holds
  // as many as are ever out at once, it stops growing.
  uint64_t allocations() const { return allocations_; }

 private:
  size_t max_pooled_;
  std::vector<std::shared_ptr<Vec>> pool_;
  uint64_t allocations_ = 0;
};

}  // namespace starling::algorithms
