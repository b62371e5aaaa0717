// node::FailureDetector on a simulated clock: heartbeats, suspicion after missed intervals,
// confirmation through a common neighbour, and incarnations that let a restarted node back in.
#include "node/drivers/failure_detector.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

namespace starling {
namespace {

using node::FailureDetector;
using node::FailureDetectorEvent;

bool Has(const std::vector<FailureDetectorEvent>& events, FailureDetectorEvent::Kind kind,
         int peer) {
  for (const auto& e : events) {
    if (e.kind == kind && e.peer == peer) return true;
  }
  return false;
}

// Nodes 0, 1, 2 all linked (a triangle): 0 watches 1 with 2 as the common neighbour.
TEST(FailureDetector, LivePeersWithLateHeartbeatsAreNeverSuspected) {
  FailureDetector a(0, 1, {1, 2}, 0.0);
  a.SetCommonNeighbours(1, {2});
  for (double t = 0.0; t < 60.0; t += 0.05) {
    // Heartbeats every 0.5 s, each up to 0.45 s late.
    const int tick = static_cast<int>(t / 0.5);
    if (t - tick * 0.5 < 0.05 && tick % 2 == 0) a.Heard(1, 1, t + 0.45);
    if (t - tick * 0.5 < 0.05 && tick % 2 == 1) a.Heard(1, 1, t);
    a.Heard(2, 1, t);
    const auto events = a.Tick(t);
    EXPECT_FALSE(Has(events, FailureDetectorEvent::kSuspect, 1)) << "at " << t;
  }
  EXPECT_EQ(a.suspicions(), 0);
}

// Node 1 dies at t = 10: node 0 suspects it, asks 2, which has not heard it either, and
// declares it dead within three heartbeat intervals of the death.
TEST(FailureDetector, ADeadNodeIsConfirmedByACommonNeighbourWithinThreeIntervals) {
  FailureDetector a(0, 1, {1, 2}, 0.0), helper(2, 1, {0, 1}, 0.0);
  a.SetCommonNeighbours(1, {2});
  const double death = 10.0, step = 0.01;
  double declared = -1;
  for (double t = 0.0; t < 20.0 && declared < 0; t += step) {
    if (t < death) {
      a.Heard(1, 1, t);
      helper.Heard(1, 1, t);
    }
    a.Heard(2, 1, t);
    for (const auto& e : a.Tick(t)) {
      if (e.kind == FailureDetectorEvent::kAskProbe) {
        EXPECT_EQ(e.helper, 2);
        const auto answer = helper.AnswerProbe(e.peer, t + step);  // one hop later
        for (const auto& d : a.ProbeAnswered(2, e.peer, answer, t + step)) {
          if (d.kind == FailureDetectorEvent::kDead) declared = t + step;
        }
      }
      if (e.kind == FailureDetectorEvent::kDead) declared = t;
    }
  }
  ASSERT_GT(declared, 0);
  EXPECT_TRUE(a.dead(1));
  EXPECT_LE(declared - death, 3 * 0.5);
  std::printf("declared dead %.2f s (%.2f intervals) after the death\n", declared - death,
              (declared - death) / 0.5);
}

// Only the 0-1 link is silent: the helper still hears 1 and refutes the suspicion.
TEST(FailureDetector, AHelperThatHearsTheSuspectRefutesIt) {
  FailureDetector a(0, 1, {1, 2}, 0.0), helper(2, 1, {0, 1}, 0.0);
  a.SetCommonNeighbours(1, {2});
  bool asked = false;
  for (double t = 0.0; t < 3.0; t += 0.01) {
    helper.Heard(1, 1, t);
    a.Heard(2, 1, t);
    for (const auto& e : a.Tick(t)) {
      if (e.kind != FailureDetectorEvent::kAskProbe) continue;
      asked = true;
      const auto events = a.ProbeAnswered(2, 1, helper.AnswerProbe(1, t), t);
      EXPECT_TRUE(Has(events, FailureDetectorEvent::kRefuted, 1));
    }
  }
  EXPECT_TRUE(asked);
  EXPECT_FALSE(a.dead(1));
  EXPECT_GE(a.refuted(), 1);
}

TEST(FailureDetector, WithoutACommonNeighbourTheSuspicionTimesOut) {
  FailureDetector a(0, 1, {1}, 0.0);
  bool dead = false;
  double t = 0.0;
  for (; t < 5.0 && !dead; t += 0.01) dead = Has(a.Tick(t), FailureDetectorEvent::kDead, 1);
  EXPECT_TRUE(dead);
  EXPECT_GT(t, 2 * 0.5);  // after the suspicion, not before
}

TEST(FailureDetector, IncarnationsTellARestartedNodeFromLateMessagesOfTheDeadOne) {
  FailureDetector a(0, 1, {1}, 0.0);
  a.Heard(1, 3, 0.1);
  double t = 0.0;
  while (!a.dead(1)) a.Tick(t += 0.01);
  EXPECT_TRUE(a.Heard(1, 3, t).empty());  // a late message of the dead process
  EXPECT_TRUE(a.dead(1));
  EXPECT_TRUE(Has(a.Heard(1, 4, t), FailureDetectorEvent::kRejoined, 1));
  EXPECT_FALSE(a.dead(1));
  EXPECT_EQ(a.Refute(1), 2u);  // suspected at its own incarnation: takes the next one
  EXPECT_EQ(a.Refute(0), 2u);  // an older one changes nothing
}

TEST(FailureDetector, IgnoresWhatNobodyAskedFor) {
  FailureDetector a(0, 1, {1, 2}, 0.0);
  EXPECT_TRUE(a.Heard(9, 1, 0.1).empty());                      // not a neighbour
  EXPECT_TRUE(a.ProbeAnswered(2, 1, {false, 1}, 0.1).empty());  // 1 is not suspected
  EXPECT_FALSE(a.dead(1));
  EXPECT_EQ(a.ignored(), 2);
  node::FailureDetectorOptions bad;
  bad.answer_window = 3.0;  // not below suspect_after
  EXPECT_THROW(FailureDetector(0, 1, {1}, 0.0, bad), std::invalid_argument);
}

}  // namespace
}  // namespace starling
