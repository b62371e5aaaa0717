// Topology inference (topology/inference.h) and the diffusion it learns from
// (algorithms/round/diffusion.h). Expectations are built independently: the combination matrix A from
// the Laplacian rule written out here, reference traces from a plain matrix recursion with the
// standard library's normal distribution, 2-means against a brute-force search, moments and
// metrics worked out by hand.
#include "topology/inference.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "algorithms/round/diffusion.h"
#include "algorithms/round/round_algorithm.h"
#include "net/codec.h"
#include "node/config/run_setup.h"
#include "node/drivers/sample_telemetry.h"
#include "node/probe/step_aligner.h"
#include "node/sim/inference_sim.h"
#include "node/sim/round_simulator.h"
#include "topology/generators.h"
#include "topology/graph.h"

namespace starling {
namespace {

using ::testing::HasSubstr;
using topology::Estimator;

// A = rho (I - (c / d_max)(D - Adj)), written out from its definition.
Eigen::MatrixXd LaplacianRule(const topology::Graph& g, double rho, double c) {
  const int n = g.num_nodes();
  Eigen::MatrixXd adj = Eigen::MatrixXd::Zero(n, n);
  int d_max = 0;
  for (int i = 0; i < n; ++i) {
    d_max = std::max(d_max, static_cast<int>(g.Neighbors(i).size()));
    for (int j : g.Neighbors(i)) adj(i, j) = 1.0;
  }
  const Eigen::MatrixXd degree = adj.rowwise().sum().asDiagonal();
  return rho * (Eigen::MatrixXd::Identity(n, n) - (c / d_max) * (degree - adj));
}

// y_t = A y_{t-1} + x_t with std::normal_distribution noise: an implementation independent of
// algorithms::DiffusionNetwork. Feeds the rows `observed` of every y_t after `burn_in` steps.
topology::Moments SimulateMoments(const Eigen::MatrixXd& a, const std::vector<int>& observed,
                                  int64_t pairs, uint64_t seed, int burn_in = 100) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  Eigen::VectorXd y = Eigen::VectorXd::Zero(a.rows()), x(a.rows());
  topology::MomentAccumulator acc(static_cast<int>(observed.size()));
  Eigen::VectorXd obs(observed.size());
  for (int64_t t = 0; acc.pairs() < pairs; ++t) {
    for (Eigen::Index i = 0; i < x.size(); ++i) x[i] = normal(rng);
    y = a * y + x;
    if (t < burn_in) continue;
    for (size_t k = 0; k < observed.size(); ++k) obs[k] = y[observed[k]];
    acc.Add(obs);
  }
  return acc.Finish();
}

TEST(MomentAccumulator, PairsFormOnlyBetweenConsecutiveSamples) {
  // Samples (1,2), (3,4) | break | (5,6), (7,8): two pairs.
  //   R0 = ([1 2]'[1 2] + [5 6]'[5 6]) / 2 = [[13, 16], [16, 20]]
  //   R1 = ([3 4]'[1 2] + [7 8]'[5 6]) / 2 = [[19, 24], [22, 28]]
  for (int block : {1, 2, 512}) {
    topology::MomentAccumulator acc(2, block);
    acc.Add(Eigen::Vector2d(1, 2));
    acc.Add(Eigen::Vector2d(3, 4));
    acc.Break();
    acc.Add(Eigen::Vector2d(5, 6));
    acc.Add(Eigen::Vector2d(7, 8));
    const topology::Moments m = acc.Finish();
    EXPECT_EQ(m.pairs, 2);
    Eigen::Matrix2d r0, r1;
    r0 << 13, 16, 16, 20;
    r1 << 19, 24, 22, 28;
    EXPECT_TRUE(m.r0.isApprox(r0, 1e-15)) << m.r0;
    EXPECT_TRUE(m.r1.isApprox(r1, 1e-15)) << m.r1;
  }
  topology::MomentAccumulator acc(3);
  EXPECT_THROW(acc.Add(Eigen::Vector2d(1, 2)), std::invalid_argument);
}

TEST(Estimators, GrangerRecoversAUnderFullObservability) {
  // Path 0-1-2-3-4 plus the chord 1-3: degrees 1,3,2,3,1, d_max 3.
  topology::Graph g(5);
  for (auto [u, v] : {std::pair{0, 1}, {1, 2}, {2, 3}, {3, 4}, {1, 3}}) g.AddEdge(u, v);
  const Eigen::MatrixXd a = LaplacianRule(g, 0.75, 0.9);
  const topology::Moments m = SimulateMoments(a, {0, 1, 2, 3, 4}, 200000, 7);
  const Eigen::MatrixXd granger = topology::Estimate(Estimator::kGranger, m);
  // Entries of R1 R0^-1 have standard errors of about 1/sqrt(n) = 0.0022.
  EXPECT_LT((granger - a).cwiseAbs().maxCoeff(), 0.015) << granger << "\n\n" << a;
  // And the pipeline classifies every pair (4 edges + chord = 5 of 10 pairs).
  const topology::InferenceResult r = topology::Infer(Estimator::kGranger, m);
  std::vector<bool> truth;
  for (auto [i, j] : topology::ObservedPairs(5)) truth.push_back(g.HasEdge(i, j));
  const topology::Classification c = topology::Compare(r.split.upper, truth);
  EXPECT_EQ(c.accuracy, 1.0);
  EXPECT_GT(topology::IdentifiabilityGap(r.scores, truth), 0.1);
}

TEST(Estimators, MomentEstimatorsMatchTheirDefinitions) {
  topology::Moments m;
  m.r0 = Eigen::Matrix2d{{2.0, 0.5}, {0.5, 1.0}};
  m.r1 = Eigen::Matrix2d{{1.0, 0.25}, {0.75, 0.5}};
  m.pairs = 100;
  EXPECT_TRUE(topology::Estimate(Estimator::kOneLag, m).isApprox(m.r1));
  EXPECT_TRUE(topology::Estimate(Estimator::kResidual, m).isApprox(m.r1 - m.r0));
  // R1 R0^-1 with R0^-1 = [[1, -0.5], [-0.5, 2]] / 1.75.
  Eigen::Matrix2d inv{{1.0, -0.5}, {-0.5, 2.0}};
  inv /= 1.75;
  EXPECT_TRUE(topology::Estimate(Estimator::kGranger, m).isApprox(m.r1 * inv, 1e-12));
  const Eigen::MatrixXd sym = topology::Symmetrize(m.r1);
  EXPECT_DOUBLE_EQ(sym(0, 1), 0.5);
  EXPECT_DOUBLE_EQ(sym(1, 0), 0.5);
}

TEST(Estimators, TooFewSamplesAndSingularMomentsAreClearErrors) {
  topology::Moments m;
  m.r0 = Eigen::MatrixXd::Identity(4, 4);
  m.r1 = Eigen::MatrixXd::Zero(4, 4);
  m.pairs = 7;  // Granger needs 2 * 4 = 8
  try {
    topology::Estimate(Estimator::kGranger, m);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("needs at least 8 sample pairs"));
  }
  EXPECT_NO_THROW(topology::Estimate(Estimator::kOneLag, m));
  m.pairs = 100;
  m.r0(3, 3) = 0.0;
  m.r0(2, 2) = 0.0;
  EXPECT_THROW(topology::Estimate(Estimator::kGranger, m), std::runtime_error);
  EXPECT_THROW(topology::ParseEstimator("lasso"), std::invalid_argument);
  EXPECT_EQ(topology::ParseEstimators("all").size(), 4u);
}

// Total within-cluster SSE of splitting `values` at `threshold` (upper: > threshold).
double SplitSse(const std::vector<double>& values, double threshold) {
  double sum[2] = {0, 0}, sq[2] = {0, 0};
  int count[2] = {0, 0};
  for (double v : values) {
    const int k = v > threshold;
    sum[k] += v, sq[k] += v * v, ++count[k];
  }
  double sse = 0;
  for (int k = 0; k < 2; ++k) {
    if (count[k]) sse += sq[k] - sum[k] * sum[k] / count[k];
  }
  return sse;
}

TEST(TwoMeans, SplitsHandMadeValues) {
  // Two tight groups: {0.09, 0.1, 0.12} and {0.5, 0.55}; threshold (0.12 + 0.5) / 2 = 0.31.
  const topology::TwoMeansSplit s = topology::TwoMeans1D({0.1, 0.5, 0.12, 0.09, 0.55});
  EXPECT_THAT(s.upper, ::testing::ElementsAre(false, true, false, false, true));
  EXPECT_DOUBLE_EQ(s.threshold, 0.31);
  EXPECT_NEAR(s.lower_mean, 0.31 / 3, 1e-15);
  EXPECT_NEAR(s.upper_mean, 0.525, 1e-15);
  // The largest gap is not always the 2-means split: {0, 1, 2, 3, 4, 6.5, 20} splits off 20 alone
  // (largest gap 6.5 -> 20) while {0, 0.1, 0.2, 5, 5.1, 20}: SSE of {0..0.2}|{5, 5.1, 20} is
  // 0.02 + 149.6..., of {0..5.1}|{20} is 25.8..., so 20 alone again; and {0, 1, 7, 8, 9} splits
  // at 4 (SSE 0.5 + 2 = 2.5) rather than at 8.5.
  EXPECT_THAT(topology::TwoMeans1D({0, 1, 7, 8, 9}).upper,
              ::testing::ElementsAre(false, false, true, true, true));
}

TEST(TwoMeans, MatchesBruteForceOnRandomValues) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<double> values(3 + trial % 40);
    for (double& v : values) v = u(rng) + (u(rng) > 0.6 ? 2.0 : 0.0);
    double best = std::numeric_limits<double>::infinity();
    for (double t : values) best = std::min(best, SplitSse(values, t));  // t = a lower maximum
    const topology::TwoMeansSplit s = topology::TwoMeans1D(values);
    EXPECT_NEAR(SplitSse(values, s.threshold), best, 1e-12);
    EXPECT_NEAR(s.sse, best, 1e-12);
  }
}

TEST(TwoMeans, NoSplitWithoutTwoDistinctValues) {
  EXPECT_THAT(topology::TwoMeans1D({0.3, 0.3, 0.3}).upper,
              ::testing::ElementsAre(false, false, false));
  EXPECT_TRUE(std::isinf(topology::TwoMeans1D({1.0}).threshold));
  EXPECT_TRUE(topology::TwoMeans1D({}).upper.empty());
}

TEST(GaussianMixture, FindsASmallTightClusterBesideALargeCloud) {
  // 300 non-edges N(0, 1) and 12 edges at 4.0 + 0.01 k: by construction the last 12 are the upper
  // cluster. The cloud's upper tail reaches about 3, close to the edges.
  algorithms::GaussianStream noise(21);
  std::vector<double> values;
  std::vector<bool> truth;
  for (int k = 0; k < 300; ++k) values.push_back(noise.Next()), truth.push_back(false);
  for (int k = 0; k < 12; ++k) values.push_back(4.0 + 0.01 * k), truth.push_back(true);
  const topology::TwoMeansSplit mix = topology::GaussianMixture1D(values);
  EXPECT_EQ(mix.upper, truth);
  EXPECT_NEAR(mix.upper_mean, 4.055, 1e-3);  // a soft mean: the cloud weighs a little
  EXPECT_LT(std::abs(mix.lower_mean), 0.2);
  // Degenerate inputs behave like 2-means.
  EXPECT_THAT(topology::GaussianMixture1D({0.3, 0.3, 0.3, 0.3}).upper,
              ::testing::ElementsAre(false, false, false, false));
  EXPECT_THAT(topology::GaussianMixture1D({0.0, 1.0}).upper, ::testing::ElementsAre(false, true));
  EXPECT_EQ(topology::ParseClustering("gmm"), topology::Clustering::kGaussianMixture);
  EXPECT_THROW(topology::ParseClustering("dbscan"), std::invalid_argument);
}

TEST(GaussianMixture, NeverCallsValuesBelowTheLowerMeanEdges) {
  // A tight lower cluster near 0 and a wide upper one: a far-left outlier (-50) lies where the
  // wide component has the larger density, but it is no edge.
  std::vector<double> values = {-50.0};
  for (int k = 0; k < 40; ++k) values.push_back(0.001 * (k % 5));
  for (int k = 0; k < 10; ++k) values.push_back(5.0 + 2.0 * k);
  const topology::TwoMeansSplit mix = topology::GaussianMixture1D(values);
  EXPECT_FALSE(mix.upper[0]);
  for (int k = 41; k < 51; ++k) EXPECT_TRUE(mix.upper[k]) << k;
}

TEST(Metrics, GapAndConfusionCountsByHand) {
  const std::vector<double> scores = {0.9, 0.1, 0.4, 0.5, 0.2};
  const std::vector<bool> truth = {true, false, true, false, false};
  // min connected 0.4 - max disconnected 0.5.
  EXPECT_DOUBLE_EQ(topology::IdentifiabilityGap(scores, truth), -0.1);
  EXPECT_TRUE(std::isnan(topology::IdentifiabilityGap({0.1}, {true})));
  const std::vector<bool> predicted = {true, false, false, true, false};
  const topology::Classification c = topology::Compare(predicted, truth);
  EXPECT_EQ(c.true_positives, 1);
  EXPECT_EQ(c.false_negatives, 1);
  EXPECT_EQ(c.false_positives, 1);
  EXPECT_EQ(c.true_negatives, 2);
  EXPECT_DOUBLE_EQ(c.accuracy, 0.6);
  EXPECT_DOUBLE_EQ(c.sensitivity, 0.5);
  EXPECT_DOUBLE_EQ(c.specificity, 2.0 / 3.0);
  EXPECT_TRUE(std::isnan(topology::Compare({false}, {false}).sensitivity));
  EXPECT_THROW(topology::Compare({true}, {true, false}), std::invalid_argument);
}

TEST(Diffusion, GaussianStreamIsStandardNormal) {
  algorithms::GaussianStream g(11);
  const int n = 200000;
  double sum = 0, sq = 0, fourth = 0;
  for (int i = 0; i < n; ++i) {
    const double x = g.Next();
    sum += x, sq += x * x, fourth += x * x * x * x;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);    // sd of the mean 0.0022
  EXPECT_NEAR(sq / n, 1.0, 0.015);    // sd 0.0032
  EXPECT_NEAR(fourth / n, 3.0, 0.1);  // normal kurtosis; sd 0.022
  algorithms::GaussianStream a(5), b(5);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.Next(), b.Next());
}

// The simulator's network form, the per-node state machines in lockstep and the Laplacian rule.
class DiffusionRun : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.algorithm = "diffusion";
    config_.nodes = 12;
    config_.topology = "er:0.3";
    config_.seed = 4;
    config_.params.Set("rho", 0.8);
    config_.params.Set("c", 0.7);
    setup_ = node::BuildRunSetup(config_);
    params_.rho = 0.8;
    params_.c = 0.7;
    params_.max_degree = setup_.graph.MaxDegree();
  }
  node::RunConfig config_;
  node::RunSetup setup_;
  algorithms::DiffusionParams params_;
};

TEST_F(DiffusionRun, StateMachinesEqualTheNetworkFormBitForBit) {
  node::RoundSimulator sim(setup_.nodes, node::RoundOptionsFor(config_, setup_));
  algorithms::DiffusionNetwork net(setup_.nodes, params_);
  for (int t = 0; t < 300; ++t) {
    sim.Step();
    net.Step();
  }
  ASSERT_EQ(sim.node(0).iteration(), 300);
  for (int i = 0; i < config_.nodes; ++i) {
    EXPECT_EQ(sim.node(i).Model()[0], net.state()[i]) << "node " << i;
  }
}

TEST_F(DiffusionRun, ACheckpointContinuesBitForBit) {
  // Node 3 alone, fed a fixed neighbour value: a restored copy continues with the same states.
  const algorithms::NodeSetup& me = setup_.nodes[3];
  algorithms::Diffusion a(me, params_);
  const Vec one = Vec::Constant(1, 0.25);
  const std::vector<const Vec*> inbox(me.neighbors.size(), &one);
  for (int t = 0; t < 37; ++t) a.Advance(inbox);  // odd: a spare normal is pending
  algorithms::AlgorithmState state;
  ASSERT_TRUE(a.SaveState(&state));
  algorithms::Diffusion b(me, params_);
  b.LoadState(state);
  EXPECT_EQ(b.iteration(), 37);
  for (int t = 0; t < 10; ++t) {
    a.Advance(inbox);
    b.Advance(inbox);
    EXPECT_EQ(a.Model()[0], b.Model()[0]);
  }
  state.texts[0] = "garbage";
  EXPECT_THROW(b.LoadState(state), std::invalid_argument);
}

TEST_F(DiffusionRun, FollowsTheLaplacianRule) {
  // One step from a known state with the noise of a twin network: y_1 - x_1 = A y_0 = 0 at the
  // first step, so compare two steps: y_2 = A y_1 + x_2, x_2 taken from the same seeds.
  algorithms::DiffusionNetwork net(setup_.nodes, params_);
  net.Step();
  const Eigen::VectorXd y1 = net.state();
  net.Step();
  std::vector<algorithms::GaussianStream> noise;
  for (const auto& n : setup_.nodes) noise.emplace_back(n.seed);
  Eigen::VectorXd x1(config_.nodes), x2(config_.nodes);
  for (int i = 0; i < config_.nodes; ++i) x1[i] = noise[i].Next(), x2[i] = noise[i].Next();
  const Eigen::MatrixXd a = LaplacianRule(setup_.graph, 0.8, 0.7);
  EXPECT_TRUE(y1.isApprox(x1, 1e-15));
  EXPECT_LT((net.state() - (a * y1 + x2)).cwiseAbs().maxCoeff(), 1e-12);
  // Rows sum to rho.
  EXPECT_LT((a.rowwise().sum().array() - 0.8).abs().maxCoeff(), 1e-12);
}

TEST_F(DiffusionRun, LongTraceHasR1EqualToAR0) {
  algorithms::DiffusionNetwork net(setup_.nodes, params_);
  topology::MomentAccumulator acc(config_.nodes);
  for (int t = 0; t < 100; ++t) net.Step();
  while (acc.pairs() < 200000) {
    acc.Add(net.state());
    net.Step();
  }
  const topology::Moments m = acc.Finish();
  const Eigen::MatrixXd a = LaplacianRule(setup_.graph, 0.8, 0.7);
  // R0 = sum_k A^2k = (I - A^2)^-1 for symmetric A and unit noise.
  const Eigen::MatrixXd eye = Eigen::MatrixXd::Identity(config_.nodes, config_.nodes);
  const Eigen::MatrixXd r0 = (eye - a * a).inverse();
  EXPECT_LT((m.r1 - a * m.r0).cwiseAbs().maxCoeff(), 0.05 * r0.maxCoeff());
  EXPECT_LT((m.r0 - r0).cwiseAbs().maxCoeff(), 0.05 * r0.maxCoeff());
}

TEST(DiffusionParams, RejectsValuesOutsideTheUnitInterval) {
  algorithms::DiffusionParams p;
  p.max_degree = 3;
  p.rho = 1.0;
  EXPECT_THROW(p.Validate(), std::invalid_argument);
  p.rho = 0.5;
  p.c = 0.0;
  EXPECT_THROW(p.Validate(), std::invalid_argument);
  p.c = 0.5;
  p.max_degree = 0;
  EXPECT_THROW(p.Validate(), std::invalid_argument);
}

TEST(InferenceSim, LogCheckpoints) {
  EXPECT_THAT(node::LogCheckpoints(100000),
              ::testing::ElementsAre(100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000));
  EXPECT_THAT(node::LogCheckpoints(3000), ::testing::ElementsAre(100, 200, 500, 1000, 2000, 3000));
}

// Acceptance: N = 100, ER p = 0.1, 30 observed, rho 0.75, c 0.9:
// Granger accuracy >= 0.99 at 1e5 samples.
TEST(InferenceSim, GrangerAcceptanceAtOneHundredThousandSamples) {
  node::RunConfig config;
  config.algorithm = "diffusion";
  config.nodes = 100;
  config.topology = "er:0.1";
  config.params.Set("rho", 0.75);
  config.params.Set("c", 0.9);
  node::InferenceSimOptions options;
  options.observe = 30;
  options.samples = 100000;
  options.estimator = "granger";
  for (uint64_t seed : {1, 2}) {
    config.seed = seed;
    const node::RunSetup setup = node::BuildRunSetup(config);
    const auto start = std::chrono::steady_clock::now();
    const auto records = node::RunInferenceSimulation(config, setup, options, nullptr);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_FALSE(records.empty());
    const node::InferenceRecord& last = records.back();
    EXPECT_EQ(last.samples, 100000);
    EXPECT_GE(last.classification.accuracy, 0.99) << "seed " << seed;
    // The observed pairs: 435, about 10% of them edges.
    EXPECT_EQ(last.classification.true_positives + last.classification.false_positives +
                  last.classification.true_negatives + last.classification.false_negatives,
              435);
    std::printf("seed %d: granger accuracy %.4f, gap %.4f, %.2f s\n", static_cast<int>(seed),
                last.classification.accuracy, last.gap, seconds);
  }
}

TEST(InferenceSim, BadOptionsNameTheOption) {
  node::RunConfig config;
  config.algorithm = "diffusion";
  config.nodes = 10;
  config.topology = "ring";
  const node::RunSetup setup = node::BuildRunSetup(config);
  node::InferenceSimOptions options;
  options.observe = 11;
  EXPECT_THROW(node::RunInferenceSimulation(config, setup, options, nullptr),
               std::invalid_argument);
  options.observe = 5;
  options.samples = 9;  // Granger needs 10 for 5 nodes
  try {
    node::RunInferenceSimulation(config, setup, options, nullptr);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("--samples 9"));
  }
  options.samples = 100;
  options.estimator = "nope";
  EXPECT_THROW(node::RunInferenceSimulation(config, setup, options, nullptr),
               std::invalid_argument);
}

TEST(StepAligner, UsesOnlyStepsSeenFromEveryNodeAndPairsOnlyConsecutiveOnes) {
  // Node 0 reports steps 0..9 (value 10 + t), node 1 steps 0..4 and 6..9 (value 20 + t), its
  // batches arriving first. Burn-in 2: complete steps 2, 3, 4, 6, 7, 8, 9; step 5 dropped.
  // Pairs: (2,3), (3,4), (6,7), (7,8), (8,9).
  topology::MomentAccumulator got(2), want(2);
  node::StepAligner aligner(2, 2, &got);
  aligner.Add(1, 0, {20, 21, 22, 23, 24});
  aligner.Add(1, 6, {26, 27, 28, 29});
  EXPECT_EQ(aligner.pairs(), 0);
  aligner.Add(0, 0, {10, 11, 12, 13, 14, 15});
  aligner.Add(0, 3, {99});  // a duplicate of step 3: ignored
  aligner.Add(0, 6, {16, 17, 18, 19});
  EXPECT_EQ(aligner.complete_rows(), 7);
  EXPECT_EQ(aligner.dropped_rows(), 1);
  EXPECT_EQ(aligner.pairs(), 5);
  EXPECT_EQ(aligner.pending_rows(), 0u);
  for (int t : {2, 3, 4}) want.Add(Eigen::Vector2d(10 + t, 20 + t));
  want.Break();
  for (int t : {6, 7, 8, 9}) want.Add(Eigen::Vector2d(10 + t, 20 + t));
  EXPECT_EQ(got.Finish().r0, want.Finish().r0);
  EXPECT_EQ(got.Finish().r1, want.Finish().r1);
}

TEST(SampleTelemetry, BatchesSurviveTheWireAndBadOnesAreRefused) {
  node::SampleBatcher batcher(3, 1000);
  batcher.Add(7, 0.5, 0);
  EXPECT_FALSE(batcher.Due(10));
  batcher.Add(8, -1.5, 5);
  EXPECT_TRUE(batcher.Due(1000));  // old enough
  batcher.Add(9, 2.0, 6);
  EXPECT_TRUE(batcher.Due(6));  // full
  EXPECT_THROW(batcher.Add(11, 0.0, 7), std::logic_error);
  net::Envelope e = batcher.Take();
  EXPECT_TRUE(batcher.empty());
  e.sender = 4;
  std::string bytes;
  net::Encode(e, &bytes);
  net::Envelope decoded;
  net::Reject reject;
  ASSERT_TRUE(net::Decode(bytes.data(), bytes.size(), net::LimitsForRun(node::kMaxSampleBatch, 1),
                          &decoded, &reject));
  const auto batch = node::ParseSampleBatch(decoded);
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->sender, 4);
  EXPECT_EQ(batch->first_step, 7);
  EXPECT_THAT(batch->values, ::testing::ElementsAre(0.5, -1.5, 2.0));
  // A count that disagrees with the payload, a fractional step, or no sample fields at all.
  net::Envelope bad = decoded;
  bad.telemetry[1].value = 4;
  EXPECT_FALSE(node::ParseSampleBatch(bad).has_value());
  bad = decoded;
  bad.telemetry[0].value = 7.5;
  EXPECT_FALSE(node::ParseSampleBatch(bad).has_value());
  bad = decoded;
  bad.telemetry.clear();
  EXPECT_FALSE(node::ParseSampleBatch(bad).has_value());
}

}  // namespace
}  // namespace starling
