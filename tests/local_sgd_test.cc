// Local SGD with periodic averaging (algorithms/round/local_sgd.h): its iterates against the
// matrix form computed here, tau = 1 on a complete graph (one gossip round = the exact mean)
// against gradient descent on the mean objective, the adaptive schedule against its formula, and
// starlingd processes against the simulator.
#include "algorithms/round/local_sgd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <random>
#include <vector>

#include "node/config/run_setup.h"
#include "node/sim/round_simulator.h"
#include "tests/daemon_cluster.h"
#include "tests/fake_quadratic.h"
#include "tests/test_data.h"
#include "topology/generators.h"
#include "topology/mixing.h"

namespace starling {
namespace {

namespace fs = std::filesystem;
using algorithms::NodeSetup;
using algorithms::RoundOptions;
using testing::FakeQuadratic;

struct Network {
  Eigen::MatrixXd w;
  std::vector<std::unique_ptr<FakeQuadratic>> problems;
  std::vector<NodeSetup> setups;
};

Network MakeNetwork(const topology::Graph& graph, int dim, uint64_t seed) {
  Network net;
  net.w = topology::MetropolisHastings(graph);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.5, 2.0), v(-1.0, 1.0);
  for (int i = 0; i < graph.num_nodes(); ++i) {
    Vec d(dim), b(dim);
    for (int k = 0; k < dim; ++k) {
      d[k] = u(rng);
      b[k] = v(rng);
    }
    net.problems.push_back(std::make_unique<FakeQuadratic>(d, b));
    NodeSetup s = node::NodeSetupOf(graph, net.w, i);
    s.problem = net.problems.back().get();
    s.x0 = Vec::Constant(dim, 0.1 * i);
    s.seed = 100 + i;
    net.setups.push_back(s);
  }
  return net;
}

RoundOptions LocalOptions(double step, int tau, int gossip, int adaptive) {
  RoundOptions o;
  o.algorithm = "local-sgd";
  o.step = step;
  o.params.Set("local-tau", tau);
  o.params.Set("local-gossip", gossip);
  o.params.Set("local-adaptive", adaptive);
  return o;
}

// Rows x_i of X: tau full-gradient steps each, then X <- W^K X, per period.
TEST(LocalSgd, EqualsTheMatrixFormOfLocalStepsThenKGossipRounds) {
  const topology::Graph graph = topology::ErdosRenyi(6, 0.5, 4);
  Network net = MakeNetwork(graph, 3, 2);
  const int n = 6, d = 3, tau = 3, gossip = 2;
  const double step = 0.2;
  Eigen::MatrixXd x(n, d);
  for (int i = 0; i < n; ++i) x.row(i) = net.setups[i].x0.transpose();
  auto local = [&] {
    for (int s = 0; s < tau; ++s) {
      for (int i = 0; i < n; ++i) {
        Vec g;
        net.problems[i]->Gradient(x.row(i).transpose(), &g);
        x.row(i) -= step * g.transpose();
      }
    }
  };
  local();
  node::RoundSimulator sim(net.setups, LocalOptions(step, tau, gossip, 0));
  for (int round = 1; round <= 20; ++round) {
    x = net.w * x;
    if (round % gossip == 0) local();
    sim.Step();
    for (int i = 0; i < n; ++i) {
      ASSERT_LT((sim.node(i).Model() - x.row(i).transpose()).norm(), 1e-12 * (1 + x.norm()))
          << "node " << i << " round " << round;
    }
  }
  EXPECT_EQ(sim.node(0).counters().comm_rounds, 20);
}

// On the complete graph Metropolis weights are all 1/n, so one gossip round is the exact mean:
// with tau = 1, x_bar+ = x_bar - step * (1/n) sum_i grad f_i(x_bar), gradient descent on the mean.
TEST(LocalSgd, TauOneWithExactAveragingIsGradientDescentOnTheMean) {
  const int n = 5, d = 4;
  Network net = MakeNetwork(topology::Complete(n), d, 3);
  const double step = 0.3;
  node::RoundSimulator sim(net.setups, LocalOptions(step, 1, 1, 0));
  // Before the first round each node has taken one step from its own x0.
  Vec xbar = Vec::Zero(d), g;
  for (int i = 0; i < n; ++i) {
    net.problems[i]->Gradient(net.setups[i].x0, &g);
    xbar += (net.setups[i].x0 - step * g) / n;
  }
  for (int k = 0; k < 30; ++k) {
    // The round sets every node to x_bar; its next local step starts from there.
    Vec mean_grad = Vec::Zero(d);
    for (int i = 0; i < n; ++i) {
      net.problems[i]->Gradient(xbar, &g);
      mean_grad += g / n;
    }
    xbar -= step * mean_grad;
    sim.Step();
    Vec model_mean = Vec::Zero(d);
    for (int i = 0; i < n; ++i) model_mean += sim.node(i).Model() / n;
    ASSERT_LT((model_mean - xbar).norm(), 1e-12) << "round " << k;
  }
}

TEST(LocalSgd, AdaptiveIntervalsFollowCeilTauSqrtJPlusOne) {
  EXPECT_EQ(algorithms::AdaptiveTau(2, 0), 2);
  EXPECT_EQ(algorithms::AdaptiveTau(2, 1), 3);   // ceil(2.83)
  EXPECT_EQ(algorithms::AdaptiveTau(2, 2), 4);   // ceil(3.46)
  EXPECT_EQ(algorithms::AdaptiveTau(2, 3), 4);   // 2 * 2
  EXPECT_EQ(algorithms::AdaptiveTau(5, 9), 16);  // ceil(15.81)
  // The algorithm takes them: after 4 rounds (K = 1), periods 0..4 of tau = 2: 2+3+4+4+5.
  Network net = MakeNetwork(topology::Ring(4), 2, 5);
  node::RoundSimulator sim(net.setups, LocalOptions(0.1, 2, 1, 1));
  for (int k = 0; k < 4; ++k) sim.Step();
  const auto& node0 = dynamic_cast<const algorithms::LocalSgd&>(sim.node(0));
  EXPECT_EQ(node0.local_steps(), 2 + 3 + 4 + 4 + 5);
}

// SlowMo on top: per period, tau local steps from x0, the gossip average x_bar, then
// u = b u + (x0 - x_bar) / gamma and x0 <- x0 - a gamma u, computed here in matrix form.
TEST(LocalSgd, SlowMoOuterStepEqualsItsDirectFormula) {
  const topology::Graph graph = topology::Ring(5);
  Network net = MakeNetwork(graph, 3, 8);
  const int n = 5, d = 3, tau = 2, gossip = 3;
  const double step = 0.15, beta = 0.6, alpha = 1.3;
  RoundOptions o = LocalOptions(step, tau, gossip, 0);
  o.params.Set("slowmo-beta", beta);
  o.params.Set("slowmo-alpha", alpha);
  Eigen::MatrixXd x(n, d), start, u = Eigen::MatrixXd::Zero(n, d);
  for (int i = 0; i < n; ++i) x.row(i) = net.setups[i].x0.transpose();
  auto local = [&] {
    start = x;
    for (int s = 0; s < tau; ++s) {
      for (int i = 0; i < n; ++i) {
        Vec g;
        net.problems[i]->Gradient(x.row(i).transpose(), &g);
        x.row(i) -= step * g.transpose();
      }
    }
  };
  local();
  node::RoundSimulator sim(net.setups, o);
  for (int round = 1; round <= 18; ++round) {
    x = net.w * x;
    if (round % gossip == 0) {
      u = beta * u + (start - x) / step;
      x = start - alpha * step * u;
      local();
    }
    sim.Step();
    for (int i = 0; i < n; ++i) {
      ASSERT_LT((sim.node(i).Model() - x.row(i).transpose()).norm(), 1e-12 * (1 + x.norm()))
          << "node " << i << " round " << round;
    }
  }
}

// Seeded mini-batches make the run deterministic: starlingd processes over ZeroMQ end at the
// simulator's models.
TEST(LocalSgdDaemon, EqualsTheSimulatorWithMiniBatches) {
  const std::string a9a = testing::SharedData("a9a");
  if (!fs::exists(a9a)) GTEST_SKIP() << "no a9a at " << a9a;
  const std::string dir = testing::FreshTempDir("local-sgd");
  const int n = 4, iterations = 30;
  const std::string cluster =
      testing::WriteLoopbackCluster(dir, topology::Ring(n), testing::PortBase(), /*keys=*/true);
  const std::vector<std::string> args = {
      "--algorithm", "local-sgd", "--problem",      "logistic",
      "--l2",        "1e-2",      "--data",         a9a,
      "--format",    "libsvm",    "--iterations",   std::to_string(iterations),
      "--seed",      "7",         "--batch",        "8",
      "--local-tau", "4",         "--local-gossip", "2"};
  const std::vector<Vec> models = testing::RunLoopbackDaemons(dir, cluster, n, args, 120);
  const std::vector<Vec> simulated =
      testing::SimulatedA9aModels("local-sgd", a9a, cluster, n, iterations, [](node::RunConfig* c) {
        c->batch = 8;
        c->params.Set("local-tau", 4);
        c->params.Set("local-gossip", 2);
      });
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(models[i].size(), simulated[i].size()) << "node " << i;
    EXPECT_GT(simulated[i].norm(), 0.0) << "node " << i;
    EXPECT_EQ(models[i], simulated[i]) << "node " << i;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace starling
