// Push-sum shares (algorithms/pairwise/push_sum_share.h): a graceful leave hands the leaver's
// share of the average to a neighbour, a join splits a donor's share, and merges with shares
// keep sum w_i x_i and sum w_i, so the network's weighted average moves only by local steps.
// Checked on SwarmSGD models trained on a9a; the averages are computed here, in plain loops,
// not with the rule's own WeightedAverage.
#include "algorithms/pairwise/push_sum_share.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "node/config/run_setup.h"
#include "tests/test_data.h"

namespace starling {
namespace {

using algorithms::PairwiseAlgorithm;

// The weighted average of the live nodes, sum w x / sum w, summed here.
Vec Average(const std::vector<std::unique_ptr<PairwiseAlgorithm>>& nodes,
            const std::vector<bool>& live) {
  Vec sum = Vec::Zero(nodes[0]->Model().size());
  double total = 0.0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!live[i]) continue;
    sum += nodes[i]->share() * nodes[i]->Model();
    total += nodes[i]->share();
  }
  return sum / total;
}

double RelativeDifference(const Vec& a, const Vec& b) { return (a - b).norm() / b.norm(); }

// One exchange of i with j, at once (the simulator's sequential model), with or without the
// shares passed; returns nothing, as the algorithms keep the result.
void Exchange(PairwiseAlgorithm& a, int i, PairwiseAlgorithm& b, int j, uint64_t seq, bool shares) {
  const double wa = a.share(), wb = b.share();
  const std::shared_ptr<const Vec> offer = a.BeginExchange(j, seq);
  if (shares) b.SetPartnerShare(wa);
  const std::shared_ptr<const Vec> reply = b.Respond(i, *offer);
  if (shares) a.SetPartnerShare(wb);
  ASSERT_TRUE(a.CompleteExchange(seq, *reply));
}

class A9aShares : public ::testing::Test {
 protected:
  void SetUp() override {
    a9a_ = testing::SharedData("a9a");
    STARLING_REQUIRE_FILE(a9a_);
    config_.algorithm = "swarmsgd";
    config_.problem = "logistic";
    config_.l2 = 1e-2;
    config_.data = a9a_;
    config_.format = "libsvm";
    config_.nodes = kNodes;
    config_.topology = "ring";
    config_.seed = 7;
    config_.iterations = 200;
    setup_ = std::make_unique<node::RunSetup>(node::BuildRunSetup(config_));
    nodes_ = Build();
  }
  std::vector<std::unique_ptr<PairwiseAlgorithm>> Build() const {
    std::vector<std::unique_ptr<PairwiseAlgorithm>> nodes;
    const algorithms::PairwiseOptions options = node::PairwiseOptionsFor(config_, *setup_);
    for (const auto& s : setup_->nodes)
      nodes.push_back(algorithms::MakePairwiseAlgorithm(options, s));
    return nodes;
  }
  // `activations` seeded activations over ring edges between live nodes (each: local steps, then
  // an exchange with a live ring neighbour), with shares.
  void Train(int activations, const std::vector<bool>& live, uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (int k = 0; k < activations; ++k) {
      int i;
      do i = static_cast<int>(rng() % kNodes);
      while (!live[i]);
      do nodes_[i]->LocalStep();
      while (!nodes_[i]->WantsExchange());
      const int j = LiveNeighbour(i, live, rng() % 2 == 0);
      Exchange(*nodes_[i], i, *nodes_[j], j, next_seq_++, true);
    }
  }
  // The next live node around the ring, forward or backward.
  static int LiveNeighbour(int i, const std::vector<bool>& live, bool forward) {
    int j = i;
    do j = (j + (forward ? 1 : kNodes - 1)) % kNodes;
    while (!live[j]);
    return j;
  }

  static constexpr int kNodes = 8;
  std::string a9a_;
  node::RunConfig config_;
  std::unique_ptr<node::RunSetup> setup_;
  std::vector<std::unique_ptr<PairwiseAlgorithm>> nodes_;
  uint64_t next_seq_ = 1;
};

TEST_F(A9aShares, LeaveHandsTheShareOnAndMergesKeepTheWeightedAverage) {
  std::vector<bool> live(kNodes, true);
  Train(400, live, 11);
  ASSERT_TRUE(nodes_[3]->KeepsShares());
  const Vec before = Average(nodes_, live);
  // Node 3 leaves; its ring neighbour 2 takes its share.
  nodes_[2]->AbsorbShare(nodes_[3]->Model(), nodes_[3]->share());
  live[3] = false;
  EXPECT_DOUBLE_EQ(nodes_[2]->share(), 2.0);
  const Vec after = Average(nodes_, live);
  EXPECT_LE(RelativeDifference(after, before), 1e-12);
  std::printf("leave: relative change of the weighted average %.3g\n",
              RelativeDifference(after, before));

  // Merges alone (no local step) among the 7 with unequal shares keep it, and even the shares out.
  std::mt19937_64 rng(5);
  double total_share = 0.0;
  for (int i = 0; i < kNodes; ++i) total_share += live[i] ? nodes_[i]->share() : 0.0;
  for (int k = 0; k < 300; ++k) {
    int i;
    do i = static_cast<int>(rng() % kNodes);
    while (!live[i]);
    const int j = LiveNeighbour(i, live, rng() % 2 == 0);
    Exchange(*nodes_[i], i, *nodes_[j], j, next_seq_++, true);
  }
  EXPECT_LE(RelativeDifference(Average(nodes_, live), before), 1e-12);
  double sum = 0.0, lo = 1e9, hi = 0.0;
  for (int i = 0; i < kNodes; ++i) {
    if (!live[i]) continue;
    sum += nodes_[i]->share();
    lo = std::min(lo, nodes_[i]->share());
    hi = std::max(hi, nodes_[i]->share());
  }
  EXPECT_NEAR(sum, total_share, 1e-12);
  EXPECT_LT(hi - lo, 0.05) << "the shares even out (8/7 each in the limit)";
}

// The same merges without the shares (the plain 1/2) move the weighted average: the test above
// would see it.
TEST_F(A9aShares, PlainMergesWithUnequalSharesWouldMoveTheAverage) {
  std::vector<bool> live(kNodes, true);
  Train(400, live, 11);
  nodes_[2]->AbsorbShare(nodes_[3]->Model(), nodes_[3]->share());
  live[3] = false;
  const Vec before = Average(nodes_, live);
  Exchange(*nodes_[2], 2, *nodes_[4], 4, next_seq_++, /*shares=*/false);
  EXPECT_GT(RelativeDifference(Average(nodes_, live), before), 1e-9);
}

TEST_F(A9aShares, JoinSplitsADonorsShareAndKeepsTheAverage) {
  std::vector<bool> live(kNodes, true);
  live[5] = false;  // node 5 is away from the start and joins later
  Train(400, live, 13);
  const Vec before = Average(nodes_, live);
  const double given = nodes_[4]->GiveHalfShare();
  EXPECT_DOUBLE_EQ(given, 0.5);
  // The joiner is a fresh algorithm object for slot 5, started from the donor's model.
  std::vector<std::unique_ptr<PairwiseAlgorithm>> fresh = Build();
  nodes_[5] = std::move(fresh[5]);
  nodes_[5]->AdoptShare(nodes_[4]->Model(), given);
  live[5] = true;
  EXPECT_EQ(nodes_[5]->Model(), nodes_[4]->Model());
  EXPECT_LE(RelativeDifference(Average(nodes_, live), before), 1e-12);
  // And it trains and merges like any other node.
  Train(200, live, 17);
  EXPECT_GT(nodes_[5]->counters().local_steps, 0);
}

TEST_F(A9aShares, EqualSharesMergeBitForBitAsThePlainMerge) {
  std::vector<bool> live(kNodes, true);
  Train(300, live, 19);  // with shares: every share stays exactly 1
  std::vector<std::unique_ptr<PairwiseAlgorithm>> with = std::move(nodes_);
  nodes_ = Build();
  std::mt19937_64 rng(19);
  for (int k = 0; k < 300; ++k) {  // the same activations as Train, without shares
    const int i = static_cast<int>(rng() % kNodes);
    do nodes_[i]->LocalStep();
    while (!nodes_[i]->WantsExchange());
    const int j = LiveNeighbour(i, live, rng() % 2 == 0);
    Exchange(*nodes_[i], i, *nodes_[j], j, 1000 + k, false);
  }
  for (int i = 0; i < kNodes; ++i) {
    EXPECT_EQ(with[i]->share(), 1.0);
    EXPECT_TRUE(with[i]->Model() == nodes_[i]->Model()) << "node " << i;
  }
}

TEST(PushSumShare, TheRuleOnSmallNumbers) {
  Vec x(2), leaver(2);
  x << 1, 2;
  leaver << 3, 6;
  double w = 1.0;
  algorithms::AbsorbLeaverShare(leaver, 3.0, &x, &w);  // c = 3/4
  EXPECT_DOUBLE_EQ(x(0), 2.5);
  EXPECT_DOUBLE_EQ(x(1), 5.0);
  EXPECT_DOUBLE_EQ(w, 4.0);
  EXPECT_DOUBLE_EQ(algorithms::ShareMergeCoefficient(1.0, 1.0), 0.5);
  EXPECT_DOUBLE_EQ(algorithms::ShareMergeCoefficient(1.0, 3.0), 0.75);
  EXPECT_DOUBLE_EQ(algorithms::MergedShare(1.0, 3.0), 2.0);
  Vec a(1), b(1);
  a << 0;
  b << 4;
  const Vec shift = algorithms::CrashShift({&a, &b}, {1.0, 1.0}, 1);  // 2 -> 0
  EXPECT_DOUBLE_EQ(shift(0), -2.0);
  EXPECT_THROW(algorithms::ShareMergeCoefficient(1.0, 0.0), std::invalid_argument);
  EXPECT_THROW(algorithms::ShareMergeCoefficient(std::nan(""), 1.0), std::invalid_argument);
  EXPECT_THROW(algorithms::WeightedAverage({&a, &b}, {1.0}), std::invalid_argument);
  Vec three(3);
  EXPECT_THROW(algorithms::AbsorbLeaverShare(three, 1.0, &x, &w), std::invalid_argument);
}

TEST_F(A9aShares, MethodsWithoutSharesRefuseThem) {
  for (const char* compression : {"lattice:8", "topk:10"}) {
    config_.compression = compression;
    const auto a = algorithms::MakePairwiseAlgorithm(node::PairwiseOptionsFor(config_, *setup_),
                                                     setup_->nodes[0]);
    EXPECT_FALSE(a->KeepsShares()) << compression;
    EXPECT_THROW(a->AbsorbShare(a->Model(), 1.0), std::logic_error) << compression;
    EXPECT_THROW(a->GiveHalfShare(), std::logic_error) << compression;
  }
}

}  // namespace
}  // namespace starling
