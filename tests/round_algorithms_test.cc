// Unit tests of the round-based algorithms as pure state machines, on fake quadratic objectives
// whose optimum and matrix-form iterates the tests compute independently.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "algorithms/round/gradient_tracking.h"
#include "algorithms/round/neighbor_mix.h"
#include "algorithms/round/round_algorithm.h"
#include "node/config/run_setup.h"
#include "node/sim/round_simulator.h"
#include "tests/fake_quadratic.h"
#include "topology/generators.h"
#include "topology/mixing.h"

namespace starling {
namespace {

using algorithms::NodeSetup;
using algorithms::RoundOptions;
using testing::FakeQuadratic;

struct Network {
  topology::Graph graph;
  Eigen::MatrixXd w;
  std::vector<std::unique_ptr<FakeQuadratic>> problems;
  std::vector<NodeSetup> setups;
  Vec optimum;  // argmin sum_i f_i, in closed form
};

Network MakeNetwork(const topology::Graph& graph, int dim, uint64_t seed) {
  Network net;
  net.graph = graph;
  net.w = topology::MetropolisHastings(graph);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.5, 2.0), v(-1.0, 1.0);
  Vec diag_sum = Vec::Zero(dim), b_sum = Vec::Zero(dim);
  for (int i = 0; i < graph.num_nodes(); ++i) {
    Vec d(dim), b(dim);
    for (int k = 0; k < dim; ++k) {
      d[k] = u(rng);
      b[k] = v(rng);
    }
    diag_sum += d;
    b_sum += b;
    net.problems.push_back(std::make_unique<FakeQuadratic>(d, b));
  }
  net.optimum = b_sum.cwiseQuotient(diag_sum);
  for (int i = 0; i < graph.num_nodes(); ++i) {
    NodeSetup s = node::NodeSetupOf(graph, net.w, i);
    s.problem = net.problems[i].get();
    s.x0 = Vec::Constant(dim, 0.1 * i);
    s.seed = 100 + i;
    net.setups.push_back(s);
  }
  return net;
}

RoundOptions Options(const std::string& name, double step) {
  RoundOptions o;
  o.algorithm = name;
  o.step = step;
  return o;
}

double MaxDistance(const node::RoundSimulator& sim, const Vec& target) {
  double worst = 0.0;
  for (int i = 0; i < sim.num_nodes(); ++i) {
    worst = std::max(worst, (sim.node(i).Model() - target).lpNorm<Eigen::Infinity>());
  }
  return worst;
}

TEST(NeighborMix, SumsInAscendingIdOrderWithSelfInPlace) {
  NodeSetup s;
  s.id = 2;
  s.neighbors = {0, 5};
  s.neighbor_weights = {0.25, 0.5};
  s.self_weight = 0.25;
  Vec self(4), a(4), b(4), out;
  self << 1, 2, 3, 4;
  a << 10, 20, 30, 40;
  b << 100, 200, 300, 400;
  std::vector<const Vec*> inbox = {&a, &b};
  algorithms::MixSegment(s, self, inbox, 1, 2, &out);
  ASSERT_EQ(out.size(), 2);
  EXPECT_DOUBLE_EQ(out[0], 0.25 * 20 + 0.25 * 2 + 0.5 * 200);
  EXPECT_DOUBLE_EQ(out[1], 0.25 * 30 + 0.25 * 3 + 0.5 * 300);
}

TEST(RoundAlgorithms, ExtraConvergesToTheExactOptimum) {
  Network net = MakeNetwork(topology::Ring(8), 5, 1);
  node::RoundSimulator sim(net.setups, Options("extra", 0.4));
  sim.RunUntilIteration(3000);
  EXPECT_LT(MaxDistance(sim, net.optimum), 1e-10);
}

TEST(RoundAlgorithms, GradientTrackingConvergesAndKeepsItsInvariant) {
  Network net = MakeNetwork(topology::ErdosRenyi(10, 0.4, 3), 4, 2);
  node::RoundSimulator sim(net.setups, Options("gradient-tracking", 0.2));
  Vec g;
  for (int t = 0; t < 2000; ++t) {
    sim.Step();
    // sum_i y_i == sum_i grad f_i(x_i), exactly up to rounding.
    Vec tracker_sum = Vec::Zero(4), grad_sum = Vec::Zero(4);
    for (int i = 0; i < sim.num_nodes(); ++i) {
      const auto& gt = dynamic_cast<const algorithms::GradientTracking&>(sim.node(i));
      tracker_sum += gt.tracker();
      net.problems[i]->Gradient(gt.Model(), &g);
      grad_sum += g;
    }
    ASSERT_LT((tracker_sum - grad_sum).lpNorm<Eigen::Infinity>(), 1e-12) << "iteration " << t;
  }
  EXPECT_LT(MaxDistance(sim, net.optimum), 1e-10);
}

TEST(RoundAlgorithms, DgdStallsAtAStepSizeFloor) {
  Network net = MakeNetwork(topology::Ring(8), 3, 4);
  auto floor_for = [&](double step) {
    node::RoundSimulator sim(net.setups, Options("dgd", step));
    sim.RunUntilIteration(20000);
    return MaxDistance(sim, net.optimum);
  };
  const double big = floor_for(0.1), small = floor_for(0.01);
  // Constant-step DGD does not reach the optimum, and its error shrinks with the step.
  EXPECT_GT(big, 1e-4);
  EXPECT_GT(small, 1e-6);
  EXPECT_LT(small, big / 3);
}

// EXTRA in the simulator equals its matrix form, computed here from W directly.
TEST(RoundAlgorithms, ExtraEqualsTheMatrixForm) {
  Network net = MakeNetwork(topology::ErdosRenyi(7, 0.5, 9), 3, 5);
  const int n = 7, d = 3;
  const double step = 0.3;
  Eigen::MatrixXd x(n, d), x_prev, grad(n, d), grad_prev;
  for (int i = 0; i < n; ++i) x.row(i) = net.setups[i].x0.transpose();
  auto gradients = [&](const Eigen::MatrixXd& at, Eigen::MatrixXd* out) {
    out->resize(n, d);
    Vec g;
    for (int i = 0; i < n; ++i) {
      net.problems[i]->Gradient(at.row(i).transpose(), &g);
      out->row(i) = g.transpose();
    }
  };
  const Eigen::MatrixXd identity = Eigen::MatrixXd::Identity(n, n);
  const Eigen::MatrixXd w_tilde = 0.5 * (identity + net.w);
  node::RoundSimulator sim(net.setups, Options("extra", step));
  for (int k = 0; k < 50; ++k) {
    gradients(x, &grad);
    Eigen::MatrixXd next = k == 0 ? Eigen::MatrixXd(net.w * x - step * grad)
                                  : Eigen::MatrixXd((identity + net.w) * x - w_tilde * x_prev -
                                                    step * (grad - grad_prev));
    x_prev = x;
    grad_prev = grad;
    x = next;
    sim.Step();
    for (int i = 0; i < n; ++i) {
      ASSERT_LT((sim.node(i).Model() - x.row(i).transpose()).norm(), 1e-12 * (1 + x.norm()))
          << "node " << i << " iteration " << k;
    }
  }
}

TEST(RoundAlgorithms, StochasticRunsAreSeeded) {
  Network net = MakeNetwork(topology::Ring(5), 2, 6);
  RoundOptions o = Options("dpsgd", 0.1);
  o.batch_size = 1;
  auto run = [&](uint64_t seed_offset) {
    std::vector<NodeSetup> setups = net.setups;
    for (auto& s : setups) s.seed += seed_offset;
    node::RoundSimulator sim(setups, o);
    sim.RunUntilIteration(50);
    return sim.Spread().mean;
  };
  EXPECT_EQ(run(0), run(0));
  EXPECT_NE(run(0), run(1));
}

TEST(RoundAlgorithms, FactoryNamesBadOptions) {
  Network net = MakeNetwork(topology::Ring(3), 2, 7);
  try {
    algorithms::MakeRoundAlgorithm(Options("nonsense", 0.1), net.setups[0]);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("nonsense"), std::string::npos) << e.what();
  }
  EXPECT_THROW(algorithms::MakeRoundAlgorithm(Options("dpsgd", 0.1), net.setups[0]),
               std::invalid_argument);
  RoundOptions no_step = Options("extra", 0.0);
  EXPECT_THROW(algorithms::MakeRoundAlgorithm(no_step, net.setups[0]), std::invalid_argument);
  no_step.smoothness = 2.0;
  EXPECT_DOUBLE_EQ(algorithms::ResolveStep(no_step), 0.25);
}

}  // namespace
}  // namespace starling
