// FinishWave (node/daemon/finish_wave.h): a node concludes that every node has done its budget
// only when every node has (safety), and once every node has and the levels have been passed on,
// every node concludes it and knows that its neighbours do (liveness). Checked against the
// definition (the set of finished nodes), on several graphs and random finishing orders, with
// messages delivered in random order.
#include "node/daemon/finish_wave.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <numeric>
#include <random>
#include <vector>

#include "topology/generators.h"

namespace starling::node {
namespace {

struct Message {
  int from, to, level;
};

// Finishes the nodes in a random order, delivering the level messages (each node says its new
// level to every neighbour when it rises) in random order in between.
void CheckWave(const topology::Graph& graph, uint64_t seed) {
  const int n = graph.num_nodes();
  std::vector<FinishWave> waves;
  for (int i = 0; i < n; ++i) waves.emplace_back(graph, i);
  std::vector<bool> finished(n, false);
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<Message> in_flight;
  auto say = [&](int i) {
    const std::optional<int> level = waves[i].ParseBye(waves[i].ByeText());
    ASSERT_TRUE(level.has_value()) << waves[i].ByeText();
    ASSERT_EQ(*level, waves[i].level());
    for (int j : graph.Neighbors(i)) in_flight.push_back({i, j, *level});
  };
  auto deliver_some = [&](size_t count) {
    for (size_t k = 0; k < count && !in_flight.empty(); ++k) {
      const size_t at = rng() % in_flight.size();
      const Message m = in_flight[at];
      in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(at));
      if (waves[m.to].NoteLevel(m.from, m.level)) say(m.to);
    }
  };
  auto check_safety = [&]() {
    const bool all = std::all_of(finished.begin(), finished.end(), [](bool f) { return f; });
    for (int i = 0; i < n; ++i) {
      if (waves[i].AllFinished()) {
        ASSERT_TRUE(all) << "node " << i << " concluded too early (seed " << seed << ")";
      }
    }
  };
  for (int i : order) {
    EXPECT_FALSE(waves[i].AllFinished() && n > 1);
    finished[i] = true;
    if (waves[i].SetFinished()) say(i);
    check_safety();
    deliver_some(rng() % (in_flight.size() + 1));
    check_safety();
  }
  deliver_some(SIZE_MAX);
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(waves[i].AllFinished()) << "node " << i << " level " << waves[i].level();
    EXPECT_TRUE(waves[i].NeighboursAllFinished()) << "node " << i;
  }
}

TEST(FinishWave, ConcludesOnlyWhenEveryNodeHasFinishedAndThenEverywhere) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    CheckWave(topology::Ring(9), seed);
    CheckWave(topology::Torus(3, 4), seed);
    CheckWave(topology::Star(6), seed);
    CheckWave(topology::Complete(5), seed);
    CheckWave(topology::ErdosRenyi(12, 0.3, seed), seed);
  }
}

TEST(FinishWave, ADiameterFromBreadthFirstSearch) {
  EXPECT_EQ(ComponentDiameter(topology::Ring(9), 0), 4);
  EXPECT_EQ(ComponentDiameter(topology::Ring(8), 3), 4);
  EXPECT_EQ(ComponentDiameter(topology::Star(6), 2), 2);
  EXPECT_EQ(ComponentDiameter(topology::Complete(5), 1), 1);
  EXPECT_EQ(ComponentDiameter(topology::Torus(3, 4), 0), 3);  // 1 + 2 hops
}

TEST(FinishWave, ANeighbourThatNeverCameUpHoldsTheWaveAndOneThatLeftDoesNot) {
  const topology::Graph ring = topology::Ring(4);  // 0-1-2-3-0
  FinishWave w(ring, 0);
  EXPECT_FALSE(w.SetFinished() && w.AllFinished());
  for (int k = 0; k < 10; ++k) w.NoteLevel(1, 3);
  EXPECT_FALSE(w.AllFinished());  // node 3 was never heard of: level 0
  EXPECT_EQ(w.level(), 1);
  w.NoteGone(3);
  EXPECT_EQ(w.level(), 3);  // 1 + min(3, gone), capped at D + 1 = 3
  EXPECT_TRUE(w.AllFinished());
}

TEST(FinishWave, ByeTextsFromTheNetworkAreParsedStrictly) {
  const FinishWave w(topology::Ring(6), 0);  // D = 3: levels 1..4
  EXPECT_EQ(w.ParseBye("finished"), 1);
  EXPECT_EQ(w.ParseBye("finished:2"), 2);
  EXPECT_EQ(w.ParseBye("finished:4"), 4);
  for (const char* bad : {"finished:5", "finished:0", "finished:", "finished:2x", "finished:-1",
                          "finished 2", "finishe", "finished:99999999999999", "gave up", ""}) {
    EXPECT_FALSE(w.ParseBye(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace starling::node
