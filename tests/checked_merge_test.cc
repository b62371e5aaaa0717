// The check for NaN/Inf fused into the pairwise merges (docs/explanations/architecture.md): a
// received vector with a non-finite entry at its first, a middle or its last position is refused
// as a whole, leaves the model bit for bit as it was, and (through the exchange driver) is
// counted as a kNonFinite reject naming the sender; a finite vector merges exactly as the plain
// (simulator's) merge does.
#include "algorithms/pairwise/checked_merge.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "algorithms/algorithm_state.h"
#include "algorithms/pairwise/acid_swarm_sgd.h"
#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/pairwise/pairwise_diffusion.h"
#include "capi/external_pairwise.h"
#include "capi/step_handover.h"
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

// The options of the tests' two-node runs of `algorithm`.
PairwiseOptions TwoNodeOptions(const std::string& algorithm) {
  PairwiseOptions o;
  o.algorithm = algorithm;
  o.step = 0.05;
  o.batch_size = 1;
  o.local_steps = 1;
  o.graph = {{1}, {0}};
  return o;
}

// Neighbours 0 and 1 on `problem`, with random starting points drawn from `rng_seed`.
std::array<NodeSetup, 2> TwoNeighbours(const algorithms::Problem* problem, uint64_t rng_seed) {
  std::mt19937_64 rng(rng_seed);
  std::uniform_real_distribution<double> u(-3, 3);
  std::array<NodeSetup, 2> setups;
  for (int i = 0; i < 2; ++i) {
    NodeSetup& s = setups[static_cast<size_t>(i)];
    s.id = i;
    s.neighbors = {1 - i};
    s.neighbor_weights = {0.5};
    s.self_weight = 0.5;
    s.problem = problem;
    s.x0 = Vec(kDim);
    for (int k = 0; k < kDim; ++k) s.x0[k] = u(rng);
    s.seed = 5 + i;
  }
  return setups;
}

// Two neighbours, 0 and 1, of a method, with different random starting points.
struct Pair {
  explicit Pair(const std::string& algorithm)
      : problem(Vec::LinSpaced(kDim, 1.0, 2.0), Vec::Constant(kDim, 0.25)) {
    const PairwiseOptions o = TwoNodeOptions(algorithm);
    const std::array<NodeSetup, 2> setups = TwoNeighbours(&problem, 11);
    for (int i = 0; i < 2; ++i)
      node[i] = algorithms::MakePairwiseAlgorithm(o, setups[static_cast<size_t>(i)]);
  }
  testing::FakeQuadratic problem;
  std::unique_ptr<PairwiseAlgorithm> node[2];
};

const int kPositions[] = {0, kDim / 2, kDim - 1};
const double kBadValues[] = {kNaN, kInf, -kInf};

// Every pairwise method whose message is the model (the SwarmSGD family: SwarmSGD's fused
// merge, SlowMo's inherited one, A2CiD2's own).
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
    ASSERT_EQ(checked.node[0]->CompleteExchangeChecked(seq, *reply_c, &first_bad), Merge::kMerged);
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
    ASSERT_TRUE(
        algorithms::AddScaledDifferenceIfFinite(x.data(), s.data(), t.data(), 0.5, out.data(), n));
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

// ---------------------------------------------------------------------------------------------
// The methods that check in their merge's own pass besides SwarmSGD (A2CiD2, edge ADMM, pairwise
// diffusion, the C ABI's external SwarmSGD): the whole state, not only the model, is compared
// bit for bit, and a refused vector must leave the node exactly where an identical node that
// never saw it is (its next good merge gives the same bits).

// Two neighbours, 0 and 1, of `method` ("external": the C ABI's SwarmSGD over steps handed
// over as the caller's); two Nodes of the same method are identical (same seeds, same start).
struct Nodes {
  explicit Nodes(const std::string& method)
      : problem(Vec::LinSpaced(kDim, 1.0, 2.0), Vec::Constant(kDim, 0.25)) {
    external = method == "external";
    diffusion = method == "pairwise-diffusion";
    dim = diffusion ? 1 : kDim;
    const PairwiseOptions o = TwoNodeOptions(external ? "swarmsgd" : method);
    const std::array<NodeSetup, 2> setups = TwoNeighbours(&problem, 23);
    for (int i = 0; i < 2; ++i) {
      const NodeSetup& s = setups[static_cast<size_t>(i)];
      if (external) {
        handover[i] = std::make_unique<capi::StepHandover>(kDim);
        node[i] = capi::MakeExternalSwarmSgd(s, 1, "none", handover[i].get());
        caller[i] = s.x0;
      } else {
        node[i] = algorithms::MakePairwiseAlgorithm(o, s);
      }
    }
  }

  // A local step of node i (the caller's, staged, for "external": its model moved by a fixed
  // amount that depends on the step).
  void Step(int i) {
    if (external) {
      handover[i]->Sync(caller[i].data(), kDim);
      caller[i] -= 0.01 * (caller[i] - problem.b()) + Vec::Constant(kDim, 1e-3 * ++steps[i]);
      double waited = 0;
      EXPECT_EQ(handover[i]->Stage(caller[i].data(), kDim, std::chrono::milliseconds(-1), &waited),
                capi::StageResult::kStaged);
    }
    node[i]->LocalStep();
  }

  testing::FakeQuadratic problem;
  bool external = false, diffusion = false;
  int dim = kDim;
  std::unique_ptr<capi::StepHandover> handover[2];
  Vec caller[2];  // "external": the caller's buffers
  int steps[2] = {0, 0};
  std::unique_ptr<PairwiseAlgorithm> node[2];
};

// Everything a merge may change of a node, as far as it can be seen from outside: its
// checkpoint, model, counters, computations, exchange state, and for "external" the deltas
// the caller's buffer has not yet taken (Sync reads and clears them: both sides of a
// comparison take it at the same point).
struct Seen {
  bool saved = false;
  algorithms::AlgorithmState state;
  Vec model;
  algorithms::PairwiseCounters counters;
  int64_t computations = 0, changes = 0;
  bool outstanding = false, wants = false, waits = false;
  Vec pending_delta;
};

Seen See(Nodes* n, int i) {
  Seen s;
  const PairwiseAlgorithm& a = *n->node[i];
  s.saved = a.SaveState(&s.state);
  s.model = a.Model();
  s.counters = a.counters();
  s.computations = a.computations();
  s.outstanding = a.exchange_outstanding();
  s.wants = a.WantsExchange();
  s.waits = a.ShouldWait();
  if (const auto* d = dynamic_cast<const algorithms::PairwiseDiffusion*>(&a)) {
    s.changes = d->changes();
  }
  if (n->external) {
    s.pending_delta = Vec::Zero(kDim);
    n->handover[i]->Sync(s.pending_delta.data(), kDim);
    const algorithms::PairwiseCounters published = n->handover[i]->counters();
    EXPECT_EQ(published.exchanges_initiated, s.counters.exchanges_initiated);
    EXPECT_EQ(published.exchanges_served, s.counters.exchanges_served);
  }
  return s;
}

bool BitEqualReals(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0);
}

void ExpectSame(const Seen& a, const Seen& b) {
  EXPECT_EQ(a.saved, b.saved);
  EXPECT_EQ(a.state.algorithm, b.state.algorithm);
  EXPECT_EQ(a.state.ints, b.state.ints);
  EXPECT_TRUE(BitEqualReals(a.state.reals, b.state.reals));
  ASSERT_EQ(a.state.vectors.size(), b.state.vectors.size());
  for (size_t k = 0; k < a.state.vectors.size(); ++k) {
    EXPECT_TRUE(BitEqual(a.state.vectors[k], b.state.vectors[k])) << "checkpoint vector " << k;
  }
  EXPECT_EQ(a.state.texts, b.state.texts);
  EXPECT_TRUE(BitEqual(a.model, b.model));
  EXPECT_EQ(a.counters.local_steps, b.counters.local_steps);
  EXPECT_EQ(a.counters.exchanges_initiated, b.counters.exchanges_initiated);
  EXPECT_EQ(a.counters.exchanges_served, b.counters.exchanges_served);
  EXPECT_EQ(a.counters.exchanges_aborted, b.counters.exchanges_aborted);
  EXPECT_TRUE(BitEqualReals({a.counters.gradient_passes}, {b.counters.gradient_passes}));
  EXPECT_EQ(a.counters.bits_sent, b.counters.bits_sent);
  EXPECT_EQ(a.computations, b.computations);
  EXPECT_EQ(a.changes, b.changes);
  EXPECT_EQ(a.outstanding, b.outstanding);
  EXPECT_EQ(a.wants, b.wants);
  EXPECT_EQ(a.waits, b.waits);
  EXPECT_TRUE(BitEqual(a.pending_delta, b.pending_delta));
}

// The positions a bad value is planted at, for a vector of `dim` values.
std::vector<int> PositionsFor(int dim) {
  return dim == 1 ? std::vector<int>{0} : std::vector<int>{0, dim / 2, dim - 1};
}

class FusedCheckTest : public ::testing::TestWithParam<std::string> {};

// Daemons (checked merges) and simulators (plain merges): the same reply and the same state bit
// for bit after every exchange. Rounds alternate the initiator, and every third round comes
// without local steps, so that edge ADMM's responder serves both with its x solved and with a
// solve due (z, v changed by the exchange before).
TEST_P(FusedCheckTest, CheckedMergesEqualThePlainOnesBitForBit) {
  Nodes checked(GetParam()), plain(GetParam());
  for (int round = 0; round < 9; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    if (round % 3 != 2) {
      for (Nodes* n : {&checked, &plain}) {
        n->Step(0);
        n->Step(1);
      }
    }
    const int from = round % 2, to = 1 - from;
    const uint64_t seq = 100 + round;
    size_t first_bad = 999;
    const auto offer_c = checked.node[from]->BeginExchange(to, seq);
    const auto offer_p = plain.node[from]->BeginExchange(to, seq);
    ASSERT_TRUE(BitEqual(*offer_c, *offer_p));
    const auto reply_c = checked.node[to]->RespondChecked(from, *offer_c, &first_bad);
    const auto reply_p = plain.node[to]->Respond(from, *offer_p);
    ASSERT_TRUE(reply_c);
    EXPECT_TRUE(BitEqual(*reply_c, *reply_p));
    ExpectSame(See(&checked, to), See(&plain, to));
    ASSERT_EQ(checked.node[from]->CompleteExchangeChecked(seq, *reply_c, &first_bad),
              Merge::kMerged);
    ASSERT_TRUE(plain.node[from]->CompleteExchange(seq, *reply_p));
    ExpectSame(See(&checked, from), See(&plain, from));
    EXPECT_EQ(first_bad, 999u);
  }
  // A reply to an offer that is no longer kept: nothing to merge, nothing changed.
  size_t first_bad = 999;
  const Seen before = See(&checked, 0);
  EXPECT_EQ(checked.node[0]->CompleteExchangeChecked(12345, checked.node[1]->Model(), &first_bad),
            Merge::kNoSnapshot);
  ExpectSame(See(&checked, 0), before);
}

// A bad request: refused with the planted position, the responder exactly as before, and its
// next good request served exactly as by a node that never saw the bad one. With and without
// local steps first (edge ADMM: a solve due at the request, or x solved).
TEST_P(FusedCheckTest, NonFiniteRequestChangesNothing) {
  for (bool step_first : {false, true}) {
    for (int pos : PositionsFor(Nodes(GetParam()).dim)) {
      for (double bad_value : kBadValues) {
        SCOPED_TRACE("steps first " + std::to_string(step_first) + " position " +
                     std::to_string(pos) + " value " + std::to_string(bad_value));
        Nodes n(GetParam()), never(GetParam());
        for (Nodes* m : {&n, &never}) {
          if (step_first) m->Step(1);
          m->Step(0);
        }
        const auto offer = n.node[0]->BeginExchange(1, 7);
        Vec bad = *offer;
        bad[pos] = bad_value;
        const Seen before = See(&n, 1);
        size_t first_bad = 999;
        EXPECT_EQ(n.node[1]->RespondChecked(0, bad, &first_bad), nullptr);
        EXPECT_EQ(first_bad, static_cast<size_t>(pos));
        ExpectSame(See(&n, 1), before);
        // The good request, on this node and on one that never saw the bad one.
        See(&never, 1);  // takes the same pending deltas as See(&n, 1) above
        const auto reply = n.node[1]->RespondChecked(0, *offer, &first_bad);
        const auto reply_never = never.node[1]->RespondChecked(0, *offer, &first_bad);
        ASSERT_TRUE(reply && reply_never);
        EXPECT_TRUE(BitEqual(*reply, *reply_never));
        ExpectSame(See(&n, 1), See(&never, 1));
      }
    }
  }
}

// A bad reply: refused with the planted position, the initiator exactly as before (its offer
// still kept), and the good reply then merged exactly as by a node that never saw the bad one.
TEST_P(FusedCheckTest, NonFiniteReplyChangesNothing) {
  for (int pos : PositionsFor(Nodes(GetParam()).dim)) {
    for (double bad_value : kBadValues) {
      SCOPED_TRACE("position " + std::to_string(pos) + " value " + std::to_string(bad_value));
      Nodes n(GetParam()), never(GetParam());
      std::shared_ptr<const Vec> reply[2];
      int k = 0;
      for (Nodes* m : {&n, &never}) {
        m->Step(0);
        m->Step(1);
        const auto offer = m->node[0]->BeginExchange(1, 7);
        size_t unused;
        reply[k] = m->node[1]->RespondChecked(0, *offer, &unused);
        ASSERT_TRUE(reply[k]);
        // A local step between the offer and the reply (the merge keeps the progress made).
        m->Step(0);
        ++k;
      }
      ASSERT_TRUE(BitEqual(*reply[0], *reply[1]));
      Vec bad = *reply[0];
      bad[pos] = bad_value;
      const Seen before = See(&n, 0);
      size_t first_bad = 999;
      EXPECT_EQ(n.node[0]->CompleteExchangeChecked(7, bad, &first_bad), Merge::kRefused);
      EXPECT_EQ(first_bad, static_cast<size_t>(pos));
      ExpectSame(See(&n, 0), before);
      EXPECT_TRUE(n.node[0]->exchange_outstanding());
      See(&never, 0);  // takes the same pending deltas as See(&n, 0) above
      EXPECT_EQ(n.node[0]->CompleteExchangeChecked(7, *reply[0], &first_bad), Merge::kMerged);
      EXPECT_EQ(never.node[0]->CompleteExchangeChecked(7, *reply[1], &first_bad), Merge::kMerged);
      ExpectSame(See(&n, 0), See(&never, 0));
      EXPECT_FALSE(n.node[0]->exchange_outstanding());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Methods, FusedCheckTest,
                         ::testing::Values("acid", "async-admm", "pairwise-diffusion", "external"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

// A2CiD2's merges integrate its ODE up to the time of the last local step first. Driven through
// LocalStep that time is always reached already (dt = 0); a checkpoint whose ODE time is behind
// its step count makes the merges mix first (MixTo / MixedAt), which the checked merges must do
// in buffers of their own: equal to the plain merges bit for bit, and nothing mixed (x, x~, the
// ODE's time) when the vector is refused.
TEST(AcidFusedCheck, MergesThatMixFirstEqualThePlainOnesAndARefusalMixesNothing) {
  const auto behind = [](Nodes* n) {
    for (int i = 0; i < 2; ++i) {
      for (int s = 0; s < 3; ++s) n->Step(i);
      algorithms::AlgorithmState state;
      ASSERT_TRUE(n->node[i]->SaveState(&state));
      ASSERT_EQ(state.ints.size(), 9u);  // SwarmSGD's 8, then the ODE's time
      ASSERT_EQ(state.ints[8], 3);
      state.ints[8] = 1;  // mixed up to step 1 only: 2 steps of ODE due at the next merge
      n->node[i]->LoadState(state);
    }
  };
  ASSERT_GT(dynamic_cast<algorithms::AcidSwarmSgd&>(*Nodes("acid").node[0]).eta(), 0.0);
  // Equal to the plain merges: the responder with its mix due, then the initiator.
  {
    Nodes checked("acid"), plain("acid");
    behind(&checked);
    behind(&plain);
    size_t first_bad = 999;
    const auto offer_c = checked.node[0]->BeginExchange(1, 7);
    const auto offer_p = plain.node[0]->BeginExchange(1, 7);
    ASSERT_TRUE(BitEqual(*offer_c, *offer_p));
    const auto reply_c = checked.node[1]->RespondChecked(0, *offer_c, &first_bad);
    const auto reply_p = plain.node[1]->Respond(0, *offer_p);
    ASSERT_TRUE(reply_c);
    EXPECT_TRUE(BitEqual(*reply_c, *reply_p));
    ExpectSame(See(&checked, 1), See(&plain, 1));
    // The initiator's merge has no mix due (its offer mixed it; a checkpoint would drop the
    // offer): the initiator's mixing branch cannot be reached through the interface.
    for (Nodes* n : {&checked, &plain}) n->Step(0);
    ASSERT_EQ(checked.node[0]->CompleteExchangeChecked(7, *reply_c, &first_bad), Merge::kMerged);
    ASSERT_TRUE(plain.node[0]->CompleteExchange(7, *reply_p));
    ExpectSame(See(&checked, 0), See(&plain, 0));
  }
  // A refused request with a mix due: nothing mixed; the good one then as on a node that never
  // saw the bad one.
  for (int pos : PositionsFor(kDim)) {
    for (double bad_value : kBadValues) {
      Nodes n("acid"), never("acid");
      behind(&n);
      behind(&never);
      Vec bad = n.node[0]->Model();
      bad[pos] = bad_value;
      const Seen before = See(&n, 1);
      size_t first_bad = 999;
      EXPECT_EQ(n.node[1]->RespondChecked(0, bad, &first_bad), nullptr);
      EXPECT_EQ(first_bad, static_cast<size_t>(pos));
      ExpectSame(See(&n, 1), before);
      const auto reply = n.node[1]->RespondChecked(0, n.node[0]->Model(), &first_bad);
      const auto reply_never = never.node[1]->Respond(0, never.node[0]->Model());
      ASSERT_TRUE(reply);
      EXPECT_TRUE(BitEqual(*reply, *reply_never));
      ExpectSame(See(&n, 1), See(&never, 1));
    }
  }
}

}  // namespace
}  // namespace starling
