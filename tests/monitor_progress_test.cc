// The monitor's progress line as a unit: durations, counts, the rate over its window, the time
// left, and the share (never 100% before every step is done).
#include "node/probe/monitor_progress.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace starling::node {
namespace {

TEST(FormatDuration, SecondsMinutesHours) {
  EXPECT_EQ(FormatDuration(0), "0s");
  EXPECT_EQ(FormatDuration(7.4), "7s");
  EXPECT_EQ(FormatDuration(7.6), "8s");
  EXPECT_EQ(FormatDuration(59.4), "59s");
  EXPECT_EQ(FormatDuration(59.6), "1m00s");
  EXPECT_EQ(FormatDuration(65), "1m05s");
  EXPECT_EQ(FormatDuration(3599), "59m59s");
  EXPECT_EQ(FormatDuration(3600), "1h00m");
  EXPECT_EQ(FormatDuration(2 * 3600 + 3 * 60 + 20), "2h03m");
  EXPECT_EQ(FormatDuration(-1), "?");
  EXPECT_EQ(FormatDuration(std::numeric_limits<double>::infinity()), "?");
  EXPECT_EQ(FormatDuration(std::nan("")), "?");
}

TEST(FormatCount, ThreeFiguresWithUnits) {
  EXPECT_EQ(FormatCount(0), "0");
  EXPECT_EQ(FormatCount(0.5), "0.5");
  EXPECT_EQ(FormatCount(850), "850");
  EXPECT_EQ(FormatCount(999.4), "999");
  EXPECT_EQ(FormatCount(1000), "1k");
  EXPECT_EQ(FormatCount(12345), "12.3k");
  EXPECT_EQ(FormatCount(999400), "999k");
  EXPECT_EQ(FormatCount(999600), "1M");
  EXPECT_EQ(FormatCount(1.25e6), "1.25M");
  EXPECT_EQ(FormatCount(3.2e9), "3.2G");
}

TEST(ProgressMeter, RateOverTheWindowAndTimeLeft) {
  ProgressMeter m(16000, 10.0);
  EXPECT_EQ(m.rate(), 0.0);
  EXPECT_FALSE(m.seconds_left().has_value());  // no rate yet: unknown, not 0 or infinite
  m.Add(0.0, 0);
  m.Add(1.0, 100);  // 100 steps/s at first
  EXPECT_DOUBLE_EQ(m.rate(), 100.0);
  for (int t = 2; t <= 30; ++t) m.Add(t, 100 + 400.0 * (t - 1));  // then 400 steps/s
  // The window holds seconds 20..30 only: the early slow second is forgotten.
  EXPECT_DOUBLE_EQ(m.rate(), 400.0);
  EXPECT_DOUBLE_EQ(m.done(), 100 + 400.0 * 29);
  ASSERT_TRUE(m.seconds_left().has_value());
  EXPECT_DOUBLE_EQ(*m.seconds_left(), (16000 - m.done()) / 400.0);
  m.Add(31, 16000);
  EXPECT_EQ(*m.seconds_left(), 0.0);
}

TEST(ProgressMeter, StalledRunHasNoTimeLeft) {
  ProgressMeter m(100, 5.0);
  m.Add(0, 10);
  m.Add(10, 10);
  EXPECT_EQ(m.rate(), 0.0);
  EXPECT_FALSE(m.seconds_left().has_value());
}

TEST(ProgressLine, PlainParseableFields) {
  ProgressFields f;
  f.done = 7236;
  f.total = 16000;
  f.rate = 850;
  f.seconds_left = 10.3;
  f.test_accuracy = 0.81234;
  f.rel_gap = 0.04321;
  EXPECT_EQ(ProgressLine(f),
            "progress  45.2%  7236/16000 steps  850 steps/s  10s left  test_acc 0.8123  "
            "rel_gap 0.0432");
  f.test_accuracy.reset();
  f.rel_gap.reset();
  f.seconds_left.reset();
  f.rate = 0;
  EXPECT_EQ(ProgressLine(f), "progress  45.2%  7236/16000 steps  0 steps/s  ? left");
}

TEST(ProgressLine, HundredPercentOnlyWhenDone) {
  ProgressFields f;
  f.total = 16000;
  f.done = 15999;
  EXPECT_EQ(ProgressLine(f).substr(0, 15), "progress  99.9%");
  f.done = 16000;
  EXPECT_EQ(ProgressLine(f).substr(0, 15), "progress 100.0%");
  f.done = 17000;  // never above
  EXPECT_EQ(ProgressLine(f).substr(0, 15), "progress 100.0%");
}

}  // namespace
}  // namespace starling::node
