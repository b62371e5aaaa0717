// The daemon's clock: steady (intervals, deadlines, the run's `time`), never the wall clock,
// which may jump. The wall clock is read only where it is meant (unix_time in metrics lines, the
// sequence offset of a node's new life).
#pragma once

#include <chrono>
#include <cstdint>

namespace starling::node {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
inline int64_t Millis(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace starling::node
