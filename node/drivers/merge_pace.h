// Paces a pairwise node's local steps against its merges (SwarmSGD's --merge-pace R; README
// "What the demo does").
//
// Why: a daemon offers an exchange after each H local steps and steps on while it is in flight.
// On the demo (8 daemons on 2 cores, batch 16, 63 KB CURVE exchanges slower than a 2-2.5 ms step)
// a node merged about 0.6 times per local step, against about 2 in the simulator (one exchange
// started per activation, one served on average), and fewer merges per step cost what a larger H
// costs: the daemons ended about 3x further from f* than the simulator. With R > 0 the node starts
// local step k+1 only once it has completed at least R x k merges (started or served), counted
// from its last pace time-out; while it waits it serves and offers as usual (the exchange
// driver's rules are unchanged: at most one offer outstanding, one per H local steps).
//
// Never a hang: a wait longer than `max_wait_ms` is a pace time-out: the node steps on, the
// time-out is counted, and the deficit is forgiven (the count of merges and steps restarts
// there), so that a node short of partners (its neighbours waiting on others, or gone) pays at
// most one bounded wait per step, not an ever-growing one.
//
// Pure logic: time comes in as an argument. Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>

namespace starling::node {

class MergePace {
 public:
  // `merges_per_step` R >= 0 (0: never holds); `max_wait_ms` >= 0.
  MergePace(double merges_per_step, int64_t max_wait_ms)
      : rate_(merges_per_step), max_wait_ms_(max_wait_ms) {}

  bool active() const { return rate_ > 0.0; }
  double rate() const { return rate_; }
  int64_t max_wait_ms() const { return max_wait_ms_; }
  // The counts the pace starts from (a resumed node's, or 0 and 0).
  void Start(int64_t steps, int64_t merges) {
    base_steps_ = steps;
    base_merges_ = merges;
    waiting_since_.reset();
  }
  // True if a node that has done `steps` local steps and `merges` merges must wait before its
  // next step. A wait starts at the first call that holds; at `max_wait_ms` into it the call
  // returns false and counts a time-out (timed_out() then says so until the next call).
  bool Holds(int64_t steps, int64_t merges, int64_t now_ms);
  // Milliseconds left of the current wait before its time-out (max_wait_ms when none has
  // started): how long a waiting node may sleep without missing the time-out.
  int64_t RemainingMs(int64_t now_ms) const {
    if (!waiting_since_) return max_wait_ms_;
    const int64_t left = max_wait_ms_ - (now_ms - *waiting_since_);
    return left > 0 ? left : 0;
  }
  // The last call to Holds ended a wait by its time-out.
  bool timed_out() const { return timed_out_; }
  int64_t timeouts() const { return timeouts_; }
  // Steps before which the node waited at all, and the time it spent waiting in all.
  int64_t waits() const { return waits_; }
  int64_t waited_ms() const { return waited_ms_; }

 private:
  double rate_;
  int64_t max_wait_ms_;
  int64_t base_steps_ = 0, base_merges_ = 0;
  std::optional<int64_t> waiting_since_;
  bool timed_out_ = false;
  int64_t timeouts_ = 0, waits_ = 0, waited_ms_ = 0;
};

}  // namespace starling::node
