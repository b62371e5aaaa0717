// The monitor's progress line, as a person reads it: the share of the network's steps done, the
// steps done of the total, the rate, the time left, and the latest accuracy or gap, e.g.
//   progress  45.2%  7236/16000 steps  850 steps/s  10s left  test_acc 0.8123  rel_gap 0.0432
// In a terminal the monitor redraws it in place (one line); otherwise it prints it as a plain
// line each time, which the launcher and scripts parse: "progress", the share with a '%', then
// DONE/TOTAL "steps", then fields of two words each.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <utility>

namespace starling::node {

// "7s", "59s", "1m05s", "59m59s", "2h03m"; "?" for an unknown (negative or non-finite) time.
// Rounded to the nearest second (minute above an hour).
std::string FormatDuration(double seconds);
// "0.5", "850", "12.3k", "1.25M" (three significant figures from 1,000 on).
std::string FormatCount(double count);

// The rate of the network's steps over a sliding window of recent samples.
class ProgressMeter {
 public:
  // `total` steps make 100%; the rate is measured over the last `window_seconds`.
  explicit ProgressMeter(double total, double window_seconds = 10.0)
      : total_(total), window_(window_seconds) {}
  // The steps done so far (summed over nodes) at `seconds` on the monitor's clock.
  void Add(double seconds, double done);
  double done() const { return samples_.empty() ? 0.0 : samples_.back().second; }
  double total() const { return total_; }
  // Steps per second over the window; 0 before two samples a moment apart.
  double rate() const;
  // (total - done) / rate; nullopt while the rate is 0. 0 once done.
  std::optional<double> seconds_left() const;

 private:
  double total_, window_;
  std::deque<std::pair<double, double>> samples_;  // (seconds, done)
};

struct ProgressFields {
  double done = 0, total = 0, rate = 0;
  std::optional<double> seconds_left;
  std::optional<double> test_accuracy, rel_gap;
};

// The line above (no newline). The share is capped at 100%, and 100.0% only when done >= total.
std::string ProgressLine(const ProgressFields& f);
ProgressFields FieldsOf(const ProgressMeter& meter);

}  // namespace starling::node
