// Paces a pairwise node's local steps against its merges (SwarmSGD's --merge-pace R;
// docs/results/demo.md).
//
// Why: a daemon offers an exchange after each H local steps and steps on while it is in flight.
// On the demo (8 daemons on 2 cores, batch 16, 63 KB CURVE exchanges slower than a 2-2.5 ms step)
// a node merged about 0.6 times per local step, against about 2 in the simulator (one exchange
// started per activation, one served on average), and fewer merges per step cost what a larger H
// costs: the daemons ended about 3x further from f* than the simulator. With R > 0 the node starts
// local step k+1 only once it has completed at least R x k merges (started or served), counted
// from its last pace time-out; while it waits it serves and offers as usual (one offer per H
// local steps). Once a wait has lasted half its bound (Overdue), the node also offers to each
// neighbour it has not merged with since its step (ExchangeDriver::Tick's `paced`): a node that
// could only wait to be chosen by its neighbours was starved under load (two nodes of a 6-ring
// at load 10-40 timed out 313-515 of 800 paced waits; with such offers 0-1). Not from the start
// of a wait: merges with neighbours that are themselves waiting carry less than those they
// offer after a step, and on the idle machine the demo then ended at gap 0.0305 and consensus
// 0.0030 (0.017-0.019 and 0.0010 without), in 79 s instead of 108-111.
//
// Never a hang: a wait longer than the bound is a pace time-out: the node steps on, the
// time-out is counted, and the deficit is forgiven (the count of merges and steps restarts
// there), so that a node short of partners (its neighbours waiting on others, or gone) pays at
// most one bounded wait per step, not an ever-growing one.
//
// The bound follows the exchanges' round trip: kRoundTripsPerWait times its smoothed value
// (NoteRoundTrip, as TCP's SRTT: gain 1/8), at least `min_wait_ms`, at most ceiling_ms():
// kMaxWaitMs plus the time an exchange's request and reply take at the slowest rate assumed of a
// live daemon (`exchange_transfer_ms`, ExchangeTiming::TransferMs, the part of an offer's
// time-out that follows its size: 0 for small models, 1.9 s at d = 1e6, 19 s at d = 1e7). A
// wait of a few round trips is what the merges it waits for cost; much longer means the partners
// are busy with others. On loopback the round trip stays at 0.1-6 ms even at load 15-22 (the
// 6-ring of MergePace.DaemonsMergeAtLeastRTimesPerLocalStep), so the floor holds there; a fixed
// floor would be below one round trip of a large model's exchange (8 MB at d = 1e6 take about
// 70 ms on 1 Gbit/s), and so was the fixed ceiling of 500 ms at d = 1e7 (round trips of 1.6-14 s
// between loaded daemons, docs/results/large-models.md): every paced wait would then time out.
//
// Pure logic: time comes in as an argument. Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>

namespace starling::node {

class MergePace {
 public:
  static constexpr double kRoundTripsPerWait = 4.0;
  static constexpr int64_t kMaxWaitMs = 500;

  // `merges_per_step` R >= 0 (0: never holds); `min_wait_ms` in [0, kMaxWaitMs]: the bound
  // until round trips are noted, and its floor; `exchange_transfer_ms` >= 0: added to kMaxWaitMs
  // for the ceiling (see above). Throws std::invalid_argument otherwise.
  MergePace(double merges_per_step, int64_t min_wait_ms, int64_t exchange_transfer_ms = 0);

  bool active() const { return rate_ > 0.0; }
  double rate() const { return rate_; }
  // The most a wait may last, whatever the round trip: kMaxWaitMs + exchange_transfer_ms.
  int64_t ceiling_ms() const { return ceiling_ms_; }
  // The current bound of a wait.
  int64_t max_wait_ms() const { return max_wait_ms_; }
  // A completed exchange's round trip (offer sent to reply merged): updates the smoothed round
  // trip and the bound. A wait in progress keeps its start and is judged by the new bound.
  void NoteRoundTrip(int64_t round_trip_ms);
  // The smoothed round trip in ms (0 before the first one).
  double smoothed_round_trip_ms() const { return srtt_ms_; }
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
  // A wait in progress has lasted half its bound or more.
  bool Overdue(int64_t now_ms) const {
    return waiting_since_ && 2 * (now_ms - *waiting_since_) >= max_wait_ms_;
  }
  // Milliseconds until a wait in progress becomes Overdue (0 if it is), nullopt if no wait is in
  // progress: a waiting node's poll wakes then to make its paced offers on time.
  std::optional<int64_t> MsUntilOverdue(int64_t now_ms) const {
    if (!waiting_since_) return std::nullopt;
    const int64_t left = (max_wait_ms_ + 1) / 2 - (now_ms - *waiting_since_);
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
  int64_t min_wait_ms_, ceiling_ms_, max_wait_ms_;
  double srtt_ms_ = 0.0;
  int64_t base_steps_ = 0, base_merges_ = 0;
  std::optional<int64_t> waiting_since_;
  bool timed_out_ = false;
  int64_t timeouts_ = 0, waits_ = 0, waited_ms_ = 0;
};

}  // namespace starling::node
