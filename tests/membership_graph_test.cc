// topology::MembershipGraph: the links a run's graph makes when members leave and join stay
// connected and keep the degrees (a ring stays a ring).
#include "topology/membership_graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

namespace starling {
namespace {

std::vector<std::vector<int>> Ring(int n) {
  std::vector<std::vector<int>> g(n);
  for (int i = 0; i < n; ++i) g[i] = {(i + n - 1) % n, (i + 1) % n};
  return g;
}

TEST(MembershipGraph, ALeaverInARingLinksItsTwoNeighbours) {
  topology::MembershipGraph g(Ring(8));
  const auto made = g.Leave(3);
  ASSERT_EQ(made.size(), 1u);
  EXPECT_EQ(made[0], std::make_pair(2, 4));
  EXPECT_EQ(g.neighbors(2), (std::vector<int>{1, 4}));
  EXPECT_TRUE(g.neighbors(3).empty());
  EXPECT_EQ(g.num_members(), 7);
  EXPECT_TRUE(g.Connected());
}

TEST(MembershipGraph, AJoinerSplicesItselfIntoALink) {
  topology::MembershipGraph g(Ring(8));
  g.Leave(3);
  const std::vector<int> linked = g.Join(3);
  ASSERT_EQ(linked.size(), 2u);
  // The two ends were linked before; now each reaches the other through the joiner only.
  EXPECT_EQ(g.degree(linked[0]), 2);
  EXPECT_EQ(g.degree(linked[1]), 2);
  EXPECT_TRUE(g.Connected());
}

// 400 seeded leaves and joins on a ring of 16, down to 3 members and back: every member keeps
// degree 2 and the graph stays connected throughout.
TEST(MembershipGraph, ARingStaysARingUnderChurn) {
  const int n = 16;
  topology::MembershipGraph g(Ring(n));
  std::mt19937_64 rng(3);
  for (int k = 0; k < 400; ++k) {
    const int v = static_cast<int>(rng() % n);
    if (g.member(v)) {
      if (g.num_members() <= 3) continue;
      g.Leave(v);
    } else {
      g.Join(v);
    }
    ASSERT_TRUE(g.Connected()) << "after event " << k;
    for (int u = 0; u < n; ++u) {
      if (g.member(u)) {
        ASSERT_EQ(g.degree(u), 2) << "node " << u << " after event " << k;
      }
    }
  }
}

// An irregular graph (a ring with chords): connected after every event. (Its degrees are not
// bounded by this rule: a chain's inner nodes gain a link at each leave.)
TEST(MembershipGraph, AnIrregularGraphStaysConnected) {
  const int n = 20;
  std::vector<std::vector<int>> adj = Ring(n);
  for (int i = 0; i < n; i += 3) {
    const int j = (i + n / 2) % n;
    adj[i].push_back(j);
    adj[j].push_back(i);
  }
  topology::MembershipGraph g(adj);
  std::mt19937_64 rng(9);
  for (int k = 0; k < 400; ++k) {
    const int v = static_cast<int>(rng() % n);
    if (g.member(v)) {
      if (g.num_members() <= 4) continue;
      g.Leave(v);
    } else {
      g.Join(v);
    }
    ASSERT_TRUE(g.Connected()) << "after event " << k;
    for (int u = 0; u < n; ++u) {
      if (g.member(u)) {
        ASSERT_GE(g.degree(u), 1) << "node " << u << " after event " << k;
      }
    }
  }
}

TEST(MembershipGraph, RefusesWhatDoesNotFit) {
  topology::MembershipGraph g(Ring(4));
  EXPECT_THROW(g.Join(1), std::invalid_argument);  // a member already
  g.Leave(1);
  EXPECT_THROW(g.Leave(1), std::invalid_argument);  // not a member
  EXPECT_THROW(g.Leave(7), std::invalid_argument);  // no such slot
  using Lists = std::vector<std::vector<int>>;
  EXPECT_THROW(topology::MembershipGraph(Lists{{1}, {}}), std::invalid_argument);  // asymmetric
  EXPECT_THROW(topology::MembershipGraph(Lists{{0}}), std::invalid_argument);      // a self-link
}

}  // namespace
}  // namespace starling
