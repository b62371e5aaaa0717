// SlowMo over SwarmSGD (algorithms/pairwise/slowmo_swarm_sgd.h): two nodes driven through a fixed
// script of local steps and one exchange, against the same script computed here from the update
// rules; beta 0, alpha 1 against plain SwarmSGD bit for bit; a checkpoint taken mid-period; and
// starlingd processes running it to the centralized test accuracy.
#include "algorithms/pairwise/slowmo_swarm_sgd.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/pairwise/swarm_sgd.h"
#include "tests/daemon_cluster.h"
#include "tests/fake_quadratic.h"
#include "tests/test_data.h"
#include "topology/generators.h"

namespace starling {
namespace {

using algorithms::NodeSetup;
using algorithms::PairwiseAlgorithm;
using algorithms::SlowMoSwarmParams;
using algorithms::SlowMoSwarmSgd;
using testing::FakeQuadratic;

struct TwoNodes {
  FakeQuadratic fa{Vec::Constant(3, 1.5), Vec::LinSpaced(3, -1.0, 1.0)};
  FakeQuadratic fb{Vec::LinSpaced(3, 0.5, 2.0), Vec::Constant(3, 0.3)};
  NodeSetup a, b;
  TwoNodes() {
    a.id = 0;
    a.neighbors = {1};
    a.problem = &fa;
    a.x0 = Vec::Constant(3, 0.2);
    b.id = 1;
    b.neighbors = {0};
    b.problem = &fb;
    b.x0 = Vec::LinSpaced(3, -0.5, 0.5);
  }
};

constexpr double kStep = 0.1;
constexpr int kTau = 2;

// The script: A steps twice (its first outer step), offers, B answers, A steps once, merges the
// reply, steps once (its second outer step); B steps three times (its first outer step after two).
void RunScript(PairwiseAlgorithm* a, PairwiseAlgorithm* b) {
  a->LocalStep();
  a->LocalStep();
  const std::shared_ptr<const Vec> offer = a->BeginExchange(1, 1);
  const std::shared_ptr<const Vec> reply = b->Respond(0, *offer);
  a->LocalStep();
  ASSERT_TRUE(a->CompleteExchange(1, *reply));
  a->LocalStep();
  for (int s = 0; s < 3; ++s) b->LocalStep();
}

std::unique_ptr<SlowMoSwarmSgd> Make(const NodeSetup& s, double beta, double alpha) {
  SlowMoSwarmParams p;
  p.tau = kTau;
  p.beta = beta;
  p.alpha = alpha;
  return std::make_unique<SlowMoSwarmSgd>(s, algorithms::ScheduledStep{kStep, {}},
                                          /*batch_size=*/0, /*local_steps=*/kTau, p);
}

TEST(SlowMoSwarmSgd, EqualsTheScriptComputedFromItsRules) {
  TwoNodes net;
  const double beta = 0.6, alpha = 1.3;
  auto a = Make(net.a, beta, alpha);
  auto b = Make(net.b, beta, alpha);
  RunScript(a.get(), b.get());

  auto step = [&](const FakeQuadratic& f, Vec* x) {
    Vec g;
    f.Gradient(*x, &g);
    *x -= kStep * g;
  };
  auto outer = [&](Vec* x, Vec* x0, Vec* u) {
    *u = beta * *u + (*x0 - *x) / kStep;
    *x = *x0 - alpha * kStep * *u;
    *x0 = *x;
  };
  Vec xa = net.a.x0, xb = net.b.x0, a0 = xa, b0 = xb;
  Vec ua = Vec::Zero(3), ub = Vec::Zero(3);
  step(net.fa, &xa);
  step(net.fa, &xa);
  outer(&xa, &a0, &ua);
  const Vec sa = xa, sb = xb;  // the offer and the reply snapshots
  xb += 0.5 * (sa - sb);       // B merges as responder
  step(net.fa, &xa);
  xa += 0.5 * (sb - sa);  // A merges the reply, keeping its step since the snapshot
  step(net.fa, &xa);
  outer(&xa, &a0, &ua);
  step(net.fb, &xb);
  step(net.fb, &xb);
  outer(&xb, &b0, &ub);
  step(net.fb, &xb);

  EXPECT_LT((a->Model() - xa).norm(), 1e-12 * (1 + xa.norm()));
  EXPECT_LT((b->Model() - xb).norm(), 1e-12 * (1 + xb.norm()));
  EXPECT_GT(ua.norm(), 0.0);
  EXPECT_EQ(a->counters().local_steps, 4);
  EXPECT_EQ(a->counters().exchanges_initiated, 1);
  EXPECT_EQ(b->counters().exchanges_served, 1);
}

TEST(SlowMoSwarmSgd, BetaZeroAlphaOneIsSwarmSgdBitForBit) {
  TwoNodes net;
  auto a = Make(net.a, 0.0, 1.0);
  auto b = Make(net.b, 0.0, 1.0);
  algorithms::SwarmSgd pa(net.a, algorithms::ScheduledStep{kStep, {}}, 0, kTau);
  algorithms::SwarmSgd pb(net.b, algorithms::ScheduledStep{kStep, {}}, 0, kTau);
  RunScript(a.get(), b.get());
  RunScript(&pa, &pb);
  EXPECT_EQ(a->Model(), pa.Model());
  EXPECT_EQ(b->Model(), pb.Model());
}

// Stopped after 3 local steps (mid-period, after one outer step), saved and loaded into a fresh
// node, it continues as the uninterrupted one; another method's state is refused.
TEST(SlowMoSwarmSgd, ResumesFromItsStateBitForBit) {
  TwoNodes net;
  auto uninterrupted = Make(net.a, 0.5, 1.2);
  auto first = Make(net.a, 0.5, 1.2);
  for (int s = 0; s < 3; ++s) {
    uninterrupted->LocalStep();
    first->LocalStep();
  }
  algorithms::AlgorithmState state;
  ASSERT_TRUE(first->SaveState(&state));
  EXPECT_EQ(state.algorithm, "slowmo-swarmsgd");
  auto resumed = Make(net.a, 0.5, 1.2);
  resumed->LoadState(state);
  for (int s = 0; s < 5; ++s) {
    uninterrupted->LocalStep();
    resumed->LocalStep();
  }
  EXPECT_EQ(resumed->Model(), uninterrupted->Model());
  algorithms::SwarmSgd plain(net.a, algorithms::ScheduledStep{kStep, {}}, 0, kTau);
  algorithms::AlgorithmState other;
  plain.SaveState(&other);
  EXPECT_THROW(resumed->LoadState(other), std::invalid_argument);
}

// The pairwise daemon is not deterministic, so no equality with the simulator: 4 starlingd
// processes on a ring reach the centralized model's test accuracy on a held-out part of a9a, as
// SwarmSGD does in tests/daemon_integration_test.
TEST(SlowMoSwarmSgdDaemon, ReachesTheCentralizedTestAccuracy) {
  const std::string a9a = testing::SharedData("a9a");
  if (!std::filesystem::exists(a9a)) GTEST_SKIP() << "no a9a at " << a9a;
  const std::string dir = testing::FreshTempDir("slowmo-swarm");
  const testing::A9aSplit split = testing::SplitA9a(a9a, dir);
  const int n = 4;
  const std::string cluster =
      testing::WriteLoopbackCluster(dir, topology::Ring(n), testing::PortBase() + 5, /*keys=*/true);
  const std::vector<std::string> args = {"--algorithm",
                                         "slowmo-swarmsgd",
                                         "--problem",
                                         "logistic",
                                         "--l2",
                                         "1e-4",
                                         "--data",
                                         split.train,
                                         "--test-data",
                                         split.test,
                                         "--format",
                                         "libsvm",
                                         "--features",
                                         "123",
                                         "--partition",
                                         "iid",
                                         "--iterations",
                                         "2000",
                                         "--batch",
                                         "16",
                                         "--local-steps",
                                         "2",
                                         "--seed",
                                         "3",
                                         "--swarm-slowmo-tau",
                                         "8",
                                         "--swarm-slowmo-beta",
                                         "0.5"};
  const std::vector<Vec> models = testing::RunLoopbackDaemons(dir, cluster, n, args, 180);
  const testing::A9aOutcome r = testing::EvaluateOnA9a(split, 1e-4, models);
  std::printf("slowmo-swarmsgd test accuracy %.4f, centralized %.4f, consensus %.3g\n", r.accuracy,
              r.reference_accuracy, r.consensus);
  EXPECT_GE(r.accuracy, r.reference_accuracy - 0.01);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace starling
