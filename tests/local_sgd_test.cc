// Local SGD with periodic averaging and SlowMo on D-PSGD (algorithms/round/local_sgd.h): the
// spanning tree against graph distances, the exact averaging against a direct mean, the iterates
// against the matrix form computed here, tau = 1 on a complete graph (one gossip round = the
// exact mean) against gradient descent on the mean objective, the adaptive schedule against its
// formula, and starlingd processes against the simulator.
#include "algorithms/round/local_sgd.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "node/config/run_setup.h"
#include "node/config/spanning_tree.h"
#include "node/sim/round_simulator.h"
#include "tests/daemon_cluster.h"
#include "tests/fake_quadratic.h"
#include "tests/subprocess.h"
#include "tests/test_data.h"
#include "topology/generators.h"
#include "topology/mixing.h"

namespace starling {
namespace {

namespace fs = std::filesystem;
using algorithms::NodeSetup;
using algorithms::RoundOptions;
using testing::FakeQuadratic;
using namespace std::chrono_literals;

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

// ---- Exact averaging over the spanning tree (--local-exact).

topology::Graph Path(int n) {
  topology::Graph g(n);
  for (int i = 0; i + 1 < n; ++i) g.AddEdge(i, i + 1);
  return g;
}

// A star whose centre is node `centre`, so that node 0 is a leaf and the tree has height 2.
topology::Graph StarAround(int n, int centre) {
  topology::Graph g(n);
  for (int i = 0; i < n; ++i) {
    if (i != centre) g.AddEdge(centre, i);
  }
  return g;
}

struct NamedGraph {
  const char* name;
  topology::Graph graph;
};

std::vector<NamedGraph> TreeGraphs() {
  return {{"ring", topology::Ring(8)},
          {"path", Path(7)},
          {"star", StarAround(6, 3)},
          {"er", topology::ErdosRenyi(9, 0.3, 11)}};
}

// Hop distances from node 0 by Floyd-Warshall, independently of the tree's breadth-first search.
std::vector<int> DistancesFromZero(const topology::Graph& g) {
  const int n = g.num_nodes(), inf = n + 1;
  std::vector<std::vector<int>> d(n, std::vector<int>(n, inf));
  for (int i = 0; i < n; ++i) {
    d[i][i] = 0;
    for (int j : g.Neighbors(i)) d[i][j] = 1;
  }
  for (int k = 0; k < n; ++k) {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) d[i][j] = std::min(d[i][j], d[i][k] + d[k][j]);
    }
  }
  return d[0];
}

TEST(SpanningTree, IsABreadthFirstTreeOfTheGraph) {
  for (const auto& [name, g] : TreeGraphs()) {
    const std::vector<algorithms::TreePlace> tree = node::BfsSpanningTree(g);
    const std::vector<int> dist = DistancesFromZero(g);
    const int n = g.num_nodes();
    const int height = *std::max_element(dist.begin(), dist.end());
    int edges = 0;
    for (int i = 0; i < n; ++i) {
      const algorithms::TreePlace& t = tree[i];
      EXPECT_EQ(t.depth, dist[i]) << name << " node " << i;
      EXPECT_EQ(t.height, height) << name;
      EXPECT_EQ(t.num_nodes, n) << name;
      if (i == 0) {
        EXPECT_EQ(t.parent, -1) << name;
      } else {
        ASSERT_TRUE(g.HasEdge(i, t.parent)) << name << " node " << i;
        EXPECT_EQ(dist[t.parent], dist[i] - 1) << name << " node " << i;
        ++edges;
      }
      // The children are exactly the nodes whose parent is i, ascending.
      std::vector<int> children;
      for (int j = 0; j < n; ++j) {
        if (tree[j].parent == i) children.push_back(j);
      }
      EXPECT_EQ(t.children, children) << name << " node " << i;
    }
    EXPECT_EQ(edges, n - 1) << name;
    // NodeSetupOf hands each node its place.
    const Eigen::MatrixXd w = topology::MetropolisHastings(g);
    EXPECT_EQ(node::NodeSetupOf(g, w, n - 1).tree.children, tree[n - 1].children) << name;
  }
}

RoundOptions SlowMoDpsgdOptions(double step, int tau, bool exact, int gossip, double beta,
                                double alpha) {
  RoundOptions o = LocalOptions(step, tau, gossip, 0);
  o.algorithm = "slowmo-dpsgd";
  o.params.Set("local-exact", exact ? 1 : 0);
  o.params.Set("slowmo-beta", beta);
  o.params.Set("slowmo-alpha", alpha);
  return o;
}

Eigen::MatrixXd StartRows(const Network& net) {
  Eigen::MatrixXd x(net.setups.size(), net.setups[0].x0.size());
  for (size_t i = 0; i < net.setups.size(); ++i) x.row(i) = net.setups[i].x0.transpose();
  return x;
}

// Every row of x replaced by the rows' plain mean.
Eigen::MatrixXd MeanRows(const Eigen::MatrixXd& x) {
  Eigen::RowVectorXd mean = Eigen::RowVectorXd::Zero(x.cols());
  for (int i = 0; i < x.rows(); ++i) mean += x.row(i);
  mean /= static_cast<double>(x.rows());
  return mean.replicate(x.rows(), 1);
}

// One D-PSGD iteration in matrix form: X <- W X - step G(X), G at the pre-mix rows.
void DpsgdRound(const Network& net, double step, Eigen::MatrixXd* x) {
  Eigen::MatrixXd g(x->rows(), x->cols());
  for (int i = 0; i < x->rows(); ++i) {
    Vec gi;
    net.problems[i]->Gradient(x->row(i).transpose(), &gi);
    g.row(i) = gi.transpose();
  }
  *x = net.w * *x - step * g;
}

// slowmo-dpsgd with tau = 1 and SlowMo off: one D-PSGD round, then 2H rounds after which every
// node holds the direct mean of the models the D-PSGD round left (to 1e-12), all nodes the same
// bits; H is the tree's height, so the round counts are those of docs/results/local-sgd.md.
TEST(LocalSgdExact, AfterTheTreePhaseEveryNodeHoldsTheExactMean) {
  for (const auto& [name, g] : TreeGraphs()) {
    Network net = MakeNetwork(g, 3, 21);
    const std::vector<int> dist = DistancesFromZero(g);
    const int n = g.num_nodes(), height = *std::max_element(dist.begin(), dist.end());
    const double step = 0.1;
    node::RoundSimulator sim(net.setups, SlowMoDpsgdOptions(step, 1, true, 1, 0.0, 1.0));
    const auto& node0 = dynamic_cast<const algorithms::LocalSgd&>(sim.node(0));
    ASSERT_EQ(node0.AveragingRounds(), 2 * height) << name;
    Eigen::MatrixXd x = StartRows(net);
    for (int period = 0; period < 4; ++period) {
      DpsgdRound(net, step, &x);
      sim.Step();
      const Eigen::MatrixXd mean = MeanRows(x);
      for (int r = 0; r < 2 * height; ++r) sim.Step();
      for (int i = 0; i < n; ++i) {
        ASSERT_LT((sim.node(i).Model() - mean.row(i).transpose()).lpNorm<Eigen::Infinity>(), 1e-12)
            << name << " node " << i << " period " << period;
        EXPECT_EQ(sim.node(i).Model(), sim.node(0).Model()) << name << " node " << i;
      }
      x = mean;
    }
    EXPECT_EQ(sim.node(0).counters().comm_rounds, 4 * (1 + 2 * height)) << name;
  }
}

// local-sgd with --local-exact 1: tau local steps, the exact mean after 2H rounds, per period,
// against the matrix form, on each graph.
TEST(LocalSgdExact, EqualsTheMatrixFormOfLocalStepsThenTheMean) {
  for (const auto& [name, g] : TreeGraphs()) {
    Network net = MakeNetwork(g, 3, 22);
    const int n = g.num_nodes(), tau = 3;
    const double step = 0.2;
    RoundOptions o = LocalOptions(step, tau, 1, 0);
    o.params.Set("local-exact", 1);
    node::RoundSimulator sim(net.setups, o);
    const int rounds = dynamic_cast<const algorithms::LocalSgd&>(sim.node(0)).AveragingRounds();
    Eigen::MatrixXd x = StartRows(net);
    auto local = [&] {
      for (int s = 0; s < tau; ++s) {
        for (int i = 0; i < n; ++i) {
          Vec gi;
          net.problems[i]->Gradient(x.row(i).transpose(), &gi);
          x.row(i) -= step * gi.transpose();
        }
      }
    };
    local();
    for (int period = 0; period < 5; ++period) {
      x = MeanRows(x);
      local();
      for (int r = 0; r < rounds; ++r) sim.Step();
      for (int i = 0; i < n; ++i) {
        ASSERT_LT((sim.node(i).Model() - x.row(i).transpose()).norm(), 1e-12 * (1 + x.norm()))
            << name << " node " << i << " period " << period;
      }
    }
  }
}

// SlowMo on D-PSGD, per period: tau D-PSGD rounds from x0, the average x_bar (exact, or K gossip
// rounds), then u = b u + (x0 - x_bar)/gamma and x0 <- x0 - a gamma u, in matrix form.
TEST(SlowMoDpsgd, EqualsItsDirectFormulaWithExactAndGossipAveraging) {
  const topology::Graph g = topology::ErdosRenyi(7, 0.4, 3);
  const int tau = 3, gossip = 2, periods = 6;
  const double step = 0.12, beta = 0.6, alpha = 1.4;
  for (const bool exact : {true, false}) {
    Network net = MakeNetwork(g, 4, 23);
    node::RoundSimulator sim(net.setups, SlowMoDpsgdOptions(step, tau, exact, gossip, beta, alpha));
    const int rounds = dynamic_cast<const algorithms::LocalSgd&>(sim.node(0)).AveragingRounds();
    const std::vector<int> dist = DistancesFromZero(g);
    ASSERT_EQ(rounds, exact ? 2 * *std::max_element(dist.begin(), dist.end()) : gossip);
    Eigen::MatrixXd x = StartRows(net), u = Eigen::MatrixXd::Zero(x.rows(), x.cols());
    for (int period = 0; period < periods; ++period) {
      const Eigen::MatrixXd start = x;
      for (int t = 0; t < tau; ++t) DpsgdRound(net, step, &x);
      if (exact) {
        x = MeanRows(x);
      } else {
        for (int k = 0; k < gossip; ++k) x = net.w * x;
      }
      u = beta * u + (start - x) / step;
      x = start - alpha * step * u;
      for (int r = 0; r < tau + rounds; ++r) sim.Step();
      for (int i = 0; i < g.num_nodes(); ++i) {
        ASSERT_LT((sim.node(i).Model() - x.row(i).transpose()).norm(), 1e-12 * (1 + x.norm()))
            << (exact ? "exact" : "gossip") << " node " << i << " period " << period;
      }
    }
    EXPECT_GT(u.norm(), 0.0);
    EXPECT_EQ(sim.node(0).counters().comm_rounds, periods * (tau + rounds));
  }
}

TEST(LocalSgdParams, WarnsThatGossipRoundsAreIgnoredWithExactAveraging) {
  for (const char* name : {"local-sgd", "slowmo-dpsgd"}) {
    RoundOptions o = LocalOptions(0.1, 2, 3, 0);
    o.algorithm = name;
    EXPECT_TRUE(algorithms::RoundWarnings(o).empty()) << name;
    o.params.Set("local-exact", 1);
    const std::vector<std::string> warnings = algorithms::RoundWarnings(o);
    ASSERT_EQ(warnings.size(), 1u) << name;
    EXPECT_NE(warnings[0].find("--local-gossip 3 is ignored"), std::string::npos) << warnings[0];
    o.params.Set("local-gossip", 1);
    EXPECT_TRUE(algorithms::RoundWarnings(o).empty()) << name;
  }
}

TEST(LocalSgdExact, RefusesASetupWithoutASpanningTree) {
  Network net = MakeNetwork(topology::Ring(4), 2, 24);
  RoundOptions o = LocalOptions(0.1, 2, 1, 0);
  o.params.Set("local-exact", 1);
  NodeSetup bare = net.setups[1];
  bare.tree = algorithms::TreePlace();  // as a NodeSetup built by hand
  EXPECT_THROW(algorithms::MakeRoundAlgorithm(o, bare), std::invalid_argument);
  NodeSetup wrong = net.setups[1];
  wrong.tree.parent = 3 - wrong.tree.parent;  // not a neighbour of node 1 on the ring
  EXPECT_THROW(algorithms::MakeRoundAlgorithm(o, wrong), std::invalid_argument);
  EXPECT_NO_THROW(algorithms::MakeRoundAlgorithm(o, net.setups[1]));
}

TEST(LocalSgdParams, SlowMoBetaMustBeBelowOne) {
  algorithms::ParamValues p;
  p.Set("slowmo-beta", 0.99);
  EXPECT_EQ(algorithms::LocalSgdParamTable().Read(p).slowmo_beta, 0.99);
  p.Set("slowmo-beta", 1.0);
  EXPECT_THROW(algorithms::LocalSgdParamTable().Read(p), std::invalid_argument);
  p.Set("slowmo-beta", -0.1);
  EXPECT_THROW(algorithms::LocalSgdParamTable().Read(p), std::invalid_argument);
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

// starlingd processes on `graph` running `algorithm` with the method options `options` (name,
// value; batch 8) end at the simulator's models bit for bit.
void ExpectDaemonsEqualSimulator(const std::string& algorithm, const topology::Graph& graph,
                                 const std::vector<std::pair<std::string, double>>& options,
                                 int iterations) {
  const std::string a9a = testing::SharedData("a9a");
  if (!fs::exists(a9a)) GTEST_SKIP() << "no a9a at " << a9a;
  const std::string dir = testing::FreshTempDir(algorithm);
  const int n = graph.num_nodes();
  const std::string cluster =
      testing::WriteLoopbackCluster(dir, graph, testing::PortBase(), /*keys=*/true);
  std::vector<std::string> args = {
      "--algorithm", algorithm, "--problem",    "logistic",
      "--l2",        "1e-2",    "--data",       a9a,
      "--format",    "libsvm",  "--seed",       "7",
      "--batch",     "8",       "--iterations", std::to_string(iterations)};
  for (const auto& [name, value] : options) {
    args.push_back("--" + name);
    std::ostringstream text;
    text << value;
    args.push_back(text.str());
  }
  const std::vector<Vec> models = testing::RunLoopbackDaemons(dir, cluster, n, args, 120);
  const std::vector<Vec> simulated =
      testing::SimulatedA9aModels(algorithm, a9a, cluster, n, iterations, [&](node::RunConfig* c) {
        c->batch = 8;
        for (const auto& [name, value] : options) {
          if (name == "slowmo-beta" || name == "slowmo-alpha") {
            c->params.Set(name, value);
          } else {
            c->params.Set(name, static_cast<int>(value));
          }
        }
      });
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(models[i].size(), simulated[i].size()) << "node " << i;
    EXPECT_GT(simulated[i].norm(), 0.0) << "node " << i;
    EXPECT_EQ(models[i], simulated[i]) << "node " << i;
  }
  fs::remove_all(dir);
}

// A ring of 5 (tree height 2, 4 rounds per exact average); 29 rounds stop inside a tree phase.
TEST(LocalSgdDaemon, ExactTreeAveragingEqualsTheSimulator) {
  ExpectDaemonsEqualSimulator("local-sgd", topology::Ring(5),
                              {{"local-tau", 3}, {"local-exact", 1}}, 29);
}

// SlowMo over D-PSGD with exact averaging on a star around node 2 (height 2).
TEST(SlowMoDpsgdDaemon, EqualsTheSimulator) {
  ExpectDaemonsEqualSimulator(
      "slowmo-dpsgd", StarAround(5, 2),
      {{"local-tau", 3}, {"local-exact", 1}, {"slowmo-beta", 0.5}, {"slowmo-alpha", 1.25}}, 30);
}

// `algorithm` with exact tree averaging and SlowMo on a path of 5 (height 4: 8 rounds per
// average), one of 5 starlingd processes killed with SIGKILL mid-run and restarted with --resume
// from its checkpoint (written every `checkpoint_every` rounds): every node ends at the
// simulator's models bit for bit.
void ExpectKilledNodeResumes(const std::string& algorithm, int checkpoint_every) {
  const std::string a9a = testing::SharedData("a9a");
  if (!fs::exists(a9a)) GTEST_SKIP() << "no a9a at " << a9a;
  const std::string dir = testing::FreshTempDir("ckpt-" + algorithm);
  const int n = 5, victim = 3;
  const int64_t iterations = 300;
  const topology::Graph graph = Path(n);  // height 4: 8 rounds per exact average
  const std::string cluster =
      testing::WriteLoopbackCluster(dir, graph, testing::PortBase() + 11, /*keys=*/false);
  // A 3 ms delay on every message (fault injection) stretches the run, so that the kill lands
  // mid-run.
  // clang-format off
  const std::vector<std::string> args = {
      "--algorithm", algorithm, "--problem", "logistic", "--l2", "1e-2", "--data", a9a,
      "--format", "libsvm", "--iterations", std::to_string(iterations), "--seed", "7",
      "--batch", "8", "--local-tau", "3", "--local-exact", "1", "--slowmo-beta", "0.5",
      "--checkpoint-every", std::to_string(checkpoint_every), "--resend-ms", "100",
      "--fault-delay-ms", "3"};
  // clang-format on
  const std::vector<Vec> models =
      testing::RunWithKilledAndResumedNode(dir, cluster, n, victim, args, 300ms);
  ASSERT_EQ(models.size(), static_cast<size_t>(n));
  const std::vector<Vec> simulated =
      testing::SimulatedA9aModels(algorithm, a9a, cluster, n, iterations, [](node::RunConfig* c) {
        c->batch = 8;
        c->params.Set("local-tau", 3);
        c->params.Set("local-exact", 1);
        c->params.Set("slowmo-beta", 0.5);
      });
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(models[i].size(), simulated[i].size()) << "node " << i;
    EXPECT_TRUE(models[i] == simulated[i]) << "node " << i;
  }
  fs::remove_all(dir);
}

// The daemon's side of checkpoints (the file, the payloads it keeps, the replay with the
// neighbours' kept payloads). That the state is complete at every position of a period is
// tests/algorithm_checkpoint_test's: here, payloads the victim had sent before it was killed are
// not taken again, so a state missing a part it used only for them would go unseen.
TEST(LocalSgdDaemon, KilledNodeResumesFromItsCheckpointAndEqualsTheSimulator) {
  ExpectKilledNodeResumes("local-sgd", 8);
}

TEST(SlowMoDpsgdDaemon, KilledNodeResumesFromItsCheckpointAndEqualsTheSimulator) {
  ExpectKilledNodeResumes("slowmo-dpsgd", 7);
}

}  // namespace
}  // namespace starling
