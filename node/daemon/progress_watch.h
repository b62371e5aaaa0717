// The deadlines on a node's waiting (every wait has a deadline): measured
// from the last progress, a "waiting ..." line is due every wait_log_seconds and giving up after
// give_up_seconds. What counts as progress, and what the lines say, is the loop's business.
// Single-threaded, like the loop that owns it.
#pragma once

#include <cstdint>

#include "node/daemon/daemon_clock.h"

namespace starling::node {

class ProgressWatch {
 public:
  ProgressWatch(int64_t wait_log_seconds, int64_t give_up_seconds)
      : wait_log_ms_(1000 * wait_log_seconds), give_up_ms_(1000 * give_up_seconds) {}

  // The wait begins at `now`: no progress and no line yet.
  void Start(Clock::time_point now) { last_progress_ = last_wait_log_ = now; }
  void Progressed(Clock::time_point now) { last_progress_ = now; }

  Clock::time_point last_progress() const { return last_progress_; }
  int64_t MillisSinceProgress(Clock::time_point now) const { return Millis(now - last_progress_); }
  double SecondsSinceProgress(Clock::time_point now) const { return Seconds(now - last_progress_); }

  // True, at most once per wait_log_seconds, while there has been no progress for as long: the
  // caller then writes its line.
  bool WaitLogDue(Clock::time_point now) {
    if (MillisSinceProgress(now) < wait_log_ms_ || Millis(now - last_wait_log_) < wait_log_ms_) {
      return false;
    }
    last_wait_log_ = now;
    return true;
  }
  bool GiveUpDue(Clock::time_point now) const { return MillisSinceProgress(now) >= give_up_ms_; }

 private:
  int64_t wait_log_ms_;
  int64_t give_up_ms_;
  Clock::time_point last_progress_{};
  Clock::time_point last_wait_log_{};
};

}  // namespace starling::node
