#include "node/drivers/merge_pace.h"

namespace starling::node {

bool MergePace::Holds(int64_t steps, int64_t merges, int64_t now_ms) {
  timed_out_ = false;
  if (rate_ <= 0.0) return false;
  const double owed = rate_ * static_cast<double>(steps - base_steps_);
  if (static_cast<double>(merges - base_merges_) >= owed) {
    if (waiting_since_) waited_ms_ += now_ms - *waiting_since_;
    waiting_since_.reset();
    return false;
  }
  if (!waiting_since_) {
    waiting_since_ = now_ms;
    ++waits_;
  }
  if (now_ms - *waiting_since_ < max_wait_ms_) return true;
  // Time-out: step on, and forgive the deficit (see the header).
  waited_ms_ += now_ms - *waiting_since_;
  waiting_since_.reset();
  ++timeouts_;
  timed_out_ = true;
  base_steps_ = steps;
  base_merges_ = merges;
  return false;
}

}  // namespace starling::node
