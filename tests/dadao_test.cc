// DADAO (algorithms/pairwise/dadao.h): exp(M dt) against a fine Euler integration
// of the ODE (Richardson-extrapolated), the ODE's conserved combinations, the gradient and
// gossip events against their formulas written here, the ledger invariant under loss,
// duplication and late replies, the fixed point against optima computed here (least squares:
// normal equations; logistic: the reference solver on the pooled data), the simulator's
// determinism, checkpoints.
#include "algorithms/pairwise/dadao.h"

#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "algorithms/data/dataset.h"
#include "algorithms/problems/problem_factory.h"
#include "algorithms/problems/reference_solver.h"
#include "node/config/run_setup.h"
#include "node/sim/dadao_simulator.h"
#include "node/sim/sim_runner.h"
#include "tests/shard_network.h"
#include "tests/temp_dir_test.h"
#include "tests/test_data.h"
#include "topology/generators.h"
#include "topology/mixing.h"

namespace starling {
namespace {

using algorithms::Dadao;
using algorithms::DadaoConstants;
using algorithms::Matrix6;
using algorithms::NodeSetup;
using algorithms::PairwiseOptions;
using Nodes = std::vector<std::unique_ptr<algorithms::PairwiseAlgorithm>>;

enum { kX, kXt, kY, kYt, kZ, kZt };

// n nodes with heterogeneous least-squares or logistic shards written here.
using Network = testing::ShardNetwork;

Network MakeNetwork(const topology::Graph& graph, const std::string& kind, int rows, int dim,
                    double l2, uint64_t seed) {
  Network net;
  testing::FillShardNetwork(graph, kind, rows, dim, l2, seed, "dadao_test", {}, &net);
  return net;
}

// The optimum of sum_i |A_i x - b_i|^2 / (2 rows) + l2/2 |x|^2 from the normal equations.
Vec NormalEquations(const Network& net) {
  const int d = static_cast<int>(net.a[0].cols());
  Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(d, d);
  Vec moment = Vec::Zero(d);
  for (size_t i = 0; i < net.a.size(); ++i) {
    const double s = 1.0 / net.a[i].rows();
    gram += s * net.a[i].transpose() * net.a[i];
    moment += s * net.a[i].transpose() * net.b[i];
  }
  gram += net.a.size() * net.l2 * Eigen::MatrixXd::Identity(d, d);
  return gram.ldlt().solve(moment);
}

PairwiseOptions DadaoOptions(const Network& net) {
  PairwiseOptions o;
  o.algorithm = "dadao";
  o.smoothness = net.smoothness;
  for (int i = 0; i < net.graph.num_nodes(); ++i) o.graph.push_back(net.graph.Neighbors(i));
  return o;
}

// Nodes driven here in the order of their clocks (a common time, as the simulator), so without
// the daemons' skew bound (which only the SkewBound test turns on).
Nodes MakeNodes(const Network& net, const PairwiseOptions& o) {
  Nodes nodes;
  for (const NodeSetup& s : net.setups) {
    nodes.push_back(algorithms::MakePairwiseAlgorithm(o, s));
    dynamic_cast<Dadao&>(*nodes.back()).SetMaxSkew(0);
  }
  return nodes;
}

Dadao& D(algorithms::PairwiseAlgorithm& a) { return dynamic_cast<Dadao&>(a); }

DadaoConstants SomeConstants() { return algorithms::DadaoConstantsOf(3.0, 0.2, 4.0); }

// The ODE dP/dt = M P integrated by explicit Euler with `steps` steps, from P(0) = I.
Matrix6 Euler(const Matrix6& m, double t, int steps) {
  const double h = t / steps;
  Matrix6 p = Matrix6::Identity();
  for (int k = 0; k < steps; ++k) p += h * (m * p);
  return p;
}

TEST(DadaoOde, MatrixHasTheEntriesOfA2) {
  const DadaoConstants c = SomeConstants();
  const Matrix6 m = algorithms::DadaoOdeMatrix(c);
  // nu = mu/2 = 0.1, sqrt(nu/L) = sqrt(1/30).
  const double r = std::sqrt(0.1 / 3.0);
  EXPECT_DOUBLE_EQ(c.eta, r / 8);
  EXPECT_DOUBLE_EQ(c.alpha, r / 4);
  EXPECT_DOUBLE_EQ(c.theta, 0.5 / r);
  EXPECT_DOUBLE_EQ(c.gamma, 1 / 12.0);
  EXPECT_DOUBLE_EQ(c.gamma_tilde, 1 / (4 * std::sqrt(0.3)));
  EXPECT_DOUBLE_EQ(c.beta_tilde, 2 * 4.0 * std::sqrt(30.0));
  EXPECT_DOUBLE_EQ(m(kYt, kXt), -c.theta * c.nu);
  EXPECT_DOUBLE_EQ(m(kYt, kZ), -c.theta);
  EXPECT_DOUBLE_EQ(m(kZt, kZ), c.alpha_tilde);
  EXPECT_EQ(m(kX, kY), 0.0);
  EXPECT_EQ((m.array() != 0).count(), 13);
}

// exp(M dt) against Euler with 2e5 and 4e5 steps, extrapolated (2 E(2n) - E(n) cancels Euler's
// first-order error), for a short and a long interval (the long one needs squarings).
TEST(DadaoOde, ExponentialMatchesFineEuler) {
  const Matrix6 m = algorithms::DadaoOdeMatrix(SomeConstants());
  for (double t : {0.05, 1.0, 7.5}) {
    const Matrix6 e = algorithms::ExpDadao(m * t);
    const Matrix6 euler = 2 * Euler(m, t, 400000) - Euler(m, t, 200000);
    EXPECT_LE((e - euler).norm(), 1e-8 * e.norm()) << "t = " << t;
    // Plain Euler is within its own first-order error, far from exp: the check can fail.
    EXPECT_GT((Euler(m, t, 100) - e).norm(), 1e-6) << "t = " << t;
  }
  EXPECT_EQ(algorithms::ExpDadao(Matrix6::Zero()), Matrix6::Identity());
  // The semigroup property: exp(M (s + t)) = exp(M s) exp(M t).
  const Matrix6 a = algorithms::ExpDadao(m * 2.0) * algorithms::ExpDadao(m * 3.5);
  EXPECT_LE((a - algorithms::ExpDadao(m * 5.5)).norm(), 1e-12 * a.norm());
}

// The left null vectors of M: eta~ X + eta X~ and alpha~ Z + alpha Z~ are kept by the ODE.
TEST(DadaoOde, KeepsItsConservedCombinations) {
  const DadaoConstants c = SomeConstants();
  const Matrix6 e = algorithms::ExpDadao(algorithms::DadaoOdeMatrix(c) * 4.0);
  Eigen::Matrix<double, 1, 6> wx = Eigen::Matrix<double, 1, 6>::Zero(), wz = wx;
  wx(kX) = c.eta_tilde, wx(kXt) = c.eta;
  wz(kZ) = c.alpha_tilde, wz(kZt) = c.alpha;
  EXPECT_LE((wx * e - wx).norm(), 1e-14);
  EXPECT_LE((wz * e - wz).norm(), 1e-14);
}

TEST(DadaoClock, DrawsAreExponentialAndSeeded) {
  double sum = 0, sum2 = 0;
  const int n = 200000;
  for (int k = 0; k < n; ++k) {
    const double v = algorithms::DadaoClockDraw(42, 1, k);
    ASSERT_GE(v, 0.0);
    sum += v;
    sum2 += v * v;
  }
  EXPECT_NEAR(sum / n, 1.0, 0.01);   // Exp(1): mean 1
  EXPECT_NEAR(sum2 / n, 2.0, 0.04);  // second moment 2
  EXPECT_EQ(algorithms::DadaoClockDraw(42, 1, 5), algorithms::DadaoClockDraw(42, 1, 5));
  EXPECT_NE(algorithms::DadaoClockDraw(42, 1, 5), algorithms::DadaoClockDraw(43, 1, 5));
  EXPECT_NE(algorithms::DadaoClockDraw(42, 1, 5), algorithms::DadaoClockDraw(42, 2, 5));
}

// The six vectors of a node as a d x 6 matrix.
Eigen::MatrixXd StateOf(const Dadao& a) {
  Eigen::MatrixXd p(a.Model().size(), 6);
  for (int k = 0; k < 6; ++k) p.col(k) = a.State(k);
  return p;
}

// Runs the nodes for a while (lossless, in event order) so that every vector is non-zero.
void Warm(const Network& net, Nodes* nodes, int events) {
  std::mt19937_64 rng(99);
  uint64_t seq = 1;
  for (int e = 0; e < events; ++e) {
    size_t i = 0;
    for (size_t k = 1; k < nodes->size(); ++k) {
      if (D(*(*nodes)[k]).NextEventTime() < D(*(*nodes)[i]).NextEventTime()) i = k;
    }
    auto& a = *(*nodes)[i];
    if (!a.WantsExchange()) {
      a.LocalStep();
      continue;
    }
    const auto& nb = net.setups[i].neighbors;
    const int j = nb[rng() % nb.size()];
    const Vec offer = *a.BeginExchange(j, seq);
    const Vec reply = *(*nodes)[j]->Respond(static_cast<int>(i), offer);
    ASSERT_TRUE(a.CompleteExchange(seq++, reply));
  }
}

TEST(Dadao, GradientEventIsTheFormula) {
  Network net = MakeNetwork(topology::Ring(4), "logistic", 20, 3, 1e-2, 3);
  auto nodes = MakeNodes(net, DadaoOptions(net));
  Warm(net, &nodes, 300);
  Dadao& a = D(*nodes[1]);
  while (a.WantsExchange()) {  // let its gossip events pass unanswered (timed out)
    a.BeginExchange(0, 999);
    a.AbortExchange(true);
  }
  // Integrate to the gradient event first, so that LocalStep is the jump alone.
  a.AdvanceTo(a.NextEventTime());
  const Eigen::MatrixXd before = StateOf(a);
  const DadaoConstants& c = a.constants();
  Vec grad;
  net.problems[1]->Gradient(before.col(kX), &grad);
  const Vec g = grad - c.nu * before.col(kX) - before.col(kYt);
  ASSERT_GT(g.norm(), 1e-6);
  a.LocalStep();
  const Eigen::MatrixXd after = StateOf(a);
  EXPECT_LE((after.col(kX) - (before.col(kX) - c.gamma * g)).norm(), 1e-14);
  EXPECT_LE((after.col(kXt) - (before.col(kXt) - c.gamma_tilde * g)).norm(), 1e-13);
  EXPECT_LE((after.col(kYt) - (before.col(kYt) + (c.delta + c.delta_tilde) * g)).norm(), 1e-13);
  for (int k : {kY, kZ, kZt}) EXPECT_EQ(after.col(k), before.col(k)) << "column " << k;
}

TEST(Dadao, GossipEventIsTheFormula) {
  Network net = MakeNetwork(topology::Ring(4), "logistic", 20, 3, 1e-2, 3);
  auto nodes = MakeNodes(net, DadaoOptions(net));
  Warm(net, &nodes, 300);
  Dadao& i = D(*nodes[2]);
  Dadao& j = D(*nodes[3]);
  // Let i's gossip come due, then bring both to a common later time: BeginExchange (whose
  // gossip time is past) and the clocks the messages carry then integrate nothing more.
  while (!i.WantsExchange()) i.LocalStep();
  const double t = std::max(i.now(), j.now()) + 0.3;
  i.AdvanceTo(t);
  j.AdvanceTo(t);
  const Eigen::MatrixXd pi = StateOf(i), pj = StateOf(j);
  const Vec d = (pi.col(kY) + pi.col(kZ)) - (pj.col(kY) + pj.col(kZ));
  ASSERT_GT(d.norm(), 1e-6);
  const Vec offer = *i.BeginExchange(3, 12345);
  const Eigen::MatrixXd pi_at_offer = StateOf(i);  // integrated to its gossip time, if later
  const Vec reply = *j.Respond(2, offer);
  ASSERT_TRUE(i.CompleteExchange(12345, reply));
  const DadaoConstants& c = i.constants();
  const Vec d2 = (pi_at_offer.col(kY) + pi_at_offer.col(kZ)) - (pj.col(kY) + pj.col(kZ));
  const Eigen::MatrixXd qi = StateOf(i), qj = StateOf(j);
  EXPECT_LE((qi.col(kZ) - (pi_at_offer.col(kZ) - c.beta * d2)).norm(), 1e-12);
  EXPECT_LE((qi.col(kZt) - (pi_at_offer.col(kZt) - c.beta_tilde * d2)).norm(), 1e-10);
  EXPECT_LE((qj.col(kZ) - (pj.col(kZ) + c.beta * d2)).norm(), 1e-12);
  EXPECT_LE((qj.col(kZt) - (pj.col(kZt) + c.beta_tilde * d2)).norm(), 1e-10);
  for (int k : {kX, kXt, kY, kYt}) {
    EXPECT_EQ(qi.col(k), pi_at_offer.col(k)) << "column " << k;
    EXPECT_EQ(qj.col(k), pj.col(k)) << "column " << k;
  }
  // With beta = 1/2 the pair's Y + Z are equal afterwards.
  EXPECT_LE(((qi.col(kY) + qi.col(kZ)) - (qj.col(kY) + qj.col(kZ))).norm(), 1e-12);
}

// The exchange driver's crossing rule: when two neighbours' offers cross, the higher id abandons
// its own (AbortCrossedExchange) and serves the other's request; the lower id answers the
// higher's offer BUSY, which then matches no offer. A gossip abandoned that way was refused, not
// lost in flight: it is due again at once, as one refused with BUSY. A time-out is not a
// crossing (see GossipTimedOutThenRequestFromSameNeighbourIsSettled).
TEST(Dadao, GossipAbandonedForACrossedRequestIsDueAgain) {
  Network net = MakeNetwork(topology::Ring(4), "logistic", 20, 3, 1e-2, 3);
  auto nodes = MakeNodes(net, DadaoOptions(net));
  Warm(net, &nodes, 300);
  Dadao& a = D(*nodes[1]);
  Dadao& b = D(*nodes[0]);
  a.SetMaxSkew(0);  // no bound: its next gossip comes due on its own schedule
  while (!a.GossipDue()) a.LocalStep();
  const int64_t gossips = a.gossips();
  const Vec offer = *a.BeginExchange(0, 500);
  ASSERT_EQ(a.gossips(), gossips + 1);
  EXPECT_FALSE(a.GossipDue());
  a.AbortCrossedExchange();  // crossed: node 0's request arrives next, on the same edge
  a.Respond(0, *b.BeginExchange(1, 600));
  EXPECT_EQ(a.gossips(), gossips);
  EXPECT_TRUE(a.GossipDue());
  EXPECT_EQ(a.owed(), 1);
  // Taken again: then timed out, and a local step before node 0's next request.
  a.BeginExchange(0, 501);
  EXPECT_EQ(a.gossips(), gossips + 1);
  EXPECT_EQ(a.owed(), 0);
  a.AbortExchange(true);
  a.LocalStep();
  b.AbortExchange(true);
  a.Respond(0, *b.BeginExchange(1, 601));
  EXPECT_EQ(a.gossips(), gossips + 1);
  EXPECT_EQ(a.owed(), 0);
}

// The driver backs off 1-20 ms after a time-out: a request of the same neighbour's (here a
// ping) may arrive before the node's next offer. The timed-out gossip was lost, not refused: it
// stays counted once, and it is settled by a ping to that neighbour, not made
// again. (Before AbortCrossedExchange, DADAO took any request on the edge of an offer just
// abandoned as a crossing: the gossip was made twice and the settling ping cancelled.)
TEST(Dadao, GossipTimedOutThenRequestFromSameNeighbourIsSettled) {
  Network net = MakeNetwork(topology::Ring(4), "logistic", 20, 3, 1e-2, 3);
  auto nodes = MakeNodes(net, DadaoOptions(net));
  Warm(net, &nodes, 300);
  Dadao& a = D(*nodes[1]);
  Dadao& b = D(*nodes[0]);
  a.SetMaxSkew(0);
  b.SetMaxSkew(1e-9);  // node 0 is held by its bound: its next request is a ping
  while (!a.GossipDue()) a.LocalStep();
  const int64_t gossips = a.gossips();
  const int64_t settled = a.settled();
  const Vec gossip = *a.BeginExchange(0, 500);
  ASSERT_EQ(a.gossips(), gossips + 1);
  a.AbortExchange(true);          // timed out: the request or the reply was lost
  ASSERT_EQ(a.settle_edge(), 0);  // node 0 is the first neighbour of node 1 on the ring
  const int64_t b_pings = b.pings();
  a.Respond(0, *b.BeginExchange(1, 600));
  ASSERT_EQ(b.pings(), b_pings + 1);  // node 0's request was a ping
  EXPECT_EQ(a.gossips(), gossips + 1);
  EXPECT_EQ(a.owed(), 0);
  EXPECT_EQ(a.settle_edge(), 0);
  EXPECT_EQ(a.PreferredPeer(), 0);
  EXPECT_TRUE(a.ShouldWait());
  // The next offer is the settling ping; node 0 had served the gossip (its reply was lost), so
  // the running sum it returns has changed: settled, not retried.
  const int64_t a_pings = a.pings();
  b.Respond(1, gossip);
  const Vec ping = *a.BeginExchange(0, 501);
  EXPECT_EQ(a.pings(), a_pings);  // a settling ping is not a skew-bound ping
  EXPECT_TRUE(a.CompleteExchange(501, *b.Respond(1, ping)));
  EXPECT_EQ(a.settled(), settled + 1);
  EXPECT_EQ(a.settle_edge(), -1);
  EXPECT_EQ(a.gossips(), gossips + 1);
  EXPECT_EQ(a.owed(), 0);
}

// A fake channel over the event-ordered schedule: requests lost, replies lost, duplicated or
// held back (then merged late, after the initiator has timed out and moved on).
class LossyDriver {
 public:
  LossyDriver(const Network& net, Nodes* nodes, double loss, double dup, double delay,
              uint64_t seed)
      : LossyDriver(net, nodes, loss, loss, dup, delay, seed) {}
  // Requests lost with probability request_loss, replies with reply_loss.
  LossyDriver(const Network& net, Nodes* nodes, double request_loss, double reply_loss, double dup,
              double delay, uint64_t seed)
      : net_(net),
        nodes_(*nodes),
        loss_(request_loss),
        reply_loss_(reply_loss),
        dup_(dup),
        delay_(delay),
        rng_(seed),
        next_seq_(seed << 24) {}  // drivers of one test never reuse each other's seqs

  void Activate() {
    ++now_;
    DeliverDue();
    size_t i = 0;
    for (size_t k = 1; k < nodes_.size(); ++k) {
      if (D(*nodes_[k]).NextEventTime() < D(*nodes_[i]).NextEventTime()) i = k;
    }
    auto& a = *nodes_[i];
    if (!a.WantsExchange()) {
      a.LocalStep();
      return;
    }
    const auto& nb = net_.setups[i].neighbors;
    // As the exchange driver: the neighbour the node asks for (a timed-out gossip's), else any.
    const int j = a.PreferredPeer() >= 0 ? a.PreferredPeer() : nb[rng_() % nb.size()];
    const uint64_t seq = next_seq_++;
    const Vec offer = *a.BeginExchange(j, seq);
    if (Chance(loss_)) {
      ++lost_;
      a.AbortExchange(true);
      return;
    }
    Vec reply = *nodes_[j]->Respond(static_cast<int>(i), offer);
    if (Chance(reply_loss_)) {
      ++lost_;
      a.AbortExchange(true);
      return;
    }
    const int copies = Chance(dup_) ? 2 : 1;
    if (Chance(delay_)) {
      a.AbortExchange(true);
      const int64_t due = now_ + 1 + static_cast<int64_t>(rng_() % 12);
      for (int c = 0; c < copies; ++c) late_.emplace(due + c, Late{i, seq, reply});
      return;
    }
    for (int c = 0; c < copies; ++c) a.CompleteExchange(seq, reply);
  }
  void DeliverDue() {
    while (!late_.empty() && late_.begin()->first <= now_) {
      const Late l = late_.begin()->second;
      late_.erase(late_.begin());
      nodes_[l.initiator]->CompleteExchange(l.seq, l.reply);
    }
  }
  void Drain() {
    while (!late_.empty()) {
      now_ = late_.begin()->first;
      DeliverDue();
    }
  }
  int64_t lost() const { return lost_; }

 private:
  struct Late {
    size_t initiator;
    uint64_t seq;
    Vec reply;
  };
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  const Network& net_;
  Nodes& nodes_;
  double loss_, reply_loss_, dup_, delay_;
  std::mt19937_64 rng_;
  int64_t now_ = 0;
  uint64_t next_seq_;
  std::multimap<int64_t, Late> late_;
  int64_t lost_ = 0;
};

// sum_i (alpha~ Z_i + alpha Z~_i) + (alpha~ beta + alpha beta~) sum_edges (R - A), which must
// be 0; and the unsettled part sum_edges |R - A|.
struct Ledger {
  Vec total;
  double unsettled = 0;
};
Ledger LedgerOf(const Network& net, const Nodes& nodes) {
  const DadaoConstants& c = D(*nodes[0]).constants();
  const int d = static_cast<int>(net.setups[0].x0.size());
  Ledger l{Vec::Zero(d)};
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Dadao& a = D(*nodes[i]);
    l.total += c.alpha_tilde * a.State(kZ) + c.alpha * a.State(kZt);
    for (int j : net.setups[i].neighbors) {
      // Served by j for i, and mirrored by i.
      const Vec open = D(*nodes[j]).Served(static_cast<int>(i)) - a.Mirrored(j);
      l.total += (c.alpha_tilde * c.beta + c.alpha * c.beta_tilde) * open;
      l.unsettled += open.norm();
    }
  }
  return l;
}

// A run of the ledger tests' instance (8 nodes, ER(0.5), least squares) through LossyDriver:
// `loss` of requests and of replies lost, 10% of replies duplicated and 10% late; the ledger
// invariant checked every 500 activations; stopped early if a model leaves |x| < 1e6.
struct LossRun {
  double worst_ledger = 0, scale = 0;  // max |invariant| and max |Z~| over the checks
  double final_ledger = 0;
  double worst_error = 0;  // max_i |x_i - x*| / |x*| at the end
  bool diverged = false;
  int64_t lost = 0, settled = 0, retried = 0;
};
LossRun RunUnderLoss(double loss, bool settling, uint64_t seed) {
  Network net = MakeNetwork(topology::ErdosRenyi(8, 0.5, 4), "least-squares", 10, 4, 0.05, 21);
  auto nodes = MakeNodes(net, DadaoOptions(net));
  for (auto& a : nodes) D(*a).SetSettling(settling);
  LossyDriver driver(net, &nodes, loss, loss, 0.1, 0.1, seed);
  LossRun r;
  for (int round = 0; round < 660 && !r.diverged; ++round) {
    for (int t = 0; t < 500; ++t) driver.Activate();
    const Ledger l = LedgerOf(net, nodes);
    r.worst_ledger = std::max(r.worst_ledger, l.total.norm());
    for (const auto& a : nodes) {
      r.scale = std::max(r.scale, D(*a).State(kZt).norm());
      r.diverged = r.diverged || !(a->Model().norm() < 1e6);
    }
  }
  driver.Drain();
  r.final_ledger = LedgerOf(net, nodes).total.norm();
  const Vec x_star = NormalEquations(net);
  for (const auto& a : nodes) {
    r.worst_error = std::max(r.worst_error, (a->Model() - x_star).norm() / x_star.norm());
    r.settled += D(*a).settled();
    r.retried += D(*a).retried();
  }
  r.lost = driver.lost();
  return r;
}

// 10% of requests and 10% of replies lost, 10% duplicated, 10% late: the ledger invariant holds
// at every check and every node ends within 1e-9 of the normal equations' optimum.
TEST(Dadao, LedgerInvariantHoldsUnderLossAndTheRunStillReachesTheOptimum) {
  const LossRun r = RunUnderLoss(0.1, /*settling=*/true, 5);
  EXPECT_GT(r.lost, 10000);
  EXPECT_GT(r.settled, 1000);  // lost replies' halves fetched by a settling ping
  EXPECT_GT(r.retried, 1000);  // lost requests' gossips made again
  EXPECT_FALSE(r.diverged);
  EXPECT_GT(r.scale, 1.0);
  EXPECT_LE(r.worst_ledger, 1e-11 * r.scale);
  EXPECT_LE(r.final_ledger, 1e-11 * r.scale);
  EXPECT_LE(r.worst_error, 1e-9);
}

// The loss the method did not survive: with 25% of requests and 25% of replies lost, a lost
// reply's half left to the next reply on its edge (settling off, as before) makes the run
// diverge (and did at 14-15% already); settling each timed-out gossip at once (a ping to the
// same neighbour for its running sum, or the gossip again if its request was lost) converges,
// the invariant holding throughout.
TEST(Dadao, SettlingTimedOutGossipsKeepsTheRunConvergentUnderHeavyLoss) {
  const LossRun off = RunUnderLoss(0.25, /*settling=*/false, 6);
  EXPECT_TRUE(off.diverged) << "error " << off.worst_error;
  const LossRun on = RunUnderLoss(0.25, /*settling=*/true, 6);
  EXPECT_FALSE(on.diverged);
  EXPECT_LE(on.worst_ledger, 1e-11 * on.scale);
  EXPECT_LE(on.final_ledger, 1e-11 * on.scale);
  EXPECT_LE(on.worst_error, 1e-9);
  std::printf(
      "25%% loss: without settling %s (error %.3g), with it error %.3g (%lld lost, "
      "%lld settled, %lld retried)\n",
      off.diverged ? "diverged" : "converged", off.worst_error, on.worst_error,
      static_cast<long long>(on.lost), static_cast<long long>(on.settled),
      static_cast<long long>(on.retried));
}

// The settling step by step: a gossip that times out makes the node ask for that neighbour next
// (PreferredPeer) and wait (ShouldWait); the settling ping changes nothing at the responder; its
// reply carries the running sum, whose change the initiator applies (the lost reply's half); a
// sum unchanged (the request was lost) makes the gossip due again.
TEST(Dadao, TimedOutGossipIsSettledByAPingToTheSameNeighbour) {
  Network net = MakeNetwork(topology::Ring(4), "logistic", 20, 3, 1e-2, 3);
  auto nodes = MakeNodes(net, DadaoOptions(net));
  Warm(net, &nodes, 300);
  Dadao& a = D(*nodes[1]);
  Dadao& b = D(*nodes[2]);
  const DadaoConstants& c = a.constants();
  // Reply lost: node 2 serves, node 1 times out.
  while (!a.GossipDue()) a.LocalStep();
  const Vec offer = *a.BeginExchange(2, 700);
  const Vec served_before = b.Served(1);
  b.Respond(1, offer);  // the reply is lost
  const Vec d = b.Served(1) - served_before;
  ASSERT_GT(d.norm(), 1e-8);
  a.AbortExchange(true);
  EXPECT_EQ(a.PreferredPeer(), 2);
  EXPECT_TRUE(a.ShouldWait());
  EXPECT_TRUE(a.WantsExchange());
  EXPECT_EQ(a.NextEventTime(), a.now());
  const Eigen::MatrixXd before = StateOf(a);
  const Eigen::MatrixXd b_before = StateOf(b);
  const Vec ping = *a.BeginExchange(2, 701);
  EXPECT_EQ(StateOf(a), before);  // no integration: the node's clock stands still
  const Vec reply = *b.Respond(1, ping);
  EXPECT_EQ(StateOf(b), b_before);  // a ping: the responder changes nothing
  ASSERT_TRUE(a.CompleteExchange(701, reply));
  const Eigen::MatrixXd after = StateOf(a);
  EXPECT_LE((after.col(kZ) - (before.col(kZ) + c.beta * d)).norm(), 1e-12);
  EXPECT_LE((after.col(kZt) - (before.col(kZt) + c.beta_tilde * d)).norm(), 1e-10);
  EXPECT_EQ(a.settled(), 1);
  EXPECT_EQ(a.owed(), 0);
  EXPECT_EQ(a.PreferredPeer(), -1);
  // Request lost: nothing served; the settling ping finds the sum unchanged.
  while (!a.GossipDue()) a.LocalStep();
  const int64_t gossips = a.gossips();
  a.BeginExchange(2, 702);
  a.AbortExchange(true);
  ASSERT_EQ(a.PreferredPeer(), 2);
  const Vec ping2 = *a.BeginExchange(2, 703);
  ASSERT_TRUE(a.CompleteExchange(703, *b.Respond(1, ping2)));
  EXPECT_EQ(a.retried(), 1);
  EXPECT_EQ(a.owed(), 1);
  EXPECT_EQ(a.gossips(), gossips);
  EXPECT_TRUE(a.GossipDue());
  // Three settling pings lost: given up, the half left to the next reply on the edge.
  a.BeginExchange(2, 704);  // the owed gossip, whose request is lost
  a.AbortExchange(true);
  for (uint64_t s = 705; s < 708; ++s) {
    ASSERT_EQ(a.PreferredPeer(), 2) << s;
    a.BeginExchange(2, s);
    a.AbortExchange(true);
  }
  EXPECT_EQ(a.PreferredPeer(), -1);
  EXPECT_EQ(a.settles_given_up(), 1);
}

double EnvOr(const char* name, double def) {
  const char* v = std::getenv(name);
  return v ? std::atof(v) : def;
}

// Exploration (not a check): the ledger test's instance under REQ_LOSS / REP_LOSS / DUP / DELAY
// (ROUNDS rounds of 500 activations), printing per round the worst distance to x*, the open
// ledgers and the Z~ scale. E.g. EXPLORE=1 REQ_LOSS=0.08 REP_LOSS=0.08 dadao_test
// --gtest_filter='*ExploreLoss*'
TEST(Dadao, ExploreLoss) {
  if (!std::getenv("EXPLORE")) GTEST_SKIP() << "set EXPLORE (and the others) to run it";
  Network net = MakeNetwork(topology::ErdosRenyi(8, 0.5, 4), "least-squares", 10, 4, 0.05, 21);
  auto nodes = MakeNodes(net, DadaoOptions(net));
  const DadaoConstants& c = D(*nodes[0]).constants();
  std::printf("beta~ %.4g beta %.3g alpha %.3g alpha~ %.3g r %.3g L %.3g\n", c.beta_tilde, c.beta,
              c.alpha, c.alpha_tilde, D(*nodes[0]).comm_rate(), net.smoothness);
  LossyDriver driver(net, &nodes, EnvOr("REQ_LOSS", 0.05), EnvOr("REP_LOSS", 0.05),
                     EnvOr("DUP", 0.1), EnvOr("DELAY", 0.1),
                     static_cast<uint64_t>(EnvOr("SEED", 5)));
  const Vec x_star = NormalEquations(net);
  const int rounds = static_cast<int>(EnvOr("ROUNDS", 200));
  const int every = static_cast<int>(EnvOr("EVERY", 10));
  for (int round = 0; round < rounds; ++round) {
    for (int t = 0; t < 500; ++t) driver.Activate();
    double worst = 0, zt = 0, d = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      worst = std::max(worst, (nodes[i]->Model() - x_star).norm() / x_star.norm());
      zt = std::max(zt, D(*nodes[i]).State(kZt).norm());
      for (int j : net.setups[i].neighbors) {
        const Dadao& a = D(*nodes[i]);
        const Dadao& b = D(*nodes[j]);
        d = std::max(d, (a.State(kY) + a.State(kZ) - b.State(kY) - b.State(kZ)).norm());
      }
    }
    const Ledger l = LedgerOf(net, nodes);
    if (round % every == 0 || !(worst < 1e6)) {
      std::printf("round %3d t %.1f worst %.3g open %.3g ledger %.3g max|Z~| %.3g max|d| %.3g\n",
                  round, D(*nodes[0]).now(), worst, l.unsettled, l.total.norm(), zt, d);
    }
    if (!(worst < 1e6)) break;
  }
  int64_t settled = 0, retried = 0, given_up = 0;
  for (const auto& a : nodes) {
    settled += D(*a).settled(), retried += D(*a).retried(), given_up += D(*a).settles_given_up();
  }
  std::printf("lost %lld settled %lld retried %lld given up %lld\n",
              static_cast<long long>(driver.lost()), static_cast<long long>(settled),
              static_cast<long long>(retried), static_cast<long long>(given_up));
}

TEST(Dadao, FixedPointIsTheLeastSquaresOptimum) {
  Network net = MakeNetwork(topology::Ring(8), "least-squares", 10, 4, 0.05, 5);
  node::DadaoSimulator sim(net.setups, DadaoOptions(net), 17);
  sim.RunUntilLocalSteps(12000);
  const Vec x_star = NormalEquations(net);
  for (int i = 0; i < sim.num_nodes(); ++i) {
    EXPECT_LE((sim.node(i).Model() - x_star).norm(), 1e-10 * x_star.norm()) << "node " << i;
  }
  EXPECT_GT(sim.exchanges(), 0);
}

TEST(Dadao, FixedPointIsTheLogisticOptimum) {
  Network net = MakeNetwork(topology::ErdosRenyi(8, 0.4, 2), "logistic", 40, 5, 1e-2, 8);
  node::DadaoSimulator sim(net.setups, DadaoOptions(net), 3);
  sim.RunUntilLocalSteps(8000);
  Vec g, total;
  for (int i = 0; i < sim.num_nodes(); ++i) {
    total = Vec::Zero(5);
    for (const auto& p : net.problems) {
      p->Gradient(sim.node(i).Model(), &g);
      total += g;
    }
    EXPECT_LE(total.norm(), 1e-9) << "node " << i;
  }
  algorithms::Dataset all;
  all.num_features = 5;
  all.source = "pooled";
  const int rows = static_cast<int>(net.a[0].rows());
  all.dense.resize(rows * 8, 5);
  all.labels.resize(rows * 8);
  for (int i = 0; i < 8; ++i) {
    all.dense.middleRows(i * rows, rows) = net.a[i];
    all.labels.segment(i * rows, rows) = net.b[i];
  }
  auto pooled = algorithms::MakeProblem({"logistic", 1e-2, 0}, all, 1.0 / (rows * 8));
  const Vec x_ref = algorithms::SolveReference(*pooled).x;
  for (int i = 0; i < sim.num_nodes(); ++i) {
    EXPECT_LE((sim.node(i).Model() - x_ref).norm(), 1e-8 * x_ref.norm()) << "node " << i;
  }
}

TEST(Dadao, SimulatorIsDeterministicForASeed) {
  Network net = MakeNetwork(topology::ErdosRenyi(8, 0.4, 2), "logistic", 20, 5, 1e-2, 8);
  std::vector<Vec> runs[3];
  for (int r = 0; r < 3; ++r) {
    node::DadaoSimulator sim(net.setups, DadaoOptions(net), r < 2 ? 5 : 6);
    sim.RunUntilLocalSteps(300);
    for (int i = 0; i < 8; ++i) runs[r].push_back(sim.node(i).Model());
  }
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(runs[0][i], runs[1][i]) << "node " << i;  // bit for bit
    EXPECT_NE(runs[0][i], runs[2][i]) << "node " << i;  // another seed, other neighbour picks
  }
}

TEST(Dadao, CheckpointRoundTrip) {
  Network net = MakeNetwork(topology::ErdosRenyi(6, 0.5, 4), "logistic", 20, 3, 1e-2, 4);
  const PairwiseOptions o = DadaoOptions(net);
  auto nodes = MakeNodes(net, o);
  LossyDriver first(net, &nodes, 0.1, 0.1, 0.1, 5);
  for (int t = 0; t < 400; ++t) first.Activate();
  first.Drain();
  auto resumed = MakeNodes(net, o);
  for (size_t i = 0; i < nodes.size(); ++i) {
    algorithms::AlgorithmState s;
    ASSERT_TRUE(nodes[i]->SaveState(&s));
    resumed[i]->LoadState(s);
  }
  LossyDriver a(net, &nodes, 0.1, 0.1, 0.1, 6), b(net, &resumed, 0.1, 0.1, 0.1, 6);
  for (int t = 0; t < 400; ++t) {
    a.Activate();
    b.Activate();
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_EQ(StateOf(D(*nodes[i])), StateOf(D(*resumed[i]))) << "node " << i;
    EXPECT_EQ(D(*nodes[i]).now(), D(*resumed[i]).now()) << "node " << i;
    EXPECT_EQ(nodes[i]->counters().local_steps, resumed[i]->counters().local_steps);
  }
  algorithms::AlgorithmState s;
  nodes[0]->SaveState(&s);
  s.algorithm = "asy-sonata";
  EXPECT_THROW(resumed[0]->LoadState(s), std::invalid_argument);
}

TEST(Dadao, RefusesWhatItCannotRun) {
  Network net = MakeNetwork(topology::Ring(4), "least-squares", 5, 2, 0.0, 3);
  PairwiseOptions o = DadaoOptions(net);
  // l2 = 0: no strong convexity to take mu from.
  EXPECT_THROW(algorithms::MakePairwiseAlgorithm(o, net.setups[0]), std::invalid_argument);
  o.params.Set("dadao-mu", 0.1);
  EXPECT_NO_THROW(algorithms::MakePairwiseAlgorithm(o, net.setups[0]));
  o.compression = "lattice:8";
  EXPECT_THROW(algorithms::MakePairwiseAlgorithm(o, net.setups[0]), std::invalid_argument);
  o.compression = "none";
  auto a = algorithms::MakePairwiseAlgorithm(o, net.setups[0]);
  EXPECT_THROW(a->Respond(1, Vec::Zero(3)), std::invalid_argument);  // wrong size
  EXPECT_THROW(a->Respond(2, Vec::Zero(2)), std::invalid_argument);  // not a neighbour
}

// The DADAO simulator orders events by every node's unit-rate clocks: --slow-node would be
// silently ignored there (it was: a 20-node run with --slow-node 0:4 ran every node alike), so it
// is refused, naming the option.
class DadaoSimTest : public testing::TempDirTest {};

TEST_F(DadaoSimTest, RefusesSlowNode) {
  std::string rows;
  for (int r = 0; r < 20; ++r) {
    rows += std::to_string(r % 4) + ',' + std::to_string(r * 0.1) + ',' +
            std::to_string(1.0 - r * 0.05) + '\n';
  }
  node::RunConfig c;
  c.algorithm = "dadao";
  c.problem = "least-squares";
  c.l2 = 0.1;
  c.data = Write("d.csv", rows);
  c.format = "csv";
  c.nodes = 4;
  c.topology = "ring";
  c.iterations = 5;
  const node::RunSetup setup = node::BuildRunSetup(c, {});
  EXPECT_NO_THROW(node::RunSimulation(c, setup, {}));  // the same run without the option
  c.slow_nodes = "1:4";
  try {
    node::RunSimulation(c, setup, {});
    ADD_FAILURE() << "--slow-node accepted by the dadao simulator";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--slow-node"), std::string::npos) << e.what();
  }
}

// Without a common time (nodes activated in a random order, not by their clocks, as daemons
// are): without the skew bound the clocks drift apart (a node behind offers a state many units
// old to a responder ahead) and the run does not converge; with the bound of 0.5 (a node whose
// next event lies beyond the oldest clock it has heard plus 0.5 pings instead of stepping, and
// a node that hears a clock ahead takes its gradient events up to it) it converges. Clocks
// travel in the messages only (no AdvanceTo from outside).
TEST(Dadao, SkewBoundKeepsARandomOrderRunConvergent) {
  Network net = MakeNetwork(topology::Ring(8), "least-squares", 10, 4, 0.05, 5);
  const Vec x_star = NormalEquations(net);
  for (double skew : {0.0, 0.5}) {
    auto nodes = MakeNodes(net, DadaoOptions(net));
    for (auto& n : nodes) D(*n).SetMaxSkew(skew);
    std::mt19937_64 rng(5);
    uint64_t seq = 1;
    for (int e = 0; e < 400000; ++e) {
      const size_t i = rng() % nodes.size();
      auto& a = *nodes[i];
      if (!a.WantsExchange()) {
        a.LocalStep();
        continue;
      }
      const auto& nb = net.setups[i].neighbors;
      const int j = nb[rng() % nb.size()];
      const Vec offer = *a.BeginExchange(j, seq);
      const Vec reply = *nodes[j]->Respond(static_cast<int>(i), offer);
      a.CompleteExchange(seq++, reply);
    }
    const double err = (nodes[0]->Model() - x_star).norm();
    if (skew == 0) {
      EXPECT_FALSE(err < 1e-3) << "unbounded skew: error " << err;
    } else {
      EXPECT_LE(err, 1e-9 * x_star.norm()) << "max skew " << skew;
    }
  }
}

// The target in the simulator: relative gap 1e-8 on a9a (logistic, lambda = 1e-2, 16
// nodes) on a ring and on ER(0.3), against the reference solver's optimum.
class DadaoA9a : public ::testing::TestWithParam<const char*> {};

TEST_P(DadaoA9a, ReachesRelativeGap1e8) {
  STARLING_REQUIRE_FILE(testing::SharedData("a9a"));
  node::RunConfig config;
  config.algorithm = "dadao";
  config.problem = "logistic";
  config.data = testing::SharedData("a9a");
  config.format = "libsvm";
  config.features = 123;
  config.nodes = 16;
  config.topology = GetParam();
  config.l2 = 1e-2;
  config.seed = 1;
  config.iterations = 2000;
  config.log_every = 50;
  const node::RunSetup setup = node::BuildRunSetup(config);
  const algorithms::ReferenceSolution ref = algorithms::SolveReference(*setup.global);
  ASSERT_LE(ref.grad_norm, 1e-10);
  char f_star[64];
  std::snprintf(f_star, sizeof f_star, "%.17g", ref.value);
  config.reference_optimum = f_star;
  node::SimOptions options;
  options.stop_at_gap = 1e-8;
  const node::SimSummary s = node::RunSimulation(config, setup, options);
  ASSERT_TRUE(s.rel_gap.has_value());
  EXPECT_LE(*s.rel_gap, 1e-8) << "after " << s.iterations << " gradient events per node";
  std::printf(
      "dadao a9a %s 16: rel_gap %.3g after %lld gradient events per node, %lld exchanges "
      "per node\n",
      GetParam(), *s.rel_gap, static_cast<long long>(s.iterations),
      static_cast<long long>(s.comm_rounds));
}

INSTANTIATE_TEST_SUITE_P(Topologies, DadaoA9a, ::testing::Values("ring", "er:0.3"),
                         [](const auto& info) { return info.index == 0 ? "Ring" : "Er03"; });

}  // namespace
}  // namespace starling
