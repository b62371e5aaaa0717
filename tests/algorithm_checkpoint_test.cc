// Checkpoints of APM-C, Network-DANE/SVRG/SARAH, CHOCO-SGD, local SGD, SlowMo-D-PSGD and
// lattice-quantized SwarmSGD: a run stopped at any step, saved through a checkpoint
// file, loaded into freshly built algorithms and continued ends bit for bit where the
// uninterrupted run ends; and one real starlingd killed with SIGKILL mid-run and restarted with
// --resume ends at the simulator's models.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/data/dataset.h"
#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/problems/problem_factory.h"
#include "algorithms/round/round_algorithm.h"
#include "node/config/run_setup.h"
#include "node/daemon/checkpoint.h"
#include "node/sim/round_simulator.h"
#include "tests/daemon_cluster.h"
#include "tests/fake_quadratic.h"
#include "tests/subprocess.h"
#include "tests/test_data.h"
#include "topology/generators.h"
#include "topology/mixing.h"
#include "topology/spectral.h"

namespace starling {
namespace {

namespace fs = std::filesystem;
using algorithms::AlgorithmState;
using algorithms::NodeSetup;
using algorithms::RoundAlgorithm;
using algorithms::RoundOptions;
using namespace std::chrono_literals;

// n nodes on `graph` (Metropolis-Hastings weights); node i holds its own random least-squares
// shard of `rows` rows (or, with `fake`, a diagonal quadratic, which has no closed-form local
// solve, so that Network-DANE takes its iterative solver).
struct Network {
  Eigen::MatrixXd w;
  std::vector<std::unique_ptr<algorithms::Problem>> problems;
  std::vector<NodeSetup> setups;
  double smoothness = 0.0;  // max_i L_i
};

Network MakeNetwork(const topology::Graph& graph, int rows, int dim, bool fake, uint64_t seed) {
  Network net;
  net.w = topology::MetropolisHastings(graph);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  for (int i = 0; i < graph.num_nodes(); ++i) {
    if (fake) {
      Vec d(dim), b(dim);
      for (int k = 0; k < dim; ++k) {
        d[k] = 1.0 + std::abs(normal(rng));
        b[k] = normal(rng);
      }
      net.problems.push_back(std::make_unique<testing::FakeQuadratic>(d, b));
    } else {
      algorithms::Dataset shard;
      shard.num_features = dim;
      shard.dense.resize(rows, dim);
      shard.labels.resize(rows);
      for (int r = 0; r < rows; ++r) {
        for (int k = 0; k < dim; ++k) shard.dense(r, k) = normal(rng);
        shard.labels(r) = normal(rng) + 0.5 * i;
      }
      net.problems.push_back(algorithms::MakeProblem({"least-squares", 0.05, 0}, shard, 1.0));
    }
    net.smoothness = std::max(net.smoothness, net.problems.back()->SmoothnessBound());
  }
  for (int i = 0; i < graph.num_nodes(); ++i) {
    NodeSetup s = node::NodeSetupOf(graph, net.w, i);
    s.problem = net.problems[i].get();
    s.x0 = Vec::Constant(dim, 0.2 * i - 0.4);
    s.seed = 11 + 3 * i;
    net.setups.push_back(s);
  }
  return net;
}

// Every node in lockstep, as node::RoundSimulator runs them, but with the algorithms in reach so
// that they can be saved and replaced.
class Lockstep {
 public:
  Lockstep(const std::vector<NodeSetup>& setups, const RoundOptions& options) : setups_(setups) {
    for (const NodeSetup& s : setups) nodes_.push_back(algorithms::MakeRoundAlgorithm(options, s));
  }

  void Step() {
    payloads_.clear();
    for (const auto& node : nodes_) {
      ASSERT_EQ(node->key(), nodes_[0]->key()) << "nodes out of step";
      payloads_.push_back(node->Outgoing());
    }
    std::vector<const Vec*> inbox;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      inbox.clear();
      for (int j : setups_[i].neighbors) inbox.push_back(&payloads_[j]);
      nodes_[i]->Advance(inbox);
    }
  }

  int size() const { return static_cast<int>(nodes_.size()); }
  RoundAlgorithm& node(int i) { return *nodes_[i]; }

 private:
  const std::vector<NodeSetup>& setups_;
  std::vector<std::unique_ptr<RoundAlgorithm>> nodes_;
  std::vector<Vec> payloads_;
};

// Through a real checkpoint file, so that the test also covers what WriteCheckpoint keeps.
AlgorithmState ThroughFile(const AlgorithmState& state, int node_id) {
  const std::string dir = testing::FreshTempDir("ckpt-unit");
  node::Checkpoint c;
  c.run_id = 99;
  c.node_id = node_id;
  c.state = state;
  const std::string path = dir + "/node.ckpt";
  node::WriteCheckpoint(path, c);
  AlgorithmState back = node::ReadCheckpoint(path, 99, node_id).state;
  fs::remove_all(dir);
  return back;
}

void ExpectSameNode(RoundAlgorithm& resumed, RoundAlgorithm& uninterrupted, int i,
                    const std::string& where) {
  EXPECT_EQ(resumed.key(), uninterrupted.key()) << where << " node " << i;
  EXPECT_EQ(resumed.iteration(), uninterrupted.iteration()) << where << " node " << i;
  // Bit for bit: operator== on Eigen vectors compares every double exactly.
  EXPECT_TRUE(resumed.Model() == uninterrupted.Model())
      << where << " node " << i << ": max difference "
      << (resumed.Model() - uninterrupted.Model()).lpNorm<Eigen::Infinity>();
  EXPECT_TRUE(resumed.Outgoing() == uninterrupted.Outgoing()) << where << " node " << i;
  const algorithms::AlgorithmCounters a = resumed.counters(), b = uninterrupted.counters();
  EXPECT_EQ(a.comm_rounds, b.comm_rounds) << where << " node " << i;
  EXPECT_EQ(a.vectors_sent, b.vectors_sent) << where << " node " << i;
  EXPECT_EQ(a.gradient_passes, b.gradient_passes) << where << " node " << i;
}

// Runs `total` steps uninterrupted; then, for each stop in `stops`, runs to the stop, saves every
// node through a checkpoint file, throws those algorithms away, loads the states into freshly
// built ones and runs them to `total`. Every resumed run must end exactly where the
// uninterrupted one does. Returns the largest subround seen at a stop (coverage of mid-iteration
// stops).
int CheckResumeEverywhere(const Network& net, const RoundOptions& options, int total,
                          const std::vector<int>& stops) {
  Lockstep reference(net.setups, options);
  for (int t = 0; t < total; ++t) reference.Step();
  // The lockstep driver itself is the simulator's.
  node::RoundSimulator sim(net.setups, options);
  for (int t = 0; t < total; ++t) sim.Step();
  for (int i = 0; i < reference.size(); ++i) {
    EXPECT_TRUE(sim.node(i).Model() == reference.node(i).Model()) << "driver, node " << i;
  }
  // The models must still move after the last stop, or a resume that restored the model and
  // nothing else could pass.
  Lockstep shorter(net.setups, options);
  for (int t = 0; t < *std::max_element(stops.begin(), stops.end()); ++t) shorter.Step();
  EXPECT_FALSE(shorter.node(0).Model() == reference.node(0).Model()) << "run already stalled";

  int deepest_subround = 0;
  for (int stop : stops) {
    const std::string where = options.algorithm + " stopped after step " + std::to_string(stop);
    std::vector<AlgorithmState> states(net.setups.size());
    {
      Lockstep first(net.setups, options);
      for (int t = 0; t < stop; ++t) first.Step();
      for (int i = 0; i < first.size(); ++i) {
        AlgorithmState s;
        EXPECT_TRUE(first.node(i).SaveState(&s)) << where;
        EXPECT_EQ(s.algorithm, first.node(i).name());
        states[i] = ThroughFile(s, i);
        deepest_subround = std::max(deepest_subround, first.node(i).key().subround);
      }
    }
    Lockstep resumed(net.setups, options);
    for (int i = 0; i < resumed.size(); ++i) resumed.node(i).LoadState(states[i]);
    for (int t = stop; t < total; ++t) resumed.Step();
    for (int i = 0; i < resumed.size(); ++i) {
      ExpectSameNode(resumed.node(i), reference.node(i), i, where);
    }
  }
  return deepest_subround;
}

RoundOptions WithSpectrum(RoundOptions o, const Eigen::MatrixXd& w) {
  const topology::LaplacianSpectrum spectrum = topology::LaplacianEigen(topology::LaplacianOf(w));
  o.laplacian_lambda2 = spectrum.lambda2;
  o.laplacian_lambda_max = spectrum.lambda_max;
  return o;
}

TEST(AlgorithmCheckpoint, ApmCResumesBitForBit) {
  const Network net = MakeNetwork(topology::ErdosRenyi(7, 0.4, 5), 12, 4, false, 1);
  RoundOptions o;
  o.algorithm = "apm-c";
  o.smoothness = net.smoothness;
  // A larger c than the authors' 0.2 gives several consensus rounds per iteration early on, so
  // that stops land inside an iteration's consensus recursion (Z, Z_old pending).
  o.params.Set("apmc-inner-const", 1.5);
  o = WithSpectrum(o, net.w);
  const int deepest = CheckResumeEverywhere(net, o, 60, {0, 1, 2, 9, 10, 23, 41});
  EXPECT_GE(deepest, 2) << "no stop inside a multi-round iteration";
}

RoundOptions DaneFamily(const std::string& name, const Network& net) {
  RoundOptions o;
  o.algorithm = name;
  o.smoothness = net.smoothness;
  o.tracker_lazy_c = 0.7;  // a lazy tracker, so that W_s differs from W
  o.params.Set("mix-rounds", 2);  // stops land between the two exchanges of an iteration too
  return o;
}

TEST(AlgorithmCheckpoint, NetworkDaneExactSolveResumesBitForBit) {
  const Network net = MakeNetwork(topology::Ring(6), 10, 3, false, 2);
  RoundOptions o = DaneFamily("network-dane", net);
  o.params.Set("dane-mu", 0.5 * net.smoothness);
  const int deepest = CheckResumeEverywhere(net, o, 30, {0, 1, 2, 7, 16});
  EXPECT_EQ(deepest, 1) << "no stop between the two mixing exchanges";
}

TEST(AlgorithmCheckpoint, NetworkDaneNesterovSolverResumesBitForBit) {
  const Network net = MakeNetwork(topology::Ring(5), 0, 3, /*fake=*/true, 3);
  RoundOptions o = DaneFamily("network-dane", net);
  o.params.Set("dane-mu", 0.1);
  o.strong_convexity = 0.5;
  o.params.Set("inner-steps", 15);
  CheckResumeEverywhere(net, o, 30, {0, 3, 12});
}

TEST(AlgorithmCheckpoint, NetworkSvrgAndSarahResumeBitForBit) {
  for (const std::string name : {"network-svrg", "network-sarah"}) {
    const Network net = MakeNetwork(topology::ErdosRenyi(6, 0.5, 4), 40, 4, false, 4);
    RoundOptions o = DaneFamily(name, net);
    o.step = 0.1 / net.smoothness;
    o.batch_size = 2;
    o.params.Set("inner-steps", 7);
    // Stops after iterations whose inner loops drew samples: the sampling engine must resume
    // where it stopped, or the next inner loop draws other rows.
    const int deepest = CheckResumeEverywhere(net, o, 40, {0, 1, 5, 6, 21});
    EXPECT_EQ(deepest, 1) << name;
  }
}

TEST(AlgorithmCheckpoint, ChocoSgdResumesBitForBit) {
  const Network net = MakeNetwork(topology::ErdosRenyi(6, 0.5, 6), 30, 6, false, 5);
  RoundOptions o;
  o.algorithm = "choco-sgd";
  o.step = 0.05 / net.smoothness;
  o.batch_size = 3;   // mini-batches: the oracle's engine is part of the state
  o.params.Set("top-k", 2);  // compressed: the public copies lag x, so they must be saved
  o.params.Set("choco-gamma", 0.3);
  CheckResumeEverywhere(net, o, 40, {0, 1, 13, 27});
}

// Local SGD and SlowMo on D-PSGD: stops inside the local periods' averaging (the tree's partial
// sums pending), inside SlowMo-D-PSGD's inner D-PSGD rounds and at period ends, with mini-batches
// (the engine) and the adaptive schedule (the period's interval comes from the period index).
TEST(AlgorithmCheckpoint, LocalSgdAndSlowMoDpsgdResumeBitForBit) {
  const Network net = MakeNetwork(topology::Ring(7), 30, 4, false, 7);
  for (const std::string name : {"local-sgd", "slowmo-dpsgd"}) {
    for (const int exact : {0, 1}) {
      RoundOptions o;
      o.algorithm = name;
      o.step = 0.1 / net.smoothness;
      o.batch_size = 3;
      o.params.Set("local-tau", 2);
      o.params.Set("local-gossip", 2);
      o.params.Set("local-exact", exact);
      o.params.Set("local-adaptive", 1);
      o.params.Set("slowmo-beta", 0.5);
      o.params.Set("slowmo-alpha", 1.2);
      SCOPED_TRACE(name + (exact ? " exact" : " gossip"));
      CheckResumeEverywhere(net, o, 40, {0, 1, 2, 3, 5, 8, 13, 22});
    }
  }
}

TEST(AlgorithmCheckpoint, RefusesAnotherAlgorithmsOrNeighbourhoodsState) {
  const Network net = MakeNetwork(topology::ErdosRenyi(6, 0.5, 6), 30, 6, false, 5);
  RoundOptions svrg = DaneFamily("network-svrg", net);
  svrg.step = 0.1 / net.smoothness;
  RoundOptions sarah = svrg;
  sarah.algorithm = "network-sarah";
  AlgorithmState s;
  ASSERT_TRUE(algorithms::MakeRoundAlgorithm(svrg, net.setups[0])->SaveState(&s));
  EXPECT_THROW(algorithms::MakeRoundAlgorithm(sarah, net.setups[0])->LoadState(s),
               std::invalid_argument);
  RoundOptions more_mixing = svrg;
  more_mixing.params.Set("mix-rounds", 1);
  {
    // Saved between the two exchanges of mix_rounds = 2: no such step with one exchange.
    Lockstep run(net.setups, svrg);
    run.Step();
    ASSERT_TRUE(run.node(0).SaveState(&s));
    EXPECT_THROW(algorithms::MakeRoundAlgorithm(more_mixing, net.setups[0])->LoadState(s),
                 std::invalid_argument);
  }
  RoundOptions choco;
  choco.algorithm = "choco-sgd";
  choco.step = 0.01;
  // Nodes with different neighbour counts keep different numbers of public copies.
  int other = -1;
  for (int i = 1; i < 6; ++i) {
    if (net.setups[i].neighbors.size() != net.setups[0].neighbors.size()) other = i;
  }
  ASSERT_GE(other, 0);
  ASSERT_TRUE(algorithms::MakeRoundAlgorithm(choco, net.setups[0])->SaveState(&s));
  EXPECT_THROW(algorithms::MakeRoundAlgorithm(choco, net.setups[other])->LoadState(s),
               std::invalid_argument);
  RoundOptions apm = WithSpectrum(RoundOptions(), net.w);
  apm.algorithm = "apm-c";
  apm.smoothness = net.smoothness;
  EXPECT_THROW(algorithms::MakeRoundAlgorithm(apm, net.setups[0])->LoadState(s),
               std::invalid_argument);
}

// ---- Lattice-quantized SwarmSGD ----

struct PairwiseNet {
  std::vector<std::unique_ptr<testing::FakeQuadratic>> problems;
  std::vector<NodeSetup> setups;
};

PairwiseNet MakePair(double spread) {
  PairwiseNet net;
  for (int i = 0; i < 2; ++i) {
    Vec d(4), b(4);
    d << 1.0 + i, 2.0, 0.7, 1.5 - 0.3 * i;
    b << i - 0.5, 1.0, -0.2 * i, 0.4;
    net.problems.push_back(std::make_unique<testing::FakeQuadratic>(d, b));
    NodeSetup s;
    s.id = i;
    s.neighbors = {1 - i};
    s.neighbor_weights = {0.5};
    s.self_weight = 0.5;
    s.problem = net.problems.back().get();
    s.x0 = Vec::Constant(4, spread * i);
    s.seed = 5 + i;
    net.setups.push_back(s);
  }
  return net;
}

algorithms::PairwiseOptions LatticeOptions(const std::string& spec) {
  algorithms::PairwiseOptions o;
  o.step = 0.01;
  o.batch_size = 1;  // the fake problem's mini-batch gradient depends on the drawn row
  o.local_steps = 2;
  o.compression = spec;
  return o;
}

void ExpectSameCounters(const algorithms::PairwiseCounters& a,
                        const algorithms::PairwiseCounters& b, const std::string& where) {
  EXPECT_EQ(a.local_steps, b.local_steps) << where;
  EXPECT_EQ(a.exchanges_initiated, b.exchanges_initiated) << where;
  EXPECT_EQ(a.exchanges_served, b.exchanges_served) << where;
  EXPECT_EQ(a.exchanges_aborted, b.exchanges_aborted) << where;
  EXPECT_EQ(a.gradient_passes, b.gradient_passes) << where;
  EXPECT_EQ(a.bits_sent, b.bits_sent) << where;
  EXPECT_EQ(a.decode_failures, b.decode_failures) << where;
}

using Pair = std::vector<std::unique_ptr<algorithms::PairwiseAlgorithm>>;

Pair MakePairNodes(const PairwiseNet& net, const algorithms::PairwiseOptions& o) {
  Pair nodes;
  for (const NodeSetup& s : net.setups) nodes.push_back(algorithms::MakePairwiseAlgorithm(o, s));
  return nodes;
}

// One activation of a fixed script: the initiator (alternating) takes its local steps and, when
// it wants one, exchanges with the other node.
void Activate(Pair& nodes, int t, uint64_t* seq) {
  algorithms::PairwiseAlgorithm& a = *nodes[t % 2];
  algorithms::PairwiseAlgorithm& b = *nodes[1 - t % 2];
  a.LocalStep();
  b.LocalStep();
  if (!a.WantsExchange()) return;
  const Vec offer = *a.BeginExchange(1, ++*seq);
  const Vec reply = *b.Respond(0, offer);
  ASSERT_TRUE(a.CompleteExchange(*seq, reply));
}

// Runs the script to `stop`, saves both nodes, builds them afresh from the states and runs both
// the originals and the resumed ones to `total`: models, counters and every message must agree
// bit for bit (the dithers, the full-precision retries and the mini-batches included).
void CheckQuantizedResume(const std::string& spec, double spread, int stop, int total,
                          bool expect_failures) {
  const std::string where = spec + " stopped at " + std::to_string(stop);
  const PairwiseNet net = MakePair(spread);
  const algorithms::PairwiseOptions options = LatticeOptions(spec);
  Pair original = MakePairNodes(net, options);
  uint64_t seq = 0;
  for (int t = 0; t < stop; ++t) Activate(original, t, &seq);
  Pair resumed = MakePairNodes(net, options);
  for (int i = 0; i < 2; ++i) {
    AlgorithmState s;
    ASSERT_TRUE(original[i]->SaveState(&s));
    resumed[i]->LoadState(ThroughFile(s, i));
    // Round trip: a save of the restored node is the same state.
    AlgorithmState again;
    ASSERT_TRUE(resumed[i]->SaveState(&again));
    EXPECT_EQ(again.ints, s.ints) << where;
    EXPECT_EQ(again.reals, s.reals) << where;
    EXPECT_EQ(again.texts, s.texts) << where;
    EXPECT_TRUE(again.vectors[0] == s.vectors[0]) << where;
    EXPECT_TRUE(resumed[i]->Model() == original[i]->Model()) << where;
    ExpectSameCounters(resumed[i]->counters(), original[i]->counters(), where);
    EXPECT_EQ(resumed[i]->WantsExchange(), original[i]->WantsExchange()) << where;
    EXPECT_EQ(resumed[i]->ShouldWait(), original[i]->ShouldWait()) << where;
  }
  uint64_t resumed_seq = seq;
  for (int t = stop; t < total; ++t) {
    // Compare the messages as well as the models: the offer carries the dither seed and the tag.
    algorithms::PairwiseAlgorithm& a = *original[t % 2];
    algorithms::PairwiseAlgorithm& ra = *resumed[t % 2];
    a.LocalStep();
    ra.LocalStep();
    original[1 - t % 2]->LocalStep();
    resumed[1 - t % 2]->LocalStep();
    ASSERT_EQ(a.WantsExchange(), ra.WantsExchange()) << where << " t " << t;
    if (!a.WantsExchange()) continue;
    const Vec offer = *a.BeginExchange(1 - t % 2, ++seq);
    const Vec resumed_offer = *ra.BeginExchange(1 - t % 2, ++resumed_seq);
    ASSERT_TRUE(offer == resumed_offer) << where << " t " << t;
    const Vec reply = *original[1 - t % 2]->Respond(t % 2, offer);
    const Vec resumed_reply = *resumed[1 - t % 2]->Respond(t % 2, resumed_offer);
    ASSERT_TRUE(reply == resumed_reply) << where << " t " << t;
    ASSERT_TRUE(a.CompleteExchange(seq, reply));
    ASSERT_TRUE(ra.CompleteExchange(resumed_seq, resumed_reply));
  }
  int64_t failures = 0;
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(resumed[i]->Model() == original[i]->Model())
        << where << " node " << i << ": max difference "
        << (resumed[i]->Model() - original[i]->Model()).lpNorm<Eigen::Infinity>();
    ExpectSameCounters(resumed[i]->counters(), original[i]->counters(), where);
    failures += original[i]->counters().decode_failures;
  }
  if (expect_failures) {
    EXPECT_GT(failures, 0) << where << ": the script never fell back";
  } else {
    EXPECT_EQ(failures, 0) << where;
  }
}

TEST(AlgorithmCheckpoint, QuantizedSwarmSgdResumesItsStepsAndDithers) {
  // Models close together: every exchange decodes on the 8-bit lattice.
  for (int stop : {0, 1, 2, 7, 12}) CheckQuantizedResume("lattice:8:1e-3", 0.01, stop, 30, false);
  // Models far apart on a 2-bit lattice: exchanges fail and the retries go at full precision, so
  // stops also land with a full-precision offer due next.
  for (int stop : {1, 2, 3, 4, 5}) CheckQuantizedResume("lattice:2:1e-4", 1.0, stop, 20, true);
}

TEST(AlgorithmCheckpoint, QuantizedSwarmSgdDropsOutstandingOffersOnResume) {
  const PairwiseNet net = MakePair(0.01);
  const algorithms::PairwiseOptions options = LatticeOptions("lattice:8:1e-3");
  Pair nodes = MakePairNodes(net, options);
  for (int k = 0; k < 2; ++k) nodes[0]->LocalStep();
  ASSERT_TRUE(nodes[0]->WantsExchange());
  const Vec offer = *nodes[0]->BeginExchange(1, 1);
  AlgorithmState s;
  ASSERT_TRUE(nodes[0]->SaveState(&s));
  auto resumed = algorithms::MakePairwiseAlgorithm(options, net.setups[0]);
  resumed->LoadState(s);
  EXPECT_FALSE(resumed->exchange_outstanding());
  EXPECT_TRUE(resumed->WantsExchange());  // it still wants the exchange it had not completed
  const Vec reply = *nodes[1]->Respond(0, offer);
  EXPECT_FALSE(resumed->CompleteExchange(1, reply));  // the snapshot of offer 1 is gone
  EXPECT_TRUE(resumed->Model() == nodes[0]->Model());
  // A new offer from the resumed node uses a fresh dither seed, not offer 1's again.
  const Vec next = *resumed->BeginExchange(1, 2);
  EXPECT_NE(next[2], offer[2]);

  // A full-precision SwarmSGD checkpoint does not fit the quantized one, nor the other way.
  algorithms::PairwiseOptions plain = options;
  plain.compression = "none";
  AlgorithmState plain_state;
  ASSERT_TRUE(algorithms::MakePairwiseAlgorithm(plain, net.setups[0])->SaveState(&plain_state));
  EXPECT_THROW(algorithms::MakePairwiseAlgorithm(options, net.setups[0])->LoadState(plain_state),
               std::invalid_argument);
  EXPECT_THROW(algorithms::MakePairwiseAlgorithm(plain, net.setups[0])->LoadState(s),
               std::invalid_argument);
}

// ---- A real daemon killed and resumed ----

TEST(AlgorithmCheckpoint, KilledNetworkSvrgDaemonResumesAndEqualsTheSimulator) {
  const std::string a9a = testing::SharedData("a9a");
  STARLING_REQUIRE_FILE(a9a);
  const std::string dir = testing::FreshTempDir("ckpt-svrg");
  const int n = 5, victim = 3;
  const int64_t iterations = 300;
  const std::string cluster = testing::WriteLoopbackCluster(
      dir, topology::ErdosRenyi(n, 0.5, 3), testing::PortBase() + 7, /*keys=*/false);
  // A 3 ms delay on every message (fault injection) stretches the run over seconds, so that the
  // kill lands mid-run.
  // clang-format off
  const std::vector<std::string> args = {
      "--algorithm", "network-svrg", "--problem", "logistic", "--l2", "1e-2", "--data", a9a,
      "--format", "libsvm", "--iterations", std::to_string(iterations), "--seed", "7",
      "--checkpoint-every", "10", "--resend-ms", "100", "--fault-delay-ms", "3"};
  // clang-format on
  const std::vector<Vec> models =
      testing::RunWithKilledAndResumedNode(dir, cluster, n, victim, args, 500ms);
  ASSERT_EQ(models.size(), static_cast<size_t>(n));

  const std::vector<Vec> simulated =
      testing::SimulatedA9aModels("network-svrg", a9a, cluster, n, iterations);
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(models[i].size(), simulated[i].size()) << "node " << i;
    const double error = (models[i] - simulated[i]).norm() / simulated[i].norm();
    std::printf("network-svrg node %d: relative difference to the simulator %.3g\n", i, error);
    // The model files hold 17 significant digits, which read back to the same doubles.
    EXPECT_TRUE(models[i] == simulated[i]) << "node " << i << ": relative difference " << error;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace starling
