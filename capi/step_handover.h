// The hand-over between a training thread that owns its model buffer and the node's thread that
// exchanges the model (capi/starling.h, "The step-boundary rule").
//
// The node's thread never touches the caller's buffer. It keeps its own float64 model X (the
// state the daemon's algorithms always keep, sent without a copy) and records every merge as a
// delta D (X += D). At a step boundary the training thread, and only it, reads and writes the
// buffer B: B += D (the merges since its last boundary), D = 0, and B is staged. The node's
// thread takes the staged step when it is ready for one: X = B_staged + D (merges that arrived
// after the boundary stay in D for the next one). A SwarmSGD merge is an addition (each side
// keeps the local progress made since its snapshot), so applying it a step later keeps the sum
// of the models exactly as the daemon's own algorithm does.
//
// Thread safety: every method may be called from any thread; one mutex guards the state. The
// training thread calls Stage/Sync/WriteFinal, the node's thread Ready/Take/AddDelta/EndSteps/
// Close.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/types.h"

namespace starling::capi {

enum class StageResult {
  kStaged,    // the step is handed over
  kEnded,     // the node has done its budget of local steps (or its loop ended): not staged; the
              // buffer got the merges so far
  kTimedOut,  // the node did not take the previous step in time: nothing changed
};

class StepHandover {
 public:
  explicit StepHandover(size_t dim) : staged_(Vec::Zero(dim)), delta_(Vec::Zero(dim)) {}

  // Training thread. Waits (at most `timeout`, forever if negative) until the node has taken the
  // previously staged step, then applies the pending merges to `buffer` (n values of type T) and
  // stages it. Adds the time waited to *waited_seconds.
  template <typename T>
  StageResult Stage(T* buffer, size_t n, std::chrono::milliseconds timeout, double* waited_seconds);
  // Training thread: applies the pending merges to `buffer` without staging a step.
  template <typename T>
  void Sync(T* buffer, size_t n);
  // Training thread, after start: the model the node resumed from (a checkpoint), if any, into
  // `buffer`; true if there was one.
  template <typename T>
  bool TakeResumed(T* buffer, size_t n);

  // Node's thread.
  bool Ready() const;
  // X = the staged step + the merges since it was staged.
  void Take(Vec* x);
  void AddDelta(const Vec& delta);
  void SetResumed(const Vec& x);
  // The budget of local steps is done (EndLocalSteps) or the loop ended: Stage returns kEnded.
  void EndSteps();
  // Counters published for the training thread.
  void Publish(const algorithms::PairwiseCounters& c);
  algorithms::PairwiseCounters counters() const;

 private:
  template <typename T>
  void ApplyDelta(T* buffer, size_t n);

  mutable std::mutex mutex_;
  std::condition_variable taken_;
  Vec staged_, delta_, resumed_;
  bool pending_ = false, ended_ = false, has_resumed_ = false;
  algorithms::PairwiseCounters counters_;
};

template <typename T>
void StepHandover::ApplyDelta(T* buffer, size_t n) {
  for (size_t i = 0; i < n; ++i) buffer[i] = static_cast<T>(buffer[i] + delta_[i]);
  delta_.setZero();
}

template <typename T>
StageResult StepHandover::Stage(T* buffer, size_t n, std::chrono::milliseconds timeout,
                                double* waited_seconds) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto t0 = std::chrono::steady_clock::now();
  const auto done = [&] { return !pending_ || ended_; };
  if (timeout.count() < 0) {
    taken_.wait(lock, done);
  } else if (!taken_.wait_for(lock, timeout, done)) {
    *waited_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return StageResult::kTimedOut;
  }
  *waited_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ApplyDelta(buffer, n);
  if (ended_) return StageResult::kEnded;
  for (size_t i = 0; i < n; ++i) staged_[i] = static_cast<double>(buffer[i]);
  pending_ = true;
  return StageResult::kStaged;
}

template <typename T>
void StepHandover::Sync(T* buffer, size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  ApplyDelta(buffer, n);
}

template <typename T>
bool StepHandover::TakeResumed(T* buffer, size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!has_resumed_) return false;
  for (size_t i = 0; i < n; ++i) buffer[i] = static_cast<T>(resumed_[i]);
  has_resumed_ = false;
  return true;
}

}  // namespace starling::capi
