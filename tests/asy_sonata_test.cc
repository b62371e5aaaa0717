// ASY-SONATA (algorithms/pairwise/asy_sonata.h): the tracker invariant
// sum_i y_i + mass in flight = sum_i grad f_i(x_i at its last gradient) under loss, duplication
// and reordering (state machines driven here over a fake lossy channel, and in the faulty
// simulator); the fixed point against optima computed here (least squares: normal equations;
// logistic: the global gradient recomputed from the problems, and the reference solver);
// determinism for a seed; checkpoints.
#include "algorithms/pairwise/asy_sonata.h"

#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "algorithms/data/dataset.h"
#include "algorithms/problems/problem_factory.h"
#include "algorithms/problems/reference_solver.h"
#include "net/fault_plan.h"
#include "node/config/run_setup.h"
#include "node/sim/faulty_pairwise_simulator.h"
#include "node/sim/pairwise_simulator.h"
#include "tests/shard_network.h"
#include "topology/generators.h"
#include "topology/mixing.h"

namespace starling {
namespace {

using algorithms::AsySonata;
using algorithms::NodeSetup;
using algorithms::PairwiseOptions;

// n nodes with heterogeneous least-squares or logistic shards written here.
using Network = testing::ShardNetwork;

Network MakeNetwork(const topology::Graph& graph, const std::string& kind, int rows, int dim,
                    double l2, uint64_t seed) {
  Network net;
  testing::FillShardNetwork(graph, kind, rows, dim, l2, seed, "asy_sonata_test", {}, &net);
  return net;
}

// The least-squares optimum of sum_i f_i, f_i = |A_i x - b_i|^2 / (2 rows) + l2/2 |x|^2, from the
// normal equations.
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

PairwiseOptions SonataOptions(const Network& net, double step_times_l) {
  PairwiseOptions o;
  o.algorithm = "asy-sonata";
  o.smoothness = net.smoothness;
  o.step = step_times_l / net.smoothness;
  return o;
}

std::vector<std::unique_ptr<algorithms::PairwiseAlgorithm>> MakeNodes(const Network& net,
                                                                      const PairwiseOptions& o) {
  std::vector<std::unique_ptr<algorithms::PairwiseAlgorithm>> nodes;
  for (const NodeSetup& s : net.setups) nodes.push_back(algorithms::MakePairwiseAlgorithm(o, s));
  return nodes;
}

const AsySonata& Sonata(const algorithms::PairwiseAlgorithm& a) {
  return dynamic_cast<const AsySonata&>(a);
}

// Both sides of the invariant, each from its own sources: the trackers and the push sums (the
// algorithm's state) against the gradients recomputed here at each node's gradient point.
struct InvariantSides {
  Vec trackers_and_flight, gradients;
};
template <class Nodes>
InvariantSides Invariant(const Network& net, const Nodes& node) {
  const int d = static_cast<int>(net.setups[0].x0.size());
  InvariantSides s{Vec::Zero(d), Vec::Zero(d)};
  Vec g;
  for (size_t i = 0; i < net.setups.size(); ++i) {
    const AsySonata& a = Sonata(node(i));
    s.trackers_and_flight += a.Tracker();
    for (int j : net.setups[i].neighbors) {
      // Pushed by i to j, not yet absorbed by j.
      s.trackers_and_flight += a.PushedTo(j) - Sonata(node(j)).ReceivedFrom(static_cast<int>(i));
    }
    // A node that has not stepped yet has put no gradient into its tracker (y = g = 0).
    if (a.counters().local_steps == 0) continue;
    net.problems[i]->Gradient(a.GradientPoint(), &g);
    s.gradients += g;
  }
  return s;
}

double FlightNorm(const Network& net,
                  const std::vector<std::unique_ptr<algorithms::PairwiseAlgorithm>>& nodes) {
  double f = 0.0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int j : net.setups[i].neighbors) {
      f += (Sonata(*nodes[i]).PushedTo(j) - Sonata(*nodes[j]).ReceivedFrom(static_cast<int>(i)))
               .norm();
    }
  }
  return f;
}

// A fake channel that loses, duplicates and delays (so reorders) requests and replies. Requests
// are delivered at once or lost or duplicated; replies may also be held for a few activations
// (the initiator's offer then times out and the reply is merged late, or is stale).
class LossyDriver {
 public:
  LossyDriver(const Network& net,
              std::vector<std::unique_ptr<algorithms::PairwiseAlgorithm>>* nodes, double loss,
              double dup, double delay, uint64_t seed)
      : net_(net),
        nodes_(*nodes),
        loss_(loss),
        dup_(dup),
        delay_(delay),
        rng_(seed),
        next_seq_(seed << 24) {}  // drivers of one test never reuse each other's seqs

  void Activate() {
    ++now_;
    DeliverDue();
    const int i = static_cast<int>(rng_() % nodes_.size());
    auto& a = *nodes_[i];
    do {
      a.LocalStep();
    } while (!a.WantsExchange());
    const auto& nb = net_.setups[i].neighbors;
    const int j = nb[rng_() % nb.size()];
    const uint64_t seq = next_seq_++;
    const Vec offer = *a.BeginExchange(j, seq);
    if (Chance(loss_)) {
      ++lost_;
      a.AbortExchange(true);
      return;
    }
    Vec reply = *nodes_[j]->Respond(i, offer);
    if (Chance(dup_)) {  // a duplicated request: served twice, the second reply lost
      ++duplicated_;
      nodes_[j]->Respond(i, offer);
    }
    if (Chance(loss_)) {
      ++lost_;
      a.AbortExchange(true);
      return;
    }
    const int copies = Chance(dup_) ? 2 : 1;
    duplicated_ += copies - 1;
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
  int64_t duplicated() const { return duplicated_; }

 private:
  struct Late {
    int initiator;
    uint64_t seq;
    Vec reply;
  };
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  const Network& net_;
  std::vector<std::unique_ptr<algorithms::PairwiseAlgorithm>>& nodes_;
  double loss_, dup_, delay_;
  std::mt19937_64 rng_;
  int64_t now_ = 0;
  uint64_t next_seq_;
  std::multimap<int64_t, Late> late_;
  int64_t lost_ = 0, duplicated_ = 0;
};

// Every edge carries one lossless message each way with no step in between: afterwards nothing
// is in flight.
void Flush(const Network& net, std::vector<std::unique_ptr<algorithms::PairwiseAlgorithm>>* nodes) {
  uint64_t seq = 1000000000;
  for (size_t i = 0; i < nodes->size(); ++i) {
    for (int j : net.setups[i].neighbors) {
      const Vec offer = *(*nodes)[i]->BeginExchange(j, ++seq);
      const Vec reply = *(*nodes)[j]->Respond(static_cast<int>(i), offer);
      ASSERT_TRUE((*nodes)[i]->CompleteExchange(seq, reply));
    }
  }
}

class TrackerInvariantTest : public ::testing::TestWithParam<double> {};

TEST_P(TrackerInvariantTest, HoldsUnderLossDuplicationAndReordering) {
  const double p = GetParam();
  Network net = MakeNetwork(topology::ErdosRenyi(6, 0.5, 4), "least-squares", 8, 3, 0.01, 21);
  auto nodes = MakeNodes(net, SonataOptions(net, 0.3));
  LossyDriver driver(net, &nodes, p, p, p, 99);
  const auto node = [&](size_t i) -> const algorithms::PairwiseAlgorithm& { return *nodes[i]; };
  double worst = 0.0, scale = 0.0, flight = 0.0;
  for (int t = 0; t < 6000; ++t) {
    driver.Activate();
    flight = std::max(flight, FlightNorm(net, nodes));
    const InvariantSides s = Invariant(net, node);
    worst = std::max(worst, (s.trackers_and_flight - s.gradients).norm());
    scale = std::max(scale, s.gradients.norm());
  }
  EXPECT_GT(driver.lost(), 0.5 * p * 6000);
  EXPECT_GT(driver.duplicated(), 0.3 * p * 6000);
  EXPECT_LE(worst, 1e-9) << "over 6000 activations; sum of gradients up to " << scale;
  // Mass was in flight (the test would not test the edge terms otherwise) ...
  EXPECT_GT(flight, 1e-3 * scale);
  driver.Drain();
  // ... and after a lossless message each way on every edge, the literal invariant:
  // sum_i y_i = sum_i grad f_i(x_i at its gradient).
  Flush(net, &nodes);
  EXPECT_EQ(FlightNorm(net, nodes), 0.0);
  const InvariantSides s = Invariant(net, node);
  Vec trackers = Vec::Zero(3);
  for (const auto& a : nodes) trackers += Sonata(*a).Tracker();
  EXPECT_LE((trackers - s.gradients).norm(), 1e-9);
  // And the run converged to the optimum of the normal equations, loss or not.
  const Vec x_star = NormalEquations(net);
  for (const auto& a : nodes) EXPECT_LE((a->Model() - x_star).norm(), 1e-6 * x_star.norm());
}

INSTANTIATE_TEST_SUITE_P(LossAndDuplication, TrackerInvariantTest, ::testing::Values(0.1, 0.2));

// Without the running sums (a lost push is lost mass) the same channel breaks the invariant: the
// check above can fail. Here a message is dropped after the sender pushed: the drift is the
// dropped mass until the next message on that edge, which absorbs it.
TEST(AsySonata, ALostMessageIsAbsorbedByTheNextOnTheEdge) {
  Network net = MakeNetwork(topology::Ring(3), "least-squares", 5, 2, 0.0, 3);
  auto nodes = MakeNodes(net, SonataOptions(net, 0.3));
  for (auto& a : nodes) a->LocalStep();
  const Vec y0 = Sonata(*nodes[0]).Tracker();
  const Vec y1 = Sonata(*nodes[1]).Tracker();
  nodes[0]->BeginExchange(1, 1);  // lost
  nodes[0]->AbortExchange(true);
  EXPECT_TRUE(Sonata(*nodes[0]).Tracker().isApprox(0.5 * y0));
  const Vec offer = *nodes[0]->BeginExchange(1, 2);
  const Vec reply = *nodes[1]->Respond(0, offer);
  // Node 1 got both halves pushed so far: y1/2 + y0/2 + y0/4.
  EXPECT_LE((Sonata(*nodes[1]).Tracker() - (0.5 * y1 + 0.75 * y0)).norm(), 1e-15 * y0.norm());
  // A duplicate of the offer adds nothing more (it pushes a quarter of y1 back, in flight).
  const Vec y1_before = Sonata(*nodes[1]).Tracker();
  nodes[1]->Respond(0, offer);
  EXPECT_LE((Sonata(*nodes[1]).Tracker() - 0.5 * y1_before).norm(), 1e-15 * y1_before.norm());
  EXPECT_TRUE(nodes[0]->CompleteExchange(2, reply));
  EXPECT_FALSE(nodes[0]->CompleteExchange(2, reply));  // the duplicate reply: no offer left
}

TEST(AsySonata, RefusesMalformedMessages) {
  Network net = MakeNetwork(topology::Ring(3), "least-squares", 5, 2, 0.0, 3);
  auto nodes = MakeNodes(net, SonataOptions(net, 0.3));
  nodes[0]->LocalStep();
  Vec bad = *nodes[0]->BeginExchange(1, 1);
  EXPECT_THROW(nodes[1]->Respond(0, bad.head(4)), std::invalid_argument);
  EXPECT_THROW(nodes[1]->Respond(2 + 5, bad), std::invalid_argument);  // not a neighbour
  for (double v : {-1.0, 1.5, 1e300}) {
    bad[4] = v;
    const Vec y = Sonata(*nodes[1]).Tracker();
    nodes[1]->Respond(0, bad);
    EXPECT_EQ(Sonata(*nodes[1]).Tracker(), 0.5 * y) << "version " << v;  // only its own push
  }
  EXPECT_EQ(nodes[1]->counters().decode_failures, 3);
  PairwiseOptions o = SonataOptions(net, 0.3);
  o.compression = "lattice:8";
  try {
    algorithms::MakePairwiseAlgorithm(o, net.setups[0]);
    ADD_FAILURE() << "lattice compression accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--compression"), std::string::npos) << e.what();
  }
  EXPECT_EQ(algorithms::PairwiseMessageSize(o, 10), 30);
}

// Lossless simulator: every node ends at the optimum of the normal equations with a constant
// step (the method is exact); SwarmSGD-style averaging without the tracker would not.
TEST(AsySonata, FixedPointIsTheLeastSquaresOptimum) {
  Network net = MakeNetwork(topology::Ring(8), "least-squares", 10, 4, 0.0, 5);
  node::PairwiseSimulator sim(net.setups, SonataOptions(net, 0.5), 17);
  sim.RunUntilLocalSteps(4000);
  const Vec x_star = NormalEquations(net);
  for (int i = 0; i < sim.num_nodes(); ++i) {
    EXPECT_LE((sim.node(i).Model() - x_star).norm(), 1e-10 * x_star.norm()) << "node " << i;
  }
}

TEST(AsySonata, FixedPointIsTheLogisticOptimum) {
  Network net = MakeNetwork(topology::ErdosRenyi(8, 0.4, 2), "logistic", 40, 5, 1e-2, 8);
  node::PairwiseSimulator sim(net.setups, SonataOptions(net, 0.5), 3);
  sim.RunUntilLocalSteps(6000);
  // The global gradient at each final model, from the problems (not the tracker).
  Vec g, total;
  for (int i = 0; i < sim.num_nodes(); ++i) {
    total = Vec::Zero(5);
    for (const auto& p : net.problems) {
      p->Gradient(sim.node(i).Model(), &g);
      total += g;
    }
    EXPECT_LE(total.norm(), 1e-9) << "node " << i;
  }
  // And against the reference solver on the pooled data (mean of the node objectives).
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
  EXPECT_LE((sim.node(0).Model() - x_ref).norm(), 1e-8 * x_ref.norm());
}

TEST(AsySonata, SimulatorIsDeterministicForASeed) {
  Network net = MakeNetwork(topology::ErdosRenyi(8, 0.4, 2), "logistic", 20, 5, 1e-2, 8);
  net::FaultPlan plan;
  plan.defaults.loss = 0.1;
  plan.defaults.dup = 0.1;
  std::vector<Vec> runs[3];
  for (int r = 0; r < 3; ++r) {
    node::FaultyPairwiseSimulator sim(net.setups, SonataOptions(net, 0.5), r < 2 ? 5 : 6, plan);
    sim.RunUntilLocalSteps(300);
    for (int i = 0; i < 8; ++i) runs[r].push_back(sim.node(i).Model());
  }
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(runs[0][i], runs[1][i]) << "node " << i;  // bit for bit
    EXPECT_NE(runs[0][i], runs[2][i]) << "node " << i;  // another seed, another sequence
  }
}

// The faulty simulator (the same fault injector the daemons use) at 10% loss and 10%
// duplication: the invariant holds and the run converges to the normal equations' optimum.
TEST(AsySonata, FaultySimulatorHoldsTheInvariantAndConverges) {
  Network net = MakeNetwork(topology::ErdosRenyi(10, 0.4, 6), "least-squares", 10, 4, 0.01, 9);
  net::FaultPlan plan;
  plan.defaults.loss = 0.1;
  plan.defaults.dup = 0.1;
  plan.defaults.delay = 2;
  plan.defaults.jitter = 3;
  node::FaultyPairwiseSimulator sim(net.setups, SonataOptions(net, 0.4), 11, plan);
  const auto node = [&](size_t i) -> const algorithms::PairwiseAlgorithm& { return sim.node(i); };
  double worst = 0.0;
  for (int round = 0; round < 40; ++round) {
    for (int t = 0; t < 100; ++t) sim.Activate();
    const InvariantSides s = Invariant(net, node);
    worst = std::max(worst, (s.trackers_and_flight - s.gradients).norm());
  }
  sim.RunUntilLocalSteps(6000);
  const node::FaultyPairwiseCounters c = sim.counters();
  EXPECT_GT(c.requests_lost + c.replies_lost, 0);
  EXPECT_GT(c.merged_late, 0);
  EXPECT_LE(worst, 1e-9);
  const Vec x_star = NormalEquations(net);
  for (int i = 0; i < sim.num_nodes(); ++i) {
    EXPECT_LE((sim.node(i).Model() - x_star).norm(), 1e-8 * x_star.norm()) << "node " << i;
  }
}

// A run stopped, saved and loaded into fresh state machines goes on bit for bit as one that
// never stopped (driven in lockstep here, so both see the same exchanges).
TEST(AsySonata, CheckpointRoundTrip) {
  Network net = MakeNetwork(topology::ErdosRenyi(6, 0.5, 4), "logistic", 20, 3, 1e-2, 4);
  const PairwiseOptions o = SonataOptions(net, 0.5);
  auto nodes = MakeNodes(net, o);
  LossyDriver first(net, &nodes, 0.1, 0.1, 0.1, 5);
  for (int t = 0; t < 200; ++t) first.Activate();
  first.Drain();
  auto resumed = MakeNodes(net, o);
  for (size_t i = 0; i < nodes.size(); ++i) {
    algorithms::AlgorithmState s;
    ASSERT_TRUE(nodes[i]->SaveState(&s));
    resumed[i]->LoadState(s);
  }
  LossyDriver a(net, &nodes, 0.1, 0.1, 0.1, 6), b(net, &resumed, 0.1, 0.1, 0.1, 6);
  for (int t = 0; t < 200; ++t) {
    a.Activate();
    b.Activate();
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_EQ(nodes[i]->Model(), resumed[i]->Model()) << "node " << i;
    EXPECT_EQ(Sonata(*nodes[i]).Tracker(), Sonata(*resumed[i]).Tracker()) << "node " << i;
    EXPECT_EQ(nodes[i]->counters().local_steps, resumed[i]->counters().local_steps);
  }
  // Another algorithm's checkpoint is refused.
  algorithms::AlgorithmState s;
  nodes[0]->SaveState(&s);
  s.algorithm = "swarmsgd";
  EXPECT_THROW(resumed[0]->LoadState(s), std::invalid_argument);
}

}  // namespace
}  // namespace starling
