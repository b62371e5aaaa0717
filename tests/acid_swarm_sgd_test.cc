// A²CiD² (algorithms/pairwise/acid_swarm_sgd.h): with eta = 0 it is SwarmSGD bit
// for bit in both simulators; exchanges conserve the sum of models (and of momentum vectors);
// the mixing ODE against a fine Euler integration; the graph constants against the ring's
// closed forms; checkpoints.
#include "algorithms/pairwise/acid_swarm_sgd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "algorithms/problems/least_squares.h"
#include "net/fault_plan.h"
#include "node/config/run_setup.h"
#include "node/sim/faulty_pairwise_simulator.h"
#include "node/sim/pairwise_simulator.h"
#include "tests/temp_dir_test.h"
#include "tests/written_data.h"

namespace starling {
namespace {

using algorithms::AcidSwarmSgd;

class AcidTest : public testing::TempDirTest {
 protected:
  node::RunConfig Config(const std::string& algorithm) {
    node::RunConfig c;
    c.algorithm = algorithm;
    c.problem = "logistic";
    c.data = testing::WriteLogisticData(dir_ + "/l.txt", 400, 6, 13);
    c.format = "libsvm";
    c.nodes = 8;
    c.topology = "ring";
    c.seed = 3;
    c.l2 = 1e-3;
    c.batch = 4;
    c.local_steps = 2;
    c.step = 0.05;
    return c;
  }
};

TEST_F(AcidTest, WithEtaZeroItIsSwarmSgdBitForBit) {
  node::RunConfig swarm_config = Config("swarmsgd");
  node::RunConfig acid_config = Config("acid");
  acid_config.params.Set("acid-eta", 0.0);
  const node::RunSetup setup = node::BuildRunSetup(swarm_config);
  const auto swarm_options = node::PairwiseOptionsFor(swarm_config, setup);
  const auto acid_options = node::PairwiseOptionsFor(acid_config, setup);
  node::PairwiseSimulator swarm(setup.nodes, swarm_options, 11),
      acid(setup.nodes, acid_options, 11);
  for (int k = 0; k < 2000; ++k) {
    ASSERT_EQ(swarm.Activate(), acid.Activate());
  }
  for (int i = 0; i < swarm.num_nodes(); ++i) {
    EXPECT_TRUE(swarm.node(i).Model() == acid.node(i).Model()) << "node " << i;
    EXPECT_EQ(swarm.node(i).counters().exchanges_served, acid.node(i).counters().exchanges_served);
  }
  EXPECT_EQ(acid.node(0).name(), "acid");
  // Not vacuous: with the graph's eta the same run differs.
  node::RunConfig momentum_config = Config("acid");
  node::PairwiseSimulator swarm2(setup.nodes, swarm_options, 11),
      momentum(setup.nodes, node::PairwiseOptionsFor(momentum_config, setup), 11);
  for (int k = 0; k < 2000; ++k) {
    swarm2.Activate();
    momentum.Activate();
  }
  EXPECT_FALSE(swarm2.node(0).Model() == momentum.node(0).Model());
  // And over a faulty network (late replies merged from kept snapshots, lost ones).
  net::FaultPlan plan;
  plan.defaults.loss = 0.1;
  plan.defaults.dup = 0.1;
  plan.defaults.jitter = 3;
  node::FaultyPairwiseSimulator fs(setup.nodes, swarm_options, 5, plan),
      fa(setup.nodes, acid_options, 5, plan);
  fs.RunUntilLocalSteps(400);
  fa.RunUntilLocalSteps(400);
  ASSERT_GT(fa.counters().merged_late, 0);
  for (int i = 0; i < fs.num_nodes(); ++i) {
    EXPECT_TRUE(fs.node(i).Model() == fa.node(i).Model()) << "faulty, node " << i;
  }
}

TEST_F(AcidTest, WithMomentumItDiffersAndExchangesConserveTheSums) {
  const node::RunConfig config = Config("acid");
  const node::RunSetup setup = node::BuildRunSetup(config);
  const auto options = node::PairwiseOptionsFor(config, setup);
  std::vector<std::unique_ptr<algorithms::PairwiseAlgorithm>> nodes;
  for (const auto& s : setup.nodes) nodes.push_back(algorithms::MakePairwiseAlgorithm(options, s));
  const auto& acid0 = dynamic_cast<const AcidSwarmSgd&>(*nodes[0]);
  EXPECT_GT(acid0.eta(), 0.0);
  const auto sums = [&] {
    Vec x = Vec::Zero(6), t = Vec::Zero(6);
    for (const auto& a : nodes) {
      x += a->Model();
      t += dynamic_cast<const AcidSwarmSgd&>(*a).momentum();
    }
    return std::make_pair(x, t);
  };
  std::mt19937_64 rng(2);
  double worst_x = 0, worst_t = 0;
  for (uint64_t k = 1; k <= 1000; ++k) {
    const int i = static_cast<int>(rng() % nodes.size());
    do nodes[i]->LocalStep();
    while (!nodes[i]->WantsExchange());
    const int j = setup.nodes[i].neighbors[rng() % 2];
    const auto [x0, t0] = sums();
    const Vec offer = *nodes[i]->BeginExchange(j, k);
    const Vec reply = *nodes[j]->Respond(i, offer);
    ASSERT_TRUE(nodes[i]->CompleteExchange(k, reply));
    const auto [x1, t1] = sums();
    worst_x = std::max(worst_x, (x1 - x0).norm() / x0.norm());
    worst_t = std::max(worst_t, (t1 - t0).norm() / t0.norm());
  }
  std::printf("largest relative change of sum x by an exchange %.3g, of sum x~ %.3g\n", worst_x,
              worst_t);
  EXPECT_LE(worst_x, 1e-14);
  EXPECT_LE(worst_t, 1e-14);
  // The momentum did something: x~ and x apart, and the run differs from SwarmSGD's.
  EXPECT_GT((acid0.momentum() - acid0.Model()).norm(), 1e-6);
}

// Two nodes, a step so small that gradients change nothing: after one exchange, k local steps
// only run the ODE. Compared with an explicit Euler integration of d[x; x~]/dt = eta M [x; x~].
TEST_F(AcidTest, MixingIsTheExactSolutionOfTheOde) {
  algorithms::Dataset data;
  data.num_features = 2;
  data.dense = Eigen::MatrixXd::Ones(3, 2);
  data.labels = Vec::Ones(3);
  algorithms::LeastSquares problem(data, 0.0, 1.0);
  algorithms::NodeSetup a_setup, b_setup;
  a_setup.id = 0;
  a_setup.neighbors = {1};
  a_setup.problem = &problem;
  a_setup.x0 = Vec::Constant(2, 1.0);
  b_setup = a_setup;
  b_setup.id = 1;
  b_setup.neighbors = {0};
  b_setup.x0 = Vec::Constant(2, -3.0);
  const double eta = 0.3, beta = 0.7;
  const algorithms::ScheduledStep tiny{1e-300, {}};
  AcidSwarmSgd a(a_setup, tiny, 1, 1, eta, beta), b(b_setup, tiny, 1, 1, eta, beta);
  const Vec reply = *b.Respond(0, *a.BeginExchange(1, 1));
  ASSERT_TRUE(a.CompleteExchange(1, reply));
  // a: x~ = 1 + 0.7 (-3 - 1) = -1.8, x = -1.
  EXPECT_DOUBLE_EQ(a.momentum()[0], -1.8);
  EXPECT_DOUBLE_EQ(a.Model()[0], -1.0);
  const int k = 7;
  for (int s = 0; s < k; ++s) a.LocalStep();
  double x = -1.0, t = -1.8;
  const int euler = 1000000;
  const double h = eta * k / euler;
  for (int s = 0; s < euler; ++s) {
    const double dx = h * (t - x), dt = h * (x - t);
    x += dx;
    t += dt;
  }
  EXPECT_NEAR(a.Model()[0], x, 1e-5);
  EXPECT_NEAR(a.momentum()[0], t, 1e-5);
  EXPECT_DOUBLE_EQ(a.Model()[0] + a.momentum()[0], -2.8);  // x + x~ is conserved
}

// On a ring of n with H = 1, L is the unit-weight ring Laplacian (rate 1/2 + 1/2 per edge):
// lambda_2 = 2 (1 - cos(2 pi / n)), and an edge's resistance is (n - 1)/n, chi2 half of it.
TEST(AcidConstants, RingClosedForms) {
  for (int n : {5, 16}) {
    std::vector<std::vector<int>> ring(n);
    for (int i = 0; i < n; ++i) ring[i] = {(i + n - 1) % n, (i + 1) % n};
    const algorithms::AcidConstants c = algorithms::AcidConstantsOf(ring, 1);
    const double pi = std::acos(-1.0);
    EXPECT_NEAR(c.chi1, 1.0 / (2.0 * (1.0 - std::cos(2.0 * pi / n))), 1e-10);
    EXPECT_NEAR(c.chi2, 0.5 * (n - 1.0) / n, 1e-12);
    EXPECT_NEAR(c.eta, 0.5 / std::sqrt(c.chi1 * c.chi2), 1e-12);
    EXPECT_NEAR(c.beta_tilde, 0.5 * std::sqrt(c.chi1 / c.chi2), 1e-12);
    // H = 2 halves the rates: chi1 and chi2 double.
    const algorithms::AcidConstants c2 = algorithms::AcidConstantsOf(ring, 2);
    EXPECT_NEAR(c2.chi1, 2 * c.chi1, 1e-9);
    EXPECT_NEAR(c2.chi2, 2 * c.chi2, 1e-12);
  }
  EXPECT_THROW(algorithms::AcidConstantsOf({{1}, {0}, {3}, {2}}, 1), std::invalid_argument);
}

TEST_F(AcidTest, CheckpointRoundTripContinuesBitForBit) {
  const node::RunConfig config = Config("acid");
  const node::RunSetup setup = node::BuildRunSetup(config);
  const auto options = node::PairwiseOptionsFor(config, setup);
  auto a = algorithms::MakePairwiseAlgorithm(options, setup.nodes[0]);
  auto b = algorithms::MakePairwiseAlgorithm(options, setup.nodes[1]);
  auto run = [](algorithms::PairwiseAlgorithm* x, algorithms::PairwiseAlgorithm* y, uint64_t seq0) {
    for (uint64_t k = 0; k < 6; ++k) {
      for (int s = 0; s < 3; ++s) x->LocalStep();
      y->LocalStep();
      const Vec reply = *y->Respond(0, *x->BeginExchange(1, seq0 + k));
      ASSERT_TRUE(x->CompleteExchange(seq0 + k, reply));
    }
  };
  run(a.get(), b.get(), 1);
  algorithms::AlgorithmState sa, sb;
  ASSERT_TRUE(a->SaveState(&sa));
  ASSERT_TRUE(b->SaveState(&sb));
  auto a2 = algorithms::MakePairwiseAlgorithm(options, setup.nodes[0]);
  auto b2 = algorithms::MakePairwiseAlgorithm(options, setup.nodes[1]);
  a2->LoadState(sa);
  b2->LoadState(sb);
  run(a.get(), b.get(), 50);
  run(a2.get(), b2.get(), 50);
  EXPECT_TRUE(a->Model() == a2->Model());
  EXPECT_TRUE(dynamic_cast<const AcidSwarmSgd&>(*a).momentum() ==
              dynamic_cast<const AcidSwarmSgd&>(*a2).momentum());
  EXPECT_TRUE(b->Model() == b2->Model());
  // A SwarmSGD checkpoint is not an A2CiD2 one.
  node::RunConfig swarm_config = Config("swarmsgd");
  auto swarm = algorithms::MakePairwiseAlgorithm(node::PairwiseOptionsFor(swarm_config, setup),
                                                 setup.nodes[0]);
  algorithms::AlgorithmState ss;
  ASSERT_TRUE(swarm->SaveState(&ss));
  EXPECT_THROW(a2->LoadState(ss), std::invalid_argument);
}

}  // namespace
}  // namespace starling
