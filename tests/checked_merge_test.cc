// The check for NaN/Inf fused into the pairwise merges (issue 20; README "Error policy"): a
// received vector with a non-finite entry at its first, a middle or its last position is refused
// as a whole, leaves the model bit for bit as it was, and (through the exchange driver) is
// counted as a kNonFinite reject naming the sender; a finite vector merges exactly as the plain
// (simulator's) merge does.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "algorithms/pairwise/checked_merge.h"
#include "algorithms/pairwise/pairwise_algorithm.h"
#include "node/drivers/exchange_driver.h"
#include "tests/fake_quadratic.h"

namespace starling {
namespace {

using algorithms::NodeSetup;
using algorithms::PairwiseAlgorithm;
using algorithms::PairwiseOptions;
using Merge = algorithms::PairwiseAlgorithm::MergeResult;

constexpr int kDim = 37;  // odd, so that a vectorized loop also has a scalar tail
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

bool BitEqual(const Vec& a, const Vec& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0;
}

// Two neighbours, 0 and 1, of a method, with different random starting points.
struct Pair {
  explicit Pair(const std::string& algorithm)
      : problem(Vec::LinSpaced(kDim, 1.0, 2.0), Vec::Constant(kDim, 0.25)) {
    PairwiseOptions o;
    o.algorithm = algorithm;
    o.step = 0.05;
    o.batch_size = 1;
    o.local_steps = 1;
    o.graph = {{1}, {0}};
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> u(-3, 3);
    for (int i = 0; i < 2; ++i) {
      NodeSetup s;
      s.id = i;
      s.neighbors = {1 - i};
      s.neighbor_weights = {0.5};
      s.self_weight = 0.5;
      s.problem = &problem;
      s.x0 = Vec(kDim);
      for (int k = 0; k < kDim; ++k) s.x0[k] = u(rng);
      s.seed = 5 + i;
      node[i] = algorithms::MakePairwiseAlgorithm(o, s);
    }
  }
  testing::FakeQuadratic problem;
  std::unique_ptr<PairwiseAlgorithm> node[2];
};

const int kPositions[] = {0, kDim / 2, kDim - 1};
const double kBadValues[] = {kNaN, kInf, -kInf};

// Every pairwise method whose message is the model (the SwarmSGD family: SwarmSGD's fused
// merge, SlowMo's inherited one; A2CiD2's through the default scan-then-merge).
class CheckedMergeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CheckedMergeTest, NonFiniteReplyLeavesTheInitiatorUntouched) {
  for (int pos : kPositions) {
    for (double bad_value : kBadValues) {
      SCOPED_TRACE("position " + std::to_string(pos) + " value " + std::to_string(bad_value));
      Pair p(GetParam());
      p.node[0]->LocalStep();
      const std::shared_ptr<const Vec> offer = p.node[0]->BeginExchange(1, 7);
      size_t first_bad = 999;
      const std::shared_ptr<const Vec> reply = p.node[1]->RespondChecked(0, *offer, &first_bad);
      ASSERT_TRUE(reply);
      Vec bad = *reply;
      bad[pos] = bad_value;
      const Vec before = p.node[0]->Model();
      const auto counters = p.node[0]->counters();
      EXPECT_EQ(p.node[0]->CompleteExchangeChecked(7, bad, &first_bad), Merge::kRefused);
      EXPECT_EQ(first_bad, static_cast<size_t>(pos));
      EXPECT_TRUE(BitEqual(p.node[0]->Model(), before));
      EXPECT_EQ(p.node[0]->counters().exchanges_initiated, counters.exchanges_initiated);
      // Nothing changed: the offer is still there and the good reply still merges.
      EXPECT_TRUE(p.node[0]->exchange_outstanding());
      EXPECT_EQ(p.node[0]->CompleteExchangeChecked(7, *reply, &first_bad), Merge::kMerged);
      EXPECT_FALSE(p.node[0]->exchange_outstanding());
    }
  }
}

TEST_P(CheckedMergeTest, NonFiniteRequestLeavesTheResponderUntouched) {
  for (int pos : kPositions) {
    for (double bad_value : kBadValues) {
      SCOPED_TRACE("position " + std::to_string(pos) + " value " + std::to_string(bad_value));
      Pair p(GetParam());
      p.node[1]->LocalStep();
      Vec bad = p.node[0]->Model();
      bad[pos] = bad_value;
      const Vec before = p.node[1]->Model();
      const auto counters = p.node[1]->counters();
      size_t first_bad = 999;
      EXPECT_EQ(p.node[1]->RespondChecked(0, bad, &first_bad), nullptr);
      EXPECT_EQ(first_bad, static_cast<size_t>(pos));
      EXPECT_TRUE(BitEqual(p.node[1]->Model(), before));
      EXPECT_EQ(p.node[1]->counters().exchanges_served, counters.exchanges_served);
      EXPECT_EQ(p.node[1]->counters().bits_sent, counters.bits_sent);
    }
  }
}

// Daemons (checked merges) and simulators (plain merges) agree bit for bit on finite vectors.
TEST_P(CheckedMergeTest, CheckedMergesEqualThePlainOnesBitForBit) {
  Pair checked(GetParam()), plain(GetParam());
  for (int round = 0; round < 5; ++round) {
    for (Pair* p : {&checked, &plain}) {
      p->node[0]->LocalStep();
      p->node[1]->LocalStep();
    }
    const uint64_t seq = 100 + round;
    size_t first_bad = 0;
    const auto offer_c = checked.node[0]->BeginExchange(1, seq);
    const auto reply_c = checked.node[1]->RespondChecked(0, *offer_c, &first_bad);
    ASSERT_TRUE(reply_c);
    ASSERT_EQ(checked.node[0]->CompleteExchangeChecked(seq, *reply_c, &first_bad),
              Merge::kMerged);
    const auto offer_p = plain.node[0]->BeginExchange(1, seq);
    const auto reply_p = plain.node[1]->Respond(0, *offer_p);
    ASSERT_TRUE(plain.node[0]->CompleteExchange(seq, *reply_p));
    for (int i = 0; i < 2; ++i) {
      EXPECT_TRUE(BitEqual(checked.node[i]->Model(), plain.node[i]->Model()))
          << "node " << i << " round " << round;
    }
  }
  // A reply to an offer that is no longer kept.
  size_t first_bad = 0;
  EXPECT_EQ(checked.node[0]->CompleteExchangeChecked(12345, checked.node[1]->Model(), &first_bad),
            Merge::kNoSnapshot);
}

INSTANTIATE_TEST_SUITE_P(Methods, CheckedMergeTest,
                         ::testing::Values("swarmsgd", "slowmo-swarmsgd", "acid"));

// The kernel itself: the result equals Eigen's x + c (s - t) bit for bit, with and without a
// non-finite s, and the check sees every position (a vectorized loop's body and its tail).
TEST(AddScaledDifferenceIfFinite, MatchesEigenAndSeesEveryPosition) {
  for (int n : {1, 2, 3, 7, 8, 9, 64, 101}) {
    std::mt19937_64 rng(n);
    std::normal_distribution<double> g;
    Vec x(n), s(n), t(n);
    for (int k = 0; k < n; ++k) x[k] = g(rng), s[k] = g(rng), t[k] = g(rng);
    Vec expected = x;
    expected.noalias() += 0.5 * (s - t);
    Vec out(n);
    ASSERT_TRUE(algorithms::AddScaledDifferenceIfFinite(x.data(), s.data(), t.data(), 0.5,
                                                        out.data(), n));
    EXPECT_TRUE(BitEqual(out, expected)) << n;
    for (int k = 0; k < n; ++k) {
      for (double v : kBadValues) {
        Vec bad = s;
        bad[k] = v;
        EXPECT_FALSE(algorithms::AddScaledDifferenceIfFinite(x.data(), bad.data(), t.data(), 0.5,
                                                             out.data(), n))
            << n << " " << k;
        EXPECT_EQ(algorithms::FirstNonFinite(bad.data(), n), static_cast<size_t>(k));
      }
    }
    // Huge but finite values are not refused (their difference may overflow: that is the
    // model's divergence, which the daemon watches, not a malformed message).
    Vec big = Vec::Constant(n, std::numeric_limits<double>::max());
    EXPECT_TRUE(algorithms::AddScaledDifferenceIfFinite(x.data(), big.data(), t.data(), 0.5,
                                                        out.data(), n));
  }
}

// Through the exchange driver: a refused vector is reported to the reject sink as kNonFinite
// naming the sender, changes nothing, and gets no answer; a refused reply ends the offer so the
// node goes on.
TEST(CheckedMergeDriver, RefusedVectorsAreReportedWithTheSender) {
  Pair p("swarmsgd");
  struct Seen {
    int peer;
    net::Reject reject;
  };
  std::vector<Seen> seen[2];
  node::ExchangeDriver d0(p.node[0].get(), 0, {1}, 1), d1(p.node[1].get(), 1, {0}, 2);
  d0.SetRejectSink([&](int peer, const net::Reject& r) { seen[0].push_back({peer, r}); });
  d1.SetRejectSink([&](int peer, const net::Reject& r) { seen[1].push_back({peer, r}); });
  for (int pos : kPositions) {
    p.node[0]->LocalStep();
    p.node[1]->LocalStep();
    const std::optional<node::ExchangeMessage> request = d0.Tick(0);
    ASSERT_TRUE(request && request->payload);
    // A bad request: refused by node 1's merge.
    Vec bad = *request->payload;
    bad[pos] = kNaN;
    const Vec before1 = p.node[1]->Model();
    const node::ExchangeMessage refused = d1.OnRequest(0, request->seq, bad, 0);
    EXPECT_EQ(refused.kind, node::ExchangeMessage::Kind::kRefused);
    EXPECT_EQ(refused.payload, nullptr);
    EXPECT_TRUE(BitEqual(p.node[1]->Model(), before1));
    ASSERT_FALSE(seen[1].empty());
    EXPECT_EQ(seen[1].back().peer, 0);
    EXPECT_EQ(seen[1].back().reject.reason, net::RejectReason::kNonFinite);
    EXPECT_NE(seen[1].back().reject.detail.find("XCHG_REQ from 0: entry " + std::to_string(pos)),
              std::string::npos)
        << seen[1].back().reject.detail;
    // The good request is served; a bad reply is refused by node 0's merge.
    const node::ExchangeMessage reply = d1.OnRequest(0, request->seq, *request->payload, 0);
    ASSERT_EQ(reply.kind, node::ExchangeMessage::Kind::kReply);
    Vec bad_reply = *reply.payload;
    bad_reply[pos] = -kInf;
    const Vec before0 = p.node[0]->Model();
    EXPECT_FALSE(d0.OnReply(1, request->seq, bad_reply));
    EXPECT_TRUE(BitEqual(p.node[0]->Model(), before0));
    ASSERT_FALSE(seen[0].empty());
    EXPECT_EQ(seen[0].back().peer, 1);
    EXPECT_EQ(seen[0].back().reject.reason, net::RejectReason::kNonFinite);
    EXPECT_NE(seen[0].back().reject.detail.find("XCHG_REP from 1: entry " + std::to_string(pos)),
              std::string::npos)
        << seen[0].back().reject.detail;
    // The offer is over: the node is free to start its next exchange.
    EXPECT_FALSE(d0.offer_outstanding());
  }
  EXPECT_EQ(d0.merge_rejects(), 3);
  EXPECT_EQ(d1.merge_rejects(), 3);
  EXPECT_EQ(seen[0].size(), 3u);
  EXPECT_EQ(seen[1].size(), 3u);
}

}  // namespace
}  // namespace starling
