// The clock a node stamps what it publishes for topology-inference probes with (the pairwise
// diffusion's samples, every node's reports): the wall clock read once, at construction, plus
// the steady clock since. Monotone (a wall-clock jump later does not move it), and comparable
// across processes and hosts to the wall clocks' agreement (one host: the same clock; NTP:
// its accuracy), which is what a probe aligning several nodes' stamps needs. The steady clock
// counts from the instant the wall clock was read, not from the run's start: from the start,
// every node's stamps were off by its own start-up time (tens of ms on a loaded host, several
// ticks of the pairwise diffusion), which cost the probe most of its accuracy in one run of six.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>

#include "node/daemon/daemon_clock.h"

namespace starling::node {

class StampClock {
 public:
  // offset_ms: added to every stamp (starlingd --fault-clock-offset-ms, a test aid: a host whose
  // clock is off).
  explicit StampClock(double offset_ms = 0.0)
      : wall_at_start_us_(std::chrono::duration_cast<std::chrono::microseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count() +
                          std::llround(offset_ms * 1e3)),
        steady_at_start_(Clock::now()) {}

  // Microseconds since the Unix epoch: an integer below 2^53, so exact as a double.
  double NowUs() const {
    const int64_t since =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - steady_at_start_)
            .count();
    return static_cast<double>(wall_at_start_us_ + since);
  }

 private:
  const int64_t wall_at_start_us_;
  const Clock::time_point steady_at_start_;  // read together with wall_at_start_us_
};

}  // namespace starling::node
