// Block-cyclic data and MM-PSGD (algorithms/data/block_cyclic.h, algorithms/round/mm_psgd.h): the
// schedule against its formula, the class-group blocks against a table written here, the blocks of
// a real run as a partition that matches the file's labels, D-PSGD's block sampling and MM-PSGD's
// predictors against a matrix form computed here (mini-batches redrawn from the oracle's stated
// rule), a checkpoint, the simulator's per-block accuracy against an evaluation done here, and
// starlingd processes against the simulator.
#include "algorithms/data/block_cyclic.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "algorithms/data/readers.h"
#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/problems/problem_factory.h"
#include "algorithms/round/dgd.h"
#include "algorithms/round/mm_psgd.h"
#include "node/config/run_id.h"
#include "node/config/run_options.h"
#include "node/config/run_setup.h"
#include "node/sim/round_simulator.h"
#include "node/sim/sim_runner.h"
#include "tests/daemon_cluster.h"
#include "tests/test_data.h"
#include "topology/generators.h"
#include "topology/mixing.h"

namespace starling {
namespace {

namespace fs = std::filesystem;
using algorithms::BlockCyclicSpec;
using algorithms::NodeSetup;
using algorithms::RoundOptions;

// ---- The schedule and the blocks.

TEST(BlockCyclic, StepsFollowCyclesOfBlocksOfSSteps) {
  for (const BlockCyclicSpec spec : {BlockCyclicSpec{1, 1}, BlockCyclicSpec{3, 4},
                                     BlockCyclicSpec{2, 7}, BlockCyclicSpec{5, 1}}) {
    // Enumerated as the setting says: cycle c, then block b of it, then its S steps.
    int64_t t = 0;
    for (int64_t c = 0; c < 4; ++c) {
      for (int b = 0; b < spec.blocks; ++b) {
        for (int64_t s = 0; s < spec.steps_per_block; ++s, ++t) {
          EXPECT_EQ(algorithms::BlockOfStep(spec, t), b) << "t " << t;
          EXPECT_EQ(algorithms::CycleOfStep(spec, t), c) << "t " << t;
        }
      }
    }
  }
}

TEST(BlockCyclic, ParsesBAndSAndRefusesTheRest) {
  EXPECT_FALSE(algorithms::ParseBlockCyclic("none").active());
  const BlockCyclicSpec spec = algorithms::ParseBlockCyclic("3:250");
  EXPECT_EQ(spec.blocks, 3);
  EXPECT_EQ(spec.steps_per_block, 250);
  EXPECT_EQ(algorithms::BlockCyclicText(spec), "3:250");
  for (const char* bad :
       {"", "3", "3:", ":4", "0:4", "3:0", "-1:4", "3:4:5", "2.5:4", "a:b", "3: 4", "70000:1"}) {
    EXPECT_THROW(algorithms::ParseBlockCyclic(bad), std::invalid_argument) << bad;
    try {
      algorithms::ParseBlockCyclic(bad);
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--block-cyclic"), std::string::npos) << e.what();
    }
  }
}

TEST(BlockCyclic, BlocksAreContiguousClassGroups) {
  // floor(c * B / K) for K = 10, B = 3, written out: {0..3}, {4..6}, {7..9}.
  const int expected[10] = {0, 0, 0, 0, 1, 1, 1, 2, 2, 2};
  Vec labels(30);
  for (int r = 0; r < 30; ++r) labels[r] = (r * 7) % 10;
  const std::vector<int> blocks = algorithms::BlocksOfLabels(labels, false, 10, 3);
  for (int r = 0; r < 30; ++r) EXPECT_EQ(blocks[r], expected[(r * 7) % 10]) << "row " << r;
  // -1/+1 are classes 0/1.
  Vec binary(4);
  binary << 1, -1, -1, 1;
  EXPECT_EQ(algorithms::BlocksOfLabels(binary, true, 2, 2), (std::vector<int>{1, 0, 0, 1}));
  EXPECT_EQ(algorithms::BlocksOfLabels(binary, true, 2, 1), (std::vector<int>{0, 0, 0, 0}));
  EXPECT_THROW(algorithms::BlocksOfLabels(binary, true, 2, 3), std::invalid_argument);
  EXPECT_THROW(algorithms::BlocksOfLabels(labels, false, 10, 11), std::invalid_argument);
  Vec odd(1);
  odd << 0.5;
  EXPECT_THROW(algorithms::BlocksOfLabels(odd, false, 10, 2), std::runtime_error);
}

TEST(BlockCyclic, RowsByBlockIsAPartitionInAscendingOrder) {
  std::mt19937_64 rng(3);
  std::vector<int> row_blocks(200);
  for (int& b : row_blocks) b = static_cast<int>(rng() % 4);
  const std::vector<std::vector<int>> rows = algorithms::RowsByBlock(row_blocks, 5);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_TRUE(rows[4].empty());
  std::vector<int> seen(200, 0);
  for (int b = 0; b < 5; ++b) {
    for (size_t k = 0; k < rows[b].size(); ++k) {
      EXPECT_EQ(row_blocks[rows[b][k]], b);
      if (k > 0) {
        EXPECT_LT(rows[b][k - 1], rows[b][k]);
      }
      ++seen[rows[b][k]];
    }
  }
  for (int k = 0; k < 200; ++k) EXPECT_EQ(seen[k], 1) << "row " << k;
}

// The blocks of a run on a9a (B = 2: the -1 rows and the +1 rows): every node's block_rows
// partition its shard, the block sizes add up to the file's label counts (counted here from
// the file), the same on a second build, and only for the methods that sample by blocks.
TEST(BlockCyclic, RunSetupSplitsEveryShardByTheFilesLabels) {
  const std::string a9a = testing::SharedData("a9a");
  STARLING_REQUIRE_FILE(a9a);
  node::RunConfig config;
  config.algorithm = "dpsgd";
  config.batch = 8;
  config.problem = "logistic";
  config.data = a9a;
  config.format = "libsvm";
  config.nodes = 5;
  config.block_cyclic = "2:10";
  node::BuildScope scope;
  scope.global = false;
  const node::RunSetup setup = node::BuildRunSetup(config, scope);
  const algorithms::Dataset file = algorithms::ReadLibsvm(a9a, 123);
  int64_t negatives = 0;
  for (int r = 0; r < file.num_samples(); ++r) negatives += file.labels[r] < 0;
  int64_t counted[2] = {0, 0};
  for (const NodeSetup& s : setup.nodes) {
    ASSERT_EQ(s.block_rows.size(), 2u);
    EXPECT_EQ(s.block_steps, 10);
    std::set<int> rows;
    for (int b = 0; b < 2; ++b) {
      counted[b] += static_cast<int64_t>(s.block_rows[b].size());
      for (int k : s.block_rows[b]) EXPECT_TRUE(rows.insert(k).second) << "row " << k << " twice";
    }
    ASSERT_EQ(static_cast<int>(rows.size()), s.problem->num_samples());
    EXPECT_EQ(*rows.begin(), 0);
    EXPECT_EQ(*rows.rbegin(), s.problem->num_samples() - 1);
  }
  EXPECT_EQ(counted[0], negatives);
  EXPECT_EQ(counted[1], file.num_samples() - negatives);
  const node::RunSetup again = node::BuildRunSetup(config, scope);
  for (int i = 0; i < config.nodes; ++i) {
    EXPECT_EQ(again.nodes[i].block_rows, setup.nodes[i].block_rows) << "node " << i;
  }
  // The run id knows the blocks; the other methods refuse them.
  node::RunConfig plain = config;
  plain.block_cyclic = "none";
  EXPECT_NE(node::CanonicalRunText(config, setup.graph),
            node::CanonicalRunText(plain, setup.graph));
  EXPECT_EQ(node::CanonicalRunText(plain, setup.graph).find("block"), std::string::npos);
  node::ValidateRunConfig(config);
  node::RunConfig mm = plain;
  mm.algorithm = "mm-psgd";
  EXPECT_THROW(node::ValidateRunConfig(mm), std::invalid_argument);
  node::RunConfig swarm = config;
  swarm.algorithm = "swarmsgd";
  node::ValidateRunConfig(swarm);
  for (const char* other : {"acid", "extra", "local-sgd", "choco-sgd"}) {
    node::RunConfig c = config;
    c.algorithm = other;
    EXPECT_THROW(node::ValidateRunConfig(c), std::invalid_argument) << other;
  }
}

// ---- The method against its matrix form.

// f_i(x) = sum over the shard's rows z of ||x - a_z||^2 / 2: a mini-batch B gives
// (m / |B|) sum_{z in B} (x - a_z), so which rows are drawn shows in the iterates.
class RowTargets : public algorithms::Problem {
 public:
  explicit RowTargets(std::vector<Vec> targets) : a_(std::move(targets)) {}
  std::string name() const override { return "row-targets"; }
  int dim() const override { return static_cast<int>(a_[0].size()); }
  int num_samples() const override { return static_cast<int>(a_.size()); }
  double l2() const override { return 0.0; }
  double loss_scale() const override { return 1.0; }
  double Value(const Vec& x) const override {
    double v = 0;
    for (const Vec& a : a_) v += 0.5 * (x - a).squaredNorm();
    return v;
  }
  void Gradient(const Vec& x, Vec* g) const override {
    std::vector<int> all(a_.size());
    for (size_t k = 0; k < all.size(); ++k) all[k] = static_cast<int>(k);
    BatchGradient(x, all, g);
  }
  void BatchGradient(const Vec& x, const std::vector<int>& samples, Vec* g) const override {
    *g = Vec::Zero(dim());
    for (int z : samples) *g += x - a_[z];
    *g *= static_cast<double>(a_.size()) / samples.size();
  }
  void HessianVector(const Vec&, const Vec& v, Vec* out) const override {
    *out = static_cast<double>(a_.size()) * v;
  }
  double SmoothnessBound() const override { return static_cast<double>(a_.size()); }
  std::optional<double> Accuracy(const Vec&) const override { return std::nullopt; }
  const Vec& target(int z) const { return a_[z]; }

 private:
  std::vector<Vec> a_;
};

constexpr int kNodes = 4, kDim = 2, kRows = 12, kBlocks = 3, kSteps = 4, kBatch = 3;

struct Network {
  Eigen::MatrixXd w;
  std::vector<std::unique_ptr<RowTargets>> problems;
  std::vector<NodeSetup> setups;
};

// A ring of 4; node i's row k is in block (k + i) % 3 (node 3's rows of block 2 are dropped,
// so that a node without rows of a block is covered), with targets around a centre per block.
Network MakeNetwork() {
  Network net;
  const topology::Graph graph = topology::Ring(kNodes);
  net.w = topology::MetropolisHastings(graph);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int i = 0; i < kNodes; ++i) {
    std::vector<Vec> targets;
    std::vector<int> blocks;
    for (int k = 0; k < kRows; ++k) {
      const int b = (k + i) % kBlocks;
      if (i == 3 && b == 2) continue;
      targets.push_back(Vec::Constant(kDim, 3.0 * b) +
                        Vec::NullaryExpr(kDim, [&] { return u(rng); }));
      blocks.push_back(b);
    }
    net.problems.push_back(std::make_unique<RowTargets>(targets));
    NodeSetup s = node::NodeSetupOf(graph, net.w, i);
    s.problem = net.problems.back().get();
    s.x0 = Vec::Constant(kDim, 0.1 * i);
    s.seed = 40 + i;
    s.block_rows = algorithms::RowsByBlock(blocks, kBlocks);
    s.block_steps = kSteps;
    net.setups.push_back(s);
  }
  return net;
}

RoundOptions MmOptions(int64_t window) {
  RoundOptions o;
  o.algorithm = "mm-psgd";
  o.step = 0.02;
  o.batch_size = kBatch;
  o.params.Set("mm-window", window);
  return o;
}

// Steps every node of `nodes` once, in lockstep (each gets its neighbours' payloads).
void StepAll(const Network& net, std::vector<std::unique_ptr<algorithms::RoundAlgorithm>>* nodes) {
  std::vector<Vec> out;
  for (const auto& a : *nodes) out.push_back(a->Outgoing());
  for (int i = 0; i < kNodes; ++i) {
    std::vector<const Vec*> inbox;
    for (int j : net.setups[i].neighbors) inbox.push_back(&out[j]);
    (*nodes)[i]->Advance(inbox);
  }
}

// X <- W X - step G, G's row i from a batch drawn as the oracle states: rows[engine() % |rows|]
// with engine = mt19937_64(seed), rows = the node's rows of block floor(t/S) mod B (no draw and
// G_i = 0 where it has none); and the predictors as plain means over the window's steps.
TEST(MmPsgd, IteratesAndPredictorsEqualTheMatrixForm) {
  for (const int64_t window : {0, 1, 3}) {
    Network net = MakeNetwork();
    const RoundOptions options = MmOptions(window);
    std::vector<std::unique_ptr<algorithms::RoundAlgorithm>> nodes;
    for (const NodeSetup& s : net.setups)
      nodes.push_back(algorithms::MakeRoundAlgorithm(options, s));
    const int iterations = 3 * kBlocks * kSteps + 5;  // three cycles and part of a fourth
    Eigen::MatrixXd x(kNodes, kDim);
    for (int i = 0; i < kNodes; ++i) x.row(i) = net.setups[i].x0.transpose();
    std::vector<std::mt19937_64> engines;
    for (const NodeSetup& s : net.setups) engines.emplace_back(s.seed);
    std::vector<std::vector<std::vector<Eigen::RowVectorXd>>> kept_node(
        kNodes, std::vector<std::vector<Eigen::RowVectorXd>>(kBlocks));
    for (int t = 0; t < iterations; ++t) {
      const int b = (t / kSteps) % kBlocks;
      Eigen::MatrixXd g = Eigen::MatrixXd::Zero(kNodes, kDim);
      for (int i = 0; i < kNodes; ++i) {
        const std::vector<int>& rows = net.setups[i].block_rows[b];
        if (rows.empty()) continue;
        const double m = net.problems[i]->num_samples();
        for (int draw = 0; draw < kBatch; ++draw) {
          const int z = rows[engines[i]() % rows.size()];
          g.row(i) += (x.row(i) - net.problems[i]->target(z).transpose()) * (m / kBatch);
        }
      }
      x = net.w * x - options.step * g;
      StepAll(net, &nodes);
      const int in_block = t % kSteps;
      if (window == 0 || in_block >= kSteps - window) {
        for (int i = 0; i < kNodes; ++i) kept_node[i][b].push_back(x.row(i));
      }
    }
    for (int i = 0; i < kNodes; ++i) {
      EXPECT_LT((nodes[i]->Model() - x.row(i).transpose()).norm(), 1e-12) << "node " << i;
      const std::vector<Vec>* predictors = nodes[i]->BlockPredictors();
      ASSERT_NE(predictors, nullptr);
      ASSERT_EQ(predictors->size(), static_cast<size_t>(kBlocks));
      for (int b = 0; b < kBlocks; ++b) {
        Eigen::RowVectorXd mean = Eigen::RowVectorXd::Zero(kDim);
        for (const auto& row : kept_node[i][b]) mean += row;
        mean /= static_cast<double>(kept_node[i][b].size());
        EXPECT_LT(((*predictors)[b] - mean.transpose()).norm(), 1e-12)
            << "window " << window << " node " << i << " block " << b;
      }
    }
  }
}

// Plain D-PSGD on the same data: the same iterates (MM-PSGD changes the output, not the
// training), and no predictors.
TEST(MmPsgd, TrainsAsDpsgdOnTheSameSchedule) {
  Network net = MakeNetwork();
  RoundOptions plain = MmOptions(0);
  plain.algorithm = "dpsgd";
  std::vector<std::unique_ptr<algorithms::RoundAlgorithm>> mm, dpsgd;
  for (const NodeSetup& s : net.setups) {
    mm.push_back(algorithms::MakeRoundAlgorithm(MmOptions(0), s));
    dpsgd.push_back(algorithms::MakeRoundAlgorithm(plain, s));
  }
  for (int t = 0; t < 30; ++t) {
    StepAll(net, &mm);
    StepAll(net, &dpsgd);
  }
  for (int i = 0; i < kNodes; ++i) {
    EXPECT_EQ(mm[i]->Model(), dpsgd[i]->Model()) << "node " << i;
    EXPECT_EQ(dpsgd[i]->BlockPredictors(), nullptr);
  }
}

// SwarmSGD's local steps (every variant's, SwarmSgdBase) on block-cyclic data: local step t
// draws from the node's rows of block floor(t/S) mod B, as the oracle states, and none where the
// node has no rows of the block.
TEST(SwarmSgdBlocks, LocalStepsDrawFromTheirBlocksRows) {
  Network net = MakeNetwork();
  for (const int node : {0, 3}) {
    algorithms::PairwiseOptions o;
    o.algorithm = "swarmsgd";
    o.step = 0.02;
    o.batch_size = kBatch;
    o.local_steps = 1000;  // no exchange is wanted within the test
    const NodeSetup& s = net.setups[node];
    auto swarm = algorithms::MakePairwiseAlgorithm(o, s);
    Vec x = s.x0;
    std::mt19937_64 engine(s.seed);
    const double m = net.problems[node]->num_samples();
    for (int t = 0; t < 2 * kBlocks * kSteps + 3; ++t) {
      const std::vector<int>& rows = s.block_rows[(t / kSteps) % kBlocks];
      Vec g = Vec::Zero(kDim);
      for (int draw = 0; draw < kBatch && !rows.empty(); ++draw) {
        g += (x - net.problems[node]->target(rows[engine() % rows.size()])) * (m / kBatch);
      }
      x -= o.step * g;
      swarm->LocalStep();
      ASSERT_LT((swarm->Model() - x).norm(), 1e-12) << "node " << node << " step " << t;
    }
  }
}

TEST(MmPsgd, RefusesDataThatIsNotBlockCyclicAndAWindowAboveS) {
  Network net = MakeNetwork();
  NodeSetup flat = net.setups[0];
  flat.block_rows.clear();
  try {
    algorithms::MakeRoundAlgorithm(MmOptions(0), flat);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--block-cyclic"), std::string::npos) << e.what();
  }
  try {
    algorithms::MakeRoundAlgorithm(MmOptions(kSteps + 1), net.setups[0]);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--mm-window 5"), std::string::npos) << e.what();
  }
}

TEST(MmPsgd, ResumesFromACheckpointBitForBit) {
  Network net = MakeNetwork();
  std::vector<std::unique_ptr<algorithms::RoundAlgorithm>> through, resumed;
  for (const NodeSetup& s : net.setups) {
    through.push_back(algorithms::MakeRoundAlgorithm(MmOptions(2), s));
    resumed.push_back(algorithms::MakeRoundAlgorithm(MmOptions(2), s));
  }
  for (int t = 0; t < 17; ++t) StepAll(net, &through);
  for (int i = 0; i < kNodes; ++i) {
    algorithms::AlgorithmState state;
    ASSERT_TRUE(through[i]->SaveState(&state));
    resumed[i]->LoadState(state);
  }
  for (int t = 0; t < 20; ++t) {
    StepAll(net, &through);
    StepAll(net, &resumed);
  }
  for (int i = 0; i < kNodes; ++i) {
    EXPECT_EQ(through[i]->Model(), resumed[i]->Model());
    EXPECT_EQ(*through[i]->BlockPredictors(), *resumed[i]->BlockPredictors());
  }
}

// ---- On a9a: the simulator's per-block accuracy, and the daemons.

node::RunConfig A9aConfig(const std::string& algorithm, const std::string& data) {
  node::RunConfig c;
  c.algorithm = algorithm;
  c.problem = "logistic";
  c.l2 = 1e-2;
  c.data = data;
  c.format = "libsvm";
  c.features = 123;
  c.seed = 7;
  c.batch = 8;
  c.iterations = 40;
  c.nodes = 4;
  c.block_cyclic = "2:5";
  return c;
}

// starling-sim's block_test_accuracy: block b's held-out rows (here: the label's rows, read and
// picked here) with the nodes' mean predictor b for mm-psgd, with the mean model for dpsgd.
TEST(BlockCyclicSim, BlockAccuracyIsThatOfTheBlocksPredictorOnTheBlocksTestRows) {
  const std::string a9a = testing::SharedData("a9a");
  STARLING_REQUIRE_FILE(a9a);
  const std::string dir = testing::FreshTempDir("block-sim");
  const testing::A9aSplit split = testing::SplitA9a(a9a, dir);
  const algorithms::Dataset test = algorithms::ReadLibsvm(split.test, 123);
  std::vector<int> rows[2];
  for (int r = 0; r < test.num_samples(); ++r) rows[test.labels[r] > 0].push_back(r);
  algorithms::ProblemSpec spec;
  spec.kind = "logistic";
  for (const char* algorithm : {"mm-psgd", "dpsgd"}) {
    node::RunConfig config = A9aConfig(algorithm, split.train);
    config.test_data = split.test;
    const node::RunSetup setup = node::BuildRunSetup(config);
    node::SimOptions options;
    const node::SimSummary summary = node::RunSimulation(config, setup, options);
    ASSERT_EQ(summary.block_test_accuracy.size(), 2u) << algorithm;
    node::RoundSimulator sim(setup.nodes, node::RoundOptionsFor(config, setup));
    sim.RunUntilIteration(config.iterations);
    for (int b = 0; b < 2; ++b) {
      Vec model = Vec::Zero(setup.dim);
      for (int i = 0; i < config.nodes; ++i) {
        const std::vector<Vec>* p = sim.node(i).BlockPredictors();
        model += p != nullptr ? (*p)[b] : sim.node(i).Model();
      }
      model /= config.nodes;
      const auto block = algorithms::MakeProblem(spec, test.Subset(rows[b]), 1.0);
      ASSERT_TRUE(summary.block_test_accuracy[b].has_value());
      EXPECT_NEAR(*summary.block_test_accuracy[b], *block->Accuracy(model), 1e-12)
          << algorithm << " block " << b;
    }
    EXPECT_EQ(summary.block_predictors, std::string(algorithm) == "mm-psgd");
  }
  fs::remove_all(dir);
}

std::vector<Vec> ReadPredictorFiles(const std::string& dir, int node) {
  std::vector<Vec> out;
  for (int b = 0; b < 2; ++b) {
    out.push_back(testing::ReadModelFile(dir + "/model-" + std::to_string(node) + ".txt.block" +
                                         std::to_string(b)));
  }
  return out;
}

// 4 starlingd processes on a ring run MM-PSGD on block-cyclic a9a and end at the simulator's
// models and predictors, bit for bit.
TEST(MmPsgdDaemon, EqualsTheSimulatorModelsAndPredictors) {
  const std::string a9a = testing::SharedData("a9a");
  STARLING_REQUIRE_FILE(a9a);
  const std::string dir = testing::FreshTempDir("mm-psgd");
  const int n = 4, iterations = 40;
  const std::string cluster =
      testing::WriteLoopbackCluster(dir, topology::Ring(n), testing::PortBase(), /*keys=*/true);
  const std::vector<std::string> args = {
      "--algorithm",    "mm-psgd", "--problem",    "logistic",
      "--l2",           "1e-2",    "--data",       a9a,
      "--format",       "libsvm",  "--iterations", std::to_string(iterations),
      "--seed",         "7",       "--batch",      "8",
      "--block-cyclic", "2:5",     "--mm-window",  "3"};
  const std::vector<Vec> models = testing::RunLoopbackDaemons(dir, cluster, n, args, 120);
  node::RunConfig config;
  config.algorithm = "mm-psgd";
  config.problem = "logistic";
  config.l2 = 1e-2;
  config.data = a9a;
  config.format = "libsvm";
  config.seed = 7;
  config.batch = 8;
  config.iterations = iterations;
  config.nodes = n;
  config.topology = "file:" + cluster;
  config.block_cyclic = "2:5";
  config.params.Set("mm-window", 3);
  node::BuildScope scope;
  scope.global = false;
  const node::RunSetup setup = node::BuildRunSetup(config, scope);
  node::RoundSimulator sim(setup.nodes, node::RoundOptionsFor(config, setup));
  sim.RunUntilIteration(iterations);
  for (int i = 0; i < n; ++i) {
    EXPECT_GT(sim.node(i).Model().norm(), 0.0) << "node " << i;
    EXPECT_EQ(models[i], sim.node(i).Model()) << "node " << i;
    const std::vector<Vec> predictors = ReadPredictorFiles(dir, i);
    const std::vector<Vec>& expected = *sim.node(i).BlockPredictors();
    for (int b = 0; b < 2; ++b) {
      EXPECT_NE(expected[b], sim.node(i).Model()) << "node " << i << " block " << b;
      EXPECT_EQ(predictors[b], expected[b]) << "node " << i << " block " << b;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace starling
