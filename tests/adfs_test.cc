// ADFS (algorithms/pairwise/adfs.h): the 1-D proxes against a direct numerical
// minimisation; the graph constants against closed forms (ring, complete graph); the dual
// invariant (sum over the network of v_i + sum_j v_ij a_ij, and of the y's, at a common time,
// stays 0: every jump moves dual mass between the two ends of an edge); convergence to the
// centralized optimum solved here (least squares: normal equations; logistic: a dense Newton
// solve written here, and the global gradient recomputed from the data); determinism for a seed.
#include "algorithms/pairwise/adfs.h"

#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "algorithms/algorithm_state.h"
#include "algorithms/data/dataset.h"
#include "algorithms/problems/problem_factory.h"
#include "node/config/run_setup.h"
#include "node/sim/adfs_simulator.h"
#include "tests/shard_network.h"
#include "topology/generators.h"
#include "topology/mixing.h"

namespace starling {
namespace {

using algorithms::NodeSetup;
using algorithms::PairwiseOptions;

// Golden-section minimisation of a unimodal h on [lo, hi], to the interval's rounding.
template <typename H>
double GoldenMin(H h, double lo, double hi) {
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = lo, b = hi;
  double c = b - g * (b - a), d = a + g * (b - a);
  double hc = h(c), hd = h(d);
  for (int it = 0; it < 300 && b - a > 1e-14 * (1 + std::abs(a)); ++it) {
    if (hc < hd) {
      b = d, d = c, hd = hc;
      c = b - g * (b - a), hc = h(c);
    } else {
      a = c, c = d, hc = hd;
      d = a + g * (b - a), hd = h(d);
    }
  }
  return 0.5 * (a + b);
}

TEST(AdfsProx, LogisticMatchesDirectMinimisation) {
  struct Case {
    double u0, tau, s, label, start;
  };
  const std::vector<Case> cases = {{0.0, 1.0, 1.0, 1.0, 0.0},      {3.0, 0.5, 2.0, -1.0, 10.0},
                                   {-20.0, 100.0, 0.01, 1.0, 5.0}, {40.0, 1e-3, 3.0, 1.0, -7.0},
                                   {-2.0, 1e4, 1e-4, -1.0, 0.0},   {0.7, 30.0, 0.3, -1.0, 0.7}};
  for (const Case& c : cases) {
    auto h = [&](double u) {
      return c.s * std::log1p(std::exp(-c.label * u)) + (u - c.u0) * (u - c.u0) / (2 * c.tau);
    };
    // The minimiser lies within tau s of u0 (|phi'| <= s); search a wider interval anyway.
    const double width = 2 * c.tau * c.s + 1;
    const double expected = GoldenMin(h, c.u0 - width, c.u0 + width);
    const double got = algorithms::LogisticMarginProx(c.u0, c.tau, c.s, c.label, c.start);
    EXPECT_NEAR(got, expected, 1e-7 * (1 + std::abs(expected)))
        << "u0 " << c.u0 << " tau " << c.tau << " s " << c.s << " label " << c.label;
  }
}

TEST(AdfsProx, SquaredMatchesDirectMinimisation) {
  for (double u0 : {-3.0, 0.0, 2.5}) {
    for (double tau : {1e-3, 1.0, 50.0}) {
      const double s = 0.7, b = 1.3;
      auto h = [&](double u) {
        return s * (u - b) * (u - b) / 2 + (u - u0) * (u - u0) / (2 * tau);
      };
      const double expected = GoldenMin(h, -100, 100);
      EXPECT_NEAR(algorithms::SquaredMarginProx(u0, tau, s, b), expected, 1e-7);
    }
  }
}

// The virtual node's dual step against a golden-section minimisation of
// h(t) = s (t log t + (1 - t) log(1 - t)) - q s^2 t^2 / (2 L) + q (s t + label z)^2 / (2 a)
// over t = -label beta / s in (0, 1) (phi* of the logistic loss, written here), L = s q / 4; and,
// where a < L, against the reference's route: Moreau's identity on the primal prox.
TEST(AdfsProx, LogisticDualMatchesDirectMinimisationAndPrimalRoute) {
  struct Case {
    double z, a, q, s, label;
  };
  const std::vector<Case> cases = {{0.0, 1.0, 2.0, 1.0, 1.0},
                                   {-0.3, 0.05, 14.0, 0.01, 1.0},
                                   {0.004, 2.0, 14.0, 0.01, -1.0},
                                   {1e-3, 1e-3, 5.0, 3e-4, 1.0},
                                   {-2.0, 30.0, 1.0, 0.5, -1.0},
                                   {0.02, 0.2, 3.0, 0.1, 1.0},
                                   // a < L: the primal route applies too.
                                   {0.0, 0.1, 2.0, 1.0, 1.0},
                                   {-0.3, 0.01, 14.0, 0.01, 1.0},
                                   {0.5, 1.0, 8.0, 2.0, -1.0},
                                   {-0.02, 0.03, 3.0, 0.1, -1.0}};
  int primal_checked = 0;
  for (const Case& c : cases) {
    const double l = c.s * c.q / 4;
    auto h = [&](double t) {
      const double ent = (t > 0 ? t * std::log(t) : 0) + (t < 1 ? (1 - t) * std::log1p(-t) : 0);
      const double lin = c.s * t + c.label * c.z;
      return c.s * ent - c.q * c.s * c.s * t * t / (2 * l) + c.q * lin * lin / (2 * c.a);
    };
    const double t = GoldenMin(h, 0.0, 1.0);
    const double expected = -c.label * c.s * t;
    double warm = 0.0;
    const double got = algorithms::LogisticDualProx(c.z, c.a, c.q, c.s, c.label, &warm);
    EXPECT_NEAR(got, expected, 1e-7 * c.s) << "z " << c.z << " a " << c.a;
    // Again from the warm start it left: the same point.
    EXPECT_NEAR(algorithms::LogisticDualProx(c.z, c.a, c.q, c.s, c.label, &warm), got, 1e-14);
    if (c.a < l) {
      const double nu = 1 / (1 / c.a - 1 / l);
      const double w = nu * c.z / c.a;
      const double u = algorithms::LogisticMarginProx(c.q * w / nu, c.q / nu, c.s, c.label, 0.0);
      EXPECT_NEAR(got, w - nu * u / c.q, 1e-9 * (1 + std::abs(got))) << "primal route, z " << c.z;
      ++primal_checked;
    }
  }
  EXPECT_EQ(primal_checked, 4);
}

TEST(AdfsProx, SquaredDualMatchesPrimalRoute) {
  // phi* (beta) = beta^2 / (2 s) + label beta cancels -q beta^2 / (2 L) for L = s q: the step is
  // z - a label / q whatever a; where a < L, Moreau's identity on the primal prox agrees.
  const double s = 0.3, q = 4.0, b = 1.7, l = s * q;
  for (double z : {-1.0, 0.2, 3.0}) {
    for (double a : {0.01, 0.5, 1.0}) {
      const double nu = 1 / (1 / a - 1 / l);
      const double w = nu * z / a;
      const double u = algorithms::SquaredMarginProx(q * w / nu, q / nu, s, b);
      EXPECT_NEAR(algorithms::SquaredDualProx(z, a, q, b), w - nu * u / q, 1e-12);
    }
  }
}

std::vector<std::vector<int>> Adjacency(const topology::Graph& g) {
  std::vector<std::vector<int>> adj;
  for (int i = 0; i < g.num_nodes(); ++i) adj.push_back(g.Neighbors(i));
  return adj;
}

TEST(AdfsConstants, RingAndCompleteGraph) {
  const double pi = std::acos(-1.0);
  std::vector<algorithms::ShardSummary> shards(7, {2.0, 30.0, 1.1});
  // Ring of n: lambda_2 = 2 (1 - cos(2 pi / n)); an edge is a unit resistor in parallel with a
  // path of n - 1: R = (n - 1) / n.
  const algorithms::AdfsNetwork ring =
      algorithms::AdfsNetworkOf(Adjacency(topology::Ring(7)), shards, 0.1);
  EXPECT_NEAR(ring.lambda2, 2 * (1 - std::cos(2 * pi / 7)), 1e-12);
  EXPECT_EQ(ring.num_edges, 7);
  for (const auto& r : ring.resistance) {
    for (double v : r) EXPECT_NEAR(v, 6.0 / 7.0, 1e-12);
  }
  // Complete graph K_n: lambda_2 = n, R = 2 / n.
  const algorithms::AdfsNetwork full =
      algorithms::AdfsNetworkOf(Adjacency(topology::Complete(7)), shards, 0.1);
  EXPECT_NEAR(full.lambda2, 7.0, 1e-12);
  EXPECT_EQ(full.num_edges, 21);
  for (const auto& r : full.resistance) {
    for (double v : r) EXPECT_NEAR(v, 2.0 / 7.0, 1e-12);
  }
  // The formulas of adfs.h written out for the ring: kappa = 1 + 2/0.1 = 21 on every node.
  const double kappa = 21, l2 = 0.1;
  const double sigma_a = ring.lambda2 / (2 * kappa * l2);
  EXPECT_NEAR(ring.sigma_a, sigma_a, 1e-15);
  const double comm = std::sqrt(l2 * sigma_a / (2 * 6.0 / 7.0)) / 7;
  const double comp = std::sqrt(0.5) / (7 * 30.0);
  const double p = std::max(0.5, 1 / (1 + comp / comm));
  EXPECT_NEAR(ring.p_comp, p, 1e-12);
  EXPECT_NEAR(ring.rho, std::min(p * comp, (1 - p) * comm), 1e-15);
  // Every edge at the same rate, the rates summing to 1 event per unit time over the network.
  double total = 0;
  for (int i = 0; i < 7; ++i) total += ring.comp_rate[i] + ring.comm_rate[i];
  EXPECT_NEAR(total, 1.0, 1e-12);
  EXPECT_THROW(algorithms::AdfsNetworkOf(Adjacency(topology::Ring(7)), shards, 0.0),
               std::invalid_argument);
}

// n nodes with heterogeneous logistic or least-squares shards written here; f_i is the shard's
// mean loss (scale 1/rows) plus (l2/2)|x|^2.
struct Network : testing::ShardNetwork {
  PairwiseOptions options;
  std::string kind;
};

std::unique_ptr<Network> MakeNetwork(const topology::Graph& graph, const std::string& kind,
                                     int rows, int dim, double l2, uint64_t seed) {
  auto net = std::make_unique<Network>();
  net->kind = kind;
  testing::FillShardNetwork(graph, kind, rows, dim, l2, seed, "adfs_test",
                            {/*feature_step=*/0.5, /*target_shift=*/0.4}, net.get());
  for (int i = 0; i < graph.num_nodes(); ++i) {
    NodeSetup& s = net->setups[i];
    s.x0 = Vec::Zero(dim);
    s.seed = 11 + 3 * i;
    net->options.shards.push_back(algorithms::AdfsShardSummary(*net->problems[i]));
    net->options.graph.push_back(graph.Neighbors(i));
  }
  net->options.algorithm = "adfs";
  return net;
}

// The optimum of sum_i f_i computed here from the raw data: the normal equations for least
// squares, a dense Newton iteration for logistic regression.
Vec Optimum(const Network& net) {
  const int d = static_cast<int>(net.a[0].cols());
  const int n = static_cast<int>(net.a.size());
  if (net.kind == "least-squares") {
    Eigen::MatrixXd gram = n * net.l2 * Eigen::MatrixXd::Identity(d, d);
    Vec moment = Vec::Zero(d);
    for (int i = 0; i < n; ++i) {
      const double s = 1.0 / net.a[i].rows();
      gram += s * net.a[i].transpose() * net.a[i];
      moment += s * net.a[i].transpose() * net.b[i];
    }
    return gram.ldlt().solve(moment);
  }
  Vec x = Vec::Zero(d);
  for (int it = 0; it < 50; ++it) {
    Vec grad = n * net.l2 * x;
    Eigen::MatrixXd hess = n * net.l2 * Eigen::MatrixXd::Identity(d, d);
    for (int i = 0; i < n; ++i) {
      const double s = 1.0 / net.a[i].rows();
      for (int r = 0; r < net.a[i].rows(); ++r) {
        const Vec row = net.a[i].row(r).transpose();
        const double yv = net.b[i][r];
        const double sig = 1 / (1 + std::exp(yv * row.dot(x)));  // sigma(-y a^T x)
        grad -= s * yv * sig * row;
        hess += s * sig * (1 - sig) * row * row.transpose();
      }
    }
    x -= hess.ldlt().solve(grad);
  }
  return x;
}

// The invariant's two sums over the network at the latest node's time, and the scale they are
// measured against (the sum of the norms of the terms).
void InvariantAt(const node::AdfsSimulator& sim, double* v_residual, double* y_residual) {
  const double t = sim.LatestTime();
  const int d = static_cast<int>(sim.node(0).v().size());
  Vec v_total = Vec::Zero(d), y_total = Vec::Zero(d);
  double v_scale = 0, y_scale = 0;
  for (int i = 0; i < sim.num_nodes(); ++i) {
    Vec vs, ys;
    sim.node(i).DualSumsAt(t, &vs, &ys);
    v_total += vs;
    y_total += ys;
    v_scale += sim.node(i).v().norm();
    y_scale += sim.node(i).y().norm();
  }
  *v_residual = v_total.norm() / std::max(v_scale, 1e-300);
  *y_residual = y_total.norm() / std::max(y_scale, 1e-300);
}

TEST(Adfs, DualSumsStayZero) {
  topology::Graph g = topology::Ring(6);
  g.AddEdge(0, 3);
  const auto net = MakeNetwork(g, "logistic", 15, 4, 0.05, 3);
  node::AdfsSimulator sim(net->setups, net->options, 5);
  for (int round = 0; round < 20; ++round) {
    for (int k = 0; k < 500; ++k) sim.Activate();
    double rv = 0, ry = 0;
    InvariantAt(sim, &rv, &ry);
    ASSERT_LT(rv, 1e-12) << "after " << 500 * (round + 1) << " events";
    ASSERT_LT(ry, 1e-12) << "after " << 500 * (round + 1) << " events";
  }
  // The sums are not trivially 0: the centers hold mass.
  EXPECT_GT(sim.node(0).y().norm(), 1e-3);
  EXPECT_GT(sim.exchanges(), 0);
}

// Runs until every node is within `tol` (relative) of x*, or `max_steps` computations per node;
// returns the largest relative distance.
double RunToOptimum(node::AdfsSimulator* sim, const Vec& x_star, int64_t max_steps, int64_t chunk) {
  double worst = 0;
  for (int64_t steps = chunk; steps <= max_steps; steps += chunk) {
    sim->RunUntilLocalSteps(steps);
    worst = 0;
    for (int i = 0; i < sim->num_nodes(); ++i) {
      worst = std::max(worst, (sim->node(i).Model() - x_star).norm() / x_star.norm());
    }
    if (worst < 1e-10) break;
  }
  return worst;
}

TEST(Adfs, LeastSquaresConvergesToNormalEquations) {
  topology::Graph g = topology::Ring(5);
  const auto net = MakeNetwork(g, "least-squares", 12, 4, 0.1, 21);
  const Vec x_star = Optimum(*net);
  node::AdfsSimulator sim(net->setups, net->options, 9);
  EXPECT_LT(RunToOptimum(&sim, x_star, 400000, 20000), 1e-10);
}

TEST(Adfs, LogisticConvergesToNewtonOptimum) {
  topology::Graph g = topology::Ring(6);
  g.AddEdge(1, 4);
  const auto net = MakeNetwork(g, "logistic", 15, 4, 0.05, 3);
  const Vec x_star = Optimum(*net);
  node::AdfsSimulator sim(net->setups, net->options, 5);
  EXPECT_LT(RunToOptimum(&sim, x_star, 400000, 20000), 1e-10);
  // The global gradient, recomputed from the problems at node 0's model.
  Vec grad = Vec::Zero(x_star.size()), gi;
  for (const auto& p : net->problems) {
    p->Gradient(sim.node(0).Model(), &gi);
    grad += gi;
  }
  EXPECT_LT(grad.norm(), 1e-9);
}

// The state machines driven here as AdfsSimulator does, over a fake channel that loses requests
// and replies, duplicates both and delivers some replies late (after other events).
class LossyRun {
 public:
  LossyRun(const Network& net, double loss, double dup, double late, uint64_t seed)
      : net_(net), loss_(loss), dup_(dup), late_(late), rng_(seed) {
    for (const NodeSetup& s : net.setups) {
      nodes_.emplace_back(static_cast<algorithms::Adfs*>(
          algorithms::MakePairwiseAlgorithm(net.options, s).release()));
      nodes_.back()->SetCommonTime();  // the event order is a common time, as the simulator's
    }
  }
  void Activate() {
    size_t i = 0;
    for (size_t k = 1; k < nodes_.size(); ++k) {
      if (nodes_[k]->NextEventTime() < nodes_[i]->NextEventTime()) i = k;
    }
    algorithms::Adfs& a = *nodes_[i];
    DeliverLate(static_cast<int>(i));
    if (!a.WantsExchange()) {
      a.LocalStep();
      return;
    }
    const auto& nb = net_.setups[i].neighbors;
    const int j = nb[rng_() % nb.size()];
    const uint64_t seq = next_seq_++;
    const std::shared_ptr<const Vec> offer = a.BeginExchange(j, seq);
    if (Coin(loss_)) {
      a.AbortExchange(/*may_still_reply=*/true);
      ++lost_;
      return;
    }
    nodes_[j]->AdvanceTo(a.now());
    Vec reply = *nodes_[j]->Respond(static_cast<int>(i), *offer);
    if (Coin(dup_)) reply = *nodes_[j]->Respond(static_cast<int>(i), *offer);  // served twice
    if (Coin(loss_)) {
      a.AbortExchange(true);
      ++lost_;
      return;
    }
    if (Coin(late_)) {
      a.AbortExchange(true);
      late_replies_.push_back({static_cast<int>(i), seq, reply});
      return;
    }
    a.CompleteExchange(seq, reply);
    if (Coin(dup_)) a.CompleteExchange(seq, reply);
  }
  // The invariant under loss: a half that lands later than its partner has not been mixed by B
  // in between, so the sums of v and of y are not kept; their B-invariant combination
  // pi_v v + pi_y y (B's left eigenvector for 1: (delta, rho) / (rho + delta)) is, whenever
  // each half lands. Its residual, relative to the terms' scale; 0 at the fixed point (v = y)
  // gives sum v = 0 once every ledger is settled.
  double Residual() const {
    double t = 0;
    for (const auto& a : nodes_) t = std::max(t, a->now());
    const auto& nw = nodes_[0]->network();
    const double pv = nw.delta / (nw.rho + nw.delta), py = nw.rho / (nw.rho + nw.delta);
    const int d = static_cast<int>(nodes_[0]->v().size());
    Vec total = Vec::Zero(d);
    double scale = 0;
    for (size_t j = 0; j < nodes_.size(); ++j) {
      Vec v, y;
      nodes_[j]->DualSumsAt(t, &v, &y);
      total += pv * v + py * y;
      scale += pv * nodes_[j]->v().norm() + py * nodes_[j]->y().norm();
      for (int i : net_.setups[j].neighbors) {  // j responder, i initiator
        const Vec gap = nodes_[j]->Served(i) - nodes_[i]->Mirrored(static_cast<int>(j));
        total += (pv * nodes_[j]->EdgeStepV(i) + py * nodes_[j]->EdgeStepY(i)) * gap;
      }
    }
    return total.norm() / scale;
  }
  const algorithms::Adfs& node(int i) const { return *nodes_[i]; }
  int64_t lost() const { return lost_; }

 private:
  struct Late {
    int node;
    uint64_t seq;
    Vec reply;
  };
  bool Coin(double p) { return std::uniform_real_distribution<double>()(rng_) < p; }
  void DeliverLate(int i) {
    for (size_t k = 0; k < late_replies_.size();) {
      if (late_replies_[k].node == i && Coin(0.5)) {
        nodes_[i]->CompleteExchange(late_replies_[k].seq, late_replies_[k].reply);
        late_replies_.erase(late_replies_.begin() + static_cast<std::ptrdiff_t>(k));
      } else {
        ++k;
      }
    }
  }
  const Network& net_;
  double loss_, dup_, late_;
  std::mt19937_64 rng_;
  std::vector<std::unique_ptr<algorithms::Adfs>> nodes_;
  std::vector<Late> late_replies_;
  uint64_t next_seq_ = 1;
  int64_t lost_ = 0;
};

TEST(Adfs, LedgerKeepsTheInvariantAndTheOptimumUnderLoss) {
  topology::Graph g = topology::Ring(6);
  g.AddEdge(1, 4);
  const auto net = MakeNetwork(g, "logistic", 15, 4, 0.05, 3);
  const Vec x_star = Optimum(*net);
  LossyRun run(*net, /*loss=*/0.15, /*dup=*/0.1, /*late=*/0.1, 8);
  for (int round = 0; round < 40; ++round) {
    for (int k = 0; k < 500; ++k) run.Activate();
    ASSERT_LT(run.Residual(), 1e-12) << "after " << 500 * (round + 1) << " events";
  }
  EXPECT_GT(run.lost(), 100);
  for (int k = 0; k < 1500000; ++k) run.Activate();
  for (int i = 0; i < 6; ++i) {
    EXPECT_LT((run.node(i).Model() - x_star).norm() / x_star.norm(), 1e-9) << "node " << i;
  }
}

TEST(Adfs, DeterministicForASeed) {
  topology::Graph g = topology::Ring(5);
  const auto net = MakeNetwork(g, "logistic", 10, 3, 0.05, 4);
  auto run = [&](uint64_t seed) {
    node::AdfsSimulator sim(net->setups, net->options, seed);
    for (int k = 0; k < 3000; ++k) sim.Activate();
    std::vector<Vec> models;
    for (int i = 0; i < sim.num_nodes(); ++i) models.push_back(sim.node(i).Model());
    return models;
  };
  const auto a = run(17), b = run(17), c = run(18);
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i], b[i]) << "node " << i;  // bit for bit
    differs = differs || a[i] != c[i];
  }
  EXPECT_TRUE(differs) << "another seed should give another run";
}

// Node 1 alone, fed computations, requests from its neighbours and replies to its offers; its
// checkpoint after 400 events, loaded into a fresh node, continues bit for bit as the original.
TEST(Adfs, CheckpointContinuesBitForBit) {
  topology::Graph g = topology::Ring(4);
  const auto net = MakeNetwork(g, "logistic", 10, 3, 0.05, 6);
  auto make = [&] {
    auto a = algorithms::MakePairwiseAlgorithm(net->options, net->setups[1]);
    static_cast<algorithms::Adfs&>(*a).SetCommonTime();
    return a;
  };
  auto feed = [](algorithms::PairwiseAlgorithm* a, int k) {
    auto& adfs = static_cast<algorithms::Adfs&>(*a);
    Vec message = Vec::Zero(algorithms::Adfs::MessageSize(3));
    if (k % 7 == 3) {
      message.head(3) = Vec::Constant(3, 0.01 * (k % 13));
      message[3] = adfs.now();
      a->Respond(k % 2 == 0 ? 0 : 2, message);
    } else if (!a->WantsExchange()) {
      a->LocalStep();
    } else {
      message = *a->BeginExchange(2, 100 + k);
      message.head(3) *= 0.5;
      a->CompleteExchange(100 + k, message);
    }
  };
  auto original = make();
  for (int k = 0; k < 400; ++k) feed(original.get(), k);
  algorithms::AlgorithmState state;
  ASSERT_TRUE(original->SaveState(&state));
  auto resumed = make();
  resumed->LoadState(state);
  EXPECT_EQ(resumed->Model(), original->Model());
  for (int k = 400; k < 1500; ++k) {
    feed(original.get(), k);
    feed(resumed.get(), k);
    ASSERT_EQ(resumed->Model(), original->Model()) << "event " << k;
  }
  EXPECT_GT(original->counters().local_steps, 500);
  EXPECT_GT(original->counters().exchanges_initiated, 0);
  algorithms::AlgorithmState other;
  other.algorithm = "dadao";
  EXPECT_THROW(resumed->LoadState(other), std::invalid_argument);
}

TEST(Adfs, RefusesWhatItCannotRun) {
  topology::Graph g = topology::Ring(4);
  auto net = MakeNetwork(g, "logistic", 8, 3, 0.05, 4);
  PairwiseOptions o = net->options;
  o.compression = "lattice:8";
  EXPECT_THROW(algorithms::MakePairwiseAlgorithm(o, net->setups[0]), std::invalid_argument);
  o = net->options;
  o.shards.clear();
  EXPECT_THROW(algorithms::MakePairwiseAlgorithm(o, net->setups[0]), std::invalid_argument);
  algorithms::Dataset shard;
  shard.num_features = 2;
  shard.dense = DenseMatrix::Ones(3, 2);
  shard.labels = Vec::Ones(3);
  const auto no_l2 = algorithms::MakeProblem({"logistic", 0.0, 0}, shard, 1.0);
  EXPECT_THROW(algorithms::AdfsShardSummary(*no_l2), std::invalid_argument);
  const auto mlp_like = algorithms::MakeProblem({"least-squares", 0.1, 0}, shard, 1.0);
  EXPECT_NO_THROW(algorithms::AdfsShardSummary(*mlp_like));
}

}  // namespace
}  // namespace starling
