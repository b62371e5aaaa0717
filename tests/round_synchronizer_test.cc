// The round synchronizer over an unreliable in-memory network (reordering, duplication, loss
// repaired by RESEND) must give exactly the lockstep simulator's iterates.
#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "algorithms/round/round_algorithm.h"
#include "node/config/run_setup.h"
#include "node/drivers/round_synchronizer.h"
#include "node/sim/round_simulator.h"
#include "tests/fake_quadratic.h"
#include "topology/generators.h"
#include "topology/mixing.h"

namespace starling {
namespace {

using algorithms::NodeSetup;
using algorithms::StepKey;
using node::RoundSynchronizer;

struct Message {
  int from, to;
  StepKey key;
  Vec payload;
};

struct Fixture {
  std::vector<std::unique_ptr<testing::FakeQuadratic>> problems;
  std::vector<NodeSetup> setups;
};

Fixture MakeFixture(const topology::Graph& g, int dim) {
  Fixture f;
  const Eigen::MatrixXd w = topology::MetropolisHastings(g);
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  for (int i = 0; i < g.num_nodes(); ++i) {
    Vec d(dim), b(dim);
    for (int k = 0; k < dim; ++k) d[k] = u(rng), b[k] = u(rng) - 1.2;
    f.problems.push_back(std::make_unique<testing::FakeQuadratic>(d, b));
  }
  for (int i = 0; i < g.num_nodes(); ++i) {
    NodeSetup s = node::NodeSetupOf(g, w, i);
    s.problem = f.problems[i].get();
    s.x0 = Vec::Constant(dim, i);
    f.setups.push_back(s);
  }
  return f;
}

// Runs every node to `iterations` over a network that reorders, duplicates and drops messages
// with the given probabilities; returns the final models.
std::vector<Vec> RunUnreliable(const Fixture& f, const algorithms::RoundOptions& options,
                               int64_t iterations, double p_dup, double p_drop, uint64_t seed,
                               int64_t* resends) {
  const int n = static_cast<int>(f.setups.size());
  std::vector<std::unique_ptr<RoundSynchronizer>> nodes;
  for (const auto& s : f.setups) {
    nodes.push_back(
        std::make_unique<RoundSynchronizer>(algorithms::MakeRoundAlgorithm(options, s), s));
  }
  std::deque<Message> wire;
  auto broadcast = [&](int i) {
    if (nodes[i]->algorithm().iteration() >= iterations) return;
    for (int j : f.setups[i].neighbors) {
      wire.push_back({i, j, nodes[i]->key(), nodes[i]->Outgoing()});
    }
  };
  for (int i = 0; i < n; ++i) broadcast(i);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  auto done = [&]() {
    for (const auto& node : nodes) {
      if (node->algorithm().iteration() < iterations) return false;
    }
    return true;
  };
  *resends = 0;
  while (!done()) {
    if (wire.empty()) {
      // Every wait has a deadline: a node still waiting asks its missing neighbours again.
      for (int i = 0; i < n; ++i) {
        if (nodes[i]->algorithm().iteration() >= iterations) continue;
        for (int j : nodes[i]->Waiting()) {
          ++*resends;
          if (const Vec* p = nodes[j]->PayloadFor(nodes[i]->key())) {
            wire.push_back({j, i, nodes[i]->key(), *p});
          }
        }
      }
      continue;
    }
    const size_t pick = rng() % wire.size();
    Message m = wire[pick];
    if (coin(rng) >= p_dup) wire.erase(wire.begin() + static_cast<long>(pick));
    if (coin(rng) < p_drop) continue;
    const auto verdict = nodes[m.to]->OnPayload(m.from, m.key, m.payload);
    EXPECT_NE(verdict, RoundSynchronizer::Verdict::kTooFarAhead);
    EXPECT_NE(verdict, RoundSynchronizer::Verdict::kNotNeighbor);
    while (nodes[m.to]->algorithm().iteration() < iterations && nodes[m.to]->ReadyToAdvance()) {
      EXPECT_TRUE(nodes[m.to]->Advance());
      broadcast(m.to);
    }
  }
  std::vector<Vec> models;
  for (const auto& node : nodes) models.push_back(node->algorithm().Model());
  return models;
}

class SynchronizerTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SynchronizerTest, UnreliableNetworkGivesTheLockstepIteratesBitForBit) {
  const Fixture f = MakeFixture(topology::ErdosRenyi(9, 0.35, 5), 3);
  algorithms::RoundOptions options;
  options.algorithm = GetParam();
  options.step = 0.2;
  if (options.algorithm == "dpsgd") options.batch_size = 1;
  const int64_t iterations = 60;

  node::RoundSimulator reference(f.setups, options);
  reference.RunUntilIteration(iterations);

  int64_t resends = 0;
  for (uint64_t seed : {1, 2, 3}) {
    const std::vector<Vec> models = RunUnreliable(f, options, iterations, 0.1, 0.1, seed, &resends);
    for (int i = 0; i < reference.num_nodes(); ++i) {
      ASSERT_EQ(models[i], reference.node(i).Model()) << "node " << i << " seed " << seed;
    }
  }
  EXPECT_GT(resends, 0) << "the test should exercise lost messages";
}

INSTANTIATE_TEST_SUITE_P(Algorithms, SynchronizerTest,
                         ::testing::Values("dgd", "dpsgd", "gradient-tracking", "extra"));

TEST(RoundSynchronizer, ClassifiesMessages) {
  const Fixture f = MakeFixture(topology::Ring(4), 2);
  algorithms::RoundOptions options;
  options.algorithm = "dgd";
  options.step = 0.1;
  RoundSynchronizer sync(algorithms::MakeRoundAlgorithm(options, f.setups[0]), f.setups[0]);
  // Node 0 on a 4-ring has neighbours 1 and 3.
  EXPECT_EQ(sync.Waiting(), (std::vector<int>{1, 3}));
  const Vec v = Vec::Ones(2);
  EXPECT_EQ(sync.OnPayload(2, {0, 0, 0}, v), RoundSynchronizer::Verdict::kNotNeighbor);
  EXPECT_EQ(sync.OnPayload(1, {0, 0, 0}, v), RoundSynchronizer::Verdict::kStored);
  EXPECT_EQ(sync.OnPayload(1, {0, 0, 0}, v), RoundSynchronizer::Verdict::kDuplicate);
  EXPECT_EQ(sync.OnPayload(1, {1, 0, 0}, v), RoundSynchronizer::Verdict::kStored);
  EXPECT_EQ(sync.OnPayload(1, {2, 0, 0}, v), RoundSynchronizer::Verdict::kTooFarAhead);
  EXPECT_FALSE(sync.ReadyToAdvance());
  EXPECT_EQ(sync.Waiting(), (std::vector<int>{3}));
  // A payload of the wrong size is dropped at Advance and waited for again.
  EXPECT_EQ(sync.OnPayload(3, {0, 0, 0}, Vec::Ones(5)), RoundSynchronizer::Verdict::kStored);
  ASSERT_TRUE(sync.ReadyToAdvance());
  EXPECT_FALSE(sync.Advance());
  EXPECT_EQ(sync.Waiting(), (std::vector<int>{3}));
  EXPECT_EQ(sync.OnPayload(3, {0, 0, 0}, v), RoundSynchronizer::Verdict::kStored);
  ASSERT_TRUE(sync.Advance());
  EXPECT_EQ(sync.key(), (StepKey{1, 0, 0}));
  // Neighbour 1's early key-1 payload moved into the current slot.
  EXPECT_EQ(sync.Waiting(), (std::vector<int>{3}));
  EXPECT_NE(sync.PayloadFor({0, 0, 0}), nullptr);
  EXPECT_NE(sync.PayloadFor({1, 0, 0}), nullptr);
  EXPECT_EQ(sync.PayloadFor({5, 0, 0}), nullptr);
  EXPECT_EQ(sync.OnPayload(1, {0, 0, 0}, v), RoundSynchronizer::Verdict::kDuplicate);
}

}  // namespace
}  // namespace starling
