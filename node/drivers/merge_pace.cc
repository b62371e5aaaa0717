#include "node/drivers/merge_pace.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace starling::node {

MergePace::MergePace(double merges_per_step, int64_t min_wait_ms, int64_t exchange_transfer_ms)
    : rate_(merges_per_step),
      min_wait_ms_(min_wait_ms),
      ceiling_ms_(kMaxWaitMs + exchange_transfer_ms),
      max_wait_ms_(min_wait_ms) {
  // NoteRoundTrip clamps to [min_wait_ms, ceiling_ms]: with the floor above the ceiling that
  // clamp would be undefined.
  if (!(merges_per_step >= 0.0) || min_wait_ms < 0 || min_wait_ms > kMaxWaitMs ||
      exchange_transfer_ms < 0) {
    throw std::invalid_argument("MergePace: merges per step " + std::to_string(merges_per_step) +
                                " must be >= 0, the shortest wait " + std::to_string(min_wait_ms) +
                                " ms in [0, " + std::to_string(kMaxWaitMs) +
                                "] and the exchange's transfer time " +
                                std::to_string(exchange_transfer_ms) + " ms >= 0");
  }
}

void MergePace::NoteRoundTrip(int64_t round_trip_ms) {
  const double sample = static_cast<double>(std::max<int64_t>(round_trip_ms, 0));
  srtt_ms_ = srtt_ms_ == 0.0 ? sample : srtt_ms_ + (sample - srtt_ms_) / 8.0;
  const auto bound = static_cast<int64_t>(std::ceil(kRoundTripsPerWait * srtt_ms_));
  max_wait_ms_ = std::clamp(bound, min_wait_ms_, ceiling_ms_);
}

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
