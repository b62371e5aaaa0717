#include "node/probe/monitor_progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace starling::node {

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  char buf[32];
  const long long s = std::llround(seconds);
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llds", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  } else {
    const long long m = std::llround(seconds / 60.0);
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", m / 60, m % 60);
  }
  return buf;
}

std::string FormatCount(double count) {
  char buf[32];
  const double a = std::fabs(count);
  if (!std::isfinite(count)) return "?";
  if (a < 10) {
    std::snprintf(buf, sizeof buf, "%.2g", count);
  } else if (a < 1000) {
    std::snprintf(buf, sizeof buf, "%.0f", count);
  } else if (a < 999500) {
    std::snprintf(buf, sizeof buf, "%.3gk", count / 1e3);
  } else if (a < 999.5e6) {
    std::snprintf(buf, sizeof buf, "%.3gM", count / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.3gG", count / 1e9);
  }
  return buf;
}

void ProgressMeter::Add(double seconds, double done) {
  samples_.emplace_back(seconds, done);
  // Keep one sample at or before the window's start, so that the rate spans the whole window.
  while (samples_.size() > 2 && samples_[1].first <= seconds - window_) samples_.pop_front();
}

double ProgressMeter::rate() const {
  if (samples_.size() < 2) return 0.0;
  const double dt = samples_.back().first - samples_.front().first;
  if (dt <= 0) return 0.0;
  return std::max(0.0, (samples_.back().second - samples_.front().second) / dt);
}

std::optional<double> ProgressMeter::seconds_left() const {
  const double left = total_ - done();
  if (left <= 0) return 0.0;
  const double r = rate();
  if (r <= 0) return std::nullopt;
  return left / r;
}

std::string ProgressLine(const ProgressFields& f) {
  double share = f.total > 0 ? 100.0 * f.done / f.total : 0.0;
  share = std::min(share, 100.0);
  // 100.0% only when every step is done: 99.96% is not finished.
  if (f.done < f.total && share > 99.9) share = 99.9;
  char buf[64];
  std::snprintf(buf, sizeof buf, "progress %5.1f%%  %.0f/%.0f steps", share, f.done, f.total);
  std::string line = buf;
  line += "  " + FormatCount(f.rate) + " steps/s";
  line += "  " + (f.seconds_left ? FormatDuration(*f.seconds_left) : std::string("?")) + " left";
  if (f.test_accuracy) {
    std::snprintf(buf, sizeof buf, "  test_acc %.4f", *f.test_accuracy);
    line += buf;
  }
  if (f.rel_gap) {
    std::snprintf(buf, sizeof buf, "  rel_gap %.3g", *f.rel_gap);
    line += buf;
  }
  return line;
}

ProgressFields FieldsOf(const ProgressMeter& meter) {
  ProgressFields f;
  f.done = meter.done();
  f.total = meter.total();
  f.rate = meter.rate();
  f.seconds_left = meter.seconds_left();
  return f;
}

}  // namespace starling::node
