// ProgressGate (node/drivers/progress_gate.h): who waits for whom, and the strict parsing of the
// counts that come from the network.
#include "node/drivers/progress_gate.h"

#include <gtest/gtest.h>

#include <set>

namespace starling::node {
namespace {

TEST(ProgressGate, ANodeMoreThanAWindowAheadOfALiveNeighbourWaits) {
  ProgressGate gate(100);
  const auto all_live = [](int) { return true; };
  EXPECT_FALSE(gate.Holds(1000, 0, all_live));  // nobody said a count yet: nobody holds
  gate.Note(1, 400, 0);
  gate.Note(2, 950, 0);
  EXPECT_FALSE(gate.Holds(500, 0, all_live));  // 100 ahead of node 1: still inside the window
  EXPECT_TRUE(gate.Holds(501, 0, all_live));
  EXPECT_EQ(gate.Holder(501, 0, all_live), 1);
  gate.Note(1, 300, 0);  // an older count arriving late changes nothing
  EXPECT_FALSE(gate.Holds(500, 0, all_live));
  // A silent neighbour holds no one; nor does one that finished or left.
  EXPECT_FALSE(gate.Holds(501, 0, [](int j) { return j != 1; }));
  gate.Release(1);
  gate.Note(1, 10, 0);
  EXPECT_FALSE(gate.Holds(1000, 0, all_live));
  EXPECT_TRUE(gate.Holds(1051, 0, all_live));  // node 2 at 950
  // A count not renewed for longer than the stale time holds no one (its sender is not
  // stepping); a new count makes it hold again.
  EXPECT_TRUE(gate.Holds(1051, 3000, all_live));
  EXPECT_FALSE(gate.Holds(1051, 3001, all_live));
  gate.Note(2, 951, 5000);
  EXPECT_TRUE(gate.Holds(1052, 5000, all_live));
}

// Nodes on a path, each stepping only when not held, the slowest first: every node always has a
// step it may take or someone it waits for who may (no deadlock), and the spread stays within
// window * (distance).
TEST(ProgressGate, TheSlowestNeverWaitsSoThePathAdvances) {
  const int n = 5;
  std::vector<ProgressGate> gates(n, ProgressGate(10));
  std::vector<int64_t> steps(n, 0);
  for (int round = 0; round < 2000; ++round) {
    const int i = (round * 7) % n == 0 ? 0 : (round * 3) % n;  // node 0 gets more turns
    const auto live = [](int) { return true; };
    if (gates[i].Holds(steps[i], 0, live)) continue;
    ++steps[i];
    for (int j : {i - 1, i + 1}) {
      if (j >= 0 && j < n) gates[j].Note(i, steps[i], 0);
    }
    int64_t lo = steps[0], hi = steps[0];
    for (int64_t s : steps) lo = std::min(lo, s), hi = std::max(hi, s);
    ASSERT_LE(hi - lo, 11 * (n - 1)) << "round " << round;
  }
  for (int64_t s : steps) EXPECT_GT(s, 0);
}

TEST(ProgressGate, CountsFromTheNetworkAreParsedStrictly) {
  EXPECT_EQ(ProgressGate::Parse(ProgressGate::Text(0)), 0);
  EXPECT_EQ(ProgressGate::Parse(ProgressGate::Text(123456)), 123456);
  for (const char* bad : {"progress:", "progress:-1", "progress:1x", "progress: 1", "progress",
                          "progress:1234567890123456", "finished", ""}) {
    EXPECT_FALSE(ProgressGate::Parse(bad).has_value()) << bad;
  }
}

// The automatic window, by hand: 4000/40 = 100 on a complete graph; 8H when that is larger; on a
// ring of 16 (diameter 8) 20000/(40 x 8) = 62 per edge, so that the whole ring stays within
// 8 x 62 = 496 <= 20000/40 steps of its slowest node.
TEST(ProgressGate, TheAutomaticWindowDividesTheSpreadByTheDiameter) {
  EXPECT_EQ(ProgressGate::WindowFor(4000, 1, 1), 100);
  EXPECT_EQ(ProgressGate::WindowFor(300, 1, 1), 8);
  EXPECT_EQ(ProgressGate::WindowFor(300, 4, 1), 32);
  EXPECT_EQ(ProgressGate::WindowFor(20000, 1, 8), 62);
  EXPECT_LE(8 * ProgressGate::WindowFor(20000, 1, 8), 20000 / 40);
  EXPECT_EQ(ProgressGate::WindowFor(20000, 4, 100), 32);  // 8H is the floor
  EXPECT_EQ(ProgressGate::WindowFor(4000, 1, 0), 100);    // a single node: diameter 0
}

TEST(ProgressGate, AnnouncesEveryQuarterWindow) {
  ProgressGate gate(100);
  std::set<int64_t> said;
  for (int64_t s = 0; s <= 200; ++s) {
    if (gate.AnnounceDue(s)) said.insert(s);
  }
  EXPECT_EQ(said, (std::set<int64_t>{0, 25, 50, 75, 100, 125, 150, 175, 200}));
}

}  // namespace
}  // namespace starling::node
