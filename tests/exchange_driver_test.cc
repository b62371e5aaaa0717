// SwarmSGD's exchange and its driver: sum conservation under every interleaving the driver
// allows (delays, timeouts with late replies, BUSY, crossed requests), and averaging.
#include "node/drivers/exchange_driver.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "node/drivers/exchange_wire.h"
#include "node/sim/pairwise_simulator.h"
#include "tests/always_offers.h"
#include "tests/fake_quadratic.h"
#include "topology/generators.h"

namespace starling {
namespace {

using algorithms::NodeSetup;
using algorithms::PairwiseOptions;
using node::ExchangeDriver;
using node::ExchangeMessage;

// Nodes whose objective is flat (zero gradient), so local steps do not move the models and the
// exchanges alone decide them: the sum of models must stay exactly where it started.
struct FlatNetwork {
  std::unique_ptr<testing::FakeQuadratic> flat;
  std::vector<NodeSetup> setups;
};

FlatNetwork MakeFlat(const topology::Graph& g, int dim) {
  FlatNetwork f;
  f.flat = std::make_unique<testing::FakeQuadratic>(Vec::Zero(dim), Vec::Zero(dim));
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-5, 5);
  for (int i = 0; i < g.num_nodes(); ++i) {
    NodeSetup s;
    s.id = i;
    s.neighbors = g.Neighbors(i);
    s.problem = f.flat.get();
    s.x0 = Vec(dim);
    for (int k = 0; k < dim; ++k) s.x0[k] = u(rng);
    s.seed = 77 + i;
    f.setups.push_back(s);
  }
  return f;
}

PairwiseOptions Swarm(int local_steps) {
  PairwiseOptions o;
  o.step = 0.1;
  o.batch_size = 1;
  o.local_steps = local_steps;
  return o;
}

// FakeQuadratic's mini-batch gradients perturb coordinate 0 only, so local steps leave the other
// coordinates untouched: their sum over nodes is what the exchanges must conserve.
Vec SumOf(const std::vector<const algorithms::PairwiseAlgorithm*>& nodes) {
  Vec sum = Vec::Zero(nodes[0]->Model().size());
  for (const auto* a : nodes) sum += a->Model();
  return sum.tail(sum.size() - 1);
}

TEST(PairwiseSimulator, ExchangesConserveTheSumAndAverage) {
  FlatNetwork f = MakeFlat(topology::RandomRegular(12, 4, 5), 6);
  node::PairwiseSimulator sim(f.setups, Swarm(2), 9);
  std::vector<const algorithms::PairwiseAlgorithm*> nodes;
  for (int i = 0; i < sim.num_nodes(); ++i) nodes.push_back(&sim.node(i));
  const Vec before = SumOf(nodes);
  const double spread_before = sim.Spread().consensus;
  sim.RunUntilLocalSteps(400);
  EXPECT_LT((SumOf(nodes) - before).lpNorm<Eigen::Infinity>(), 1e-11);
  EXPECT_LT(sim.Spread().consensus, 1e-6 * spread_before);
  EXPECT_GE(sim.total_local_steps(), 400 * 12);
}

struct Wire {
  int from, to;
  ExchangeMessage::Kind kind;
  uint64_t seq;
  Vec payload;
  int64_t deliver_at;
};

// Runs drivers over an in-memory network with random latency; replies can arrive after the
// offer's deadline, so timeouts, late replies, BUSY and crossed requests all happen.
TEST(ExchangeDriver, ConservesTheSumUnderDelaysTimeoutsAndBusy) {
  FlatNetwork f = MakeFlat(topology::Ring(6), 4);
  std::vector<std::unique_ptr<algorithms::PairwiseAlgorithm>> algos;
  std::vector<std::unique_ptr<ExchangeDriver>> drivers;
  node::ExchangeTiming timing;
  timing.reply_timeout_ms = 30;
  timing.backoff_min_ms = 0;
  timing.backoff_max_ms = 5;
  for (const auto& s : f.setups) {
    algos.push_back(algorithms::MakePairwiseAlgorithm(Swarm(1), s));
    drivers.push_back(
        std::make_unique<ExchangeDriver>(algos.back().get(), s.id, s.neighbors, s.seed, timing));
  }
  std::vector<const algorithms::PairwiseAlgorithm*> view;
  for (const auto& a : algos) view.push_back(a.get());
  const Vec before = SumOf(view);

  std::mt19937_64 rng(4);
  std::vector<Wire> wire;
  auto post = [&](int from, const ExchangeMessage& m, int64_t now) {
    // Latency 0-60 ms: often longer than the 30 ms reply timeout.
    wire.push_back({from, m.peer, m.kind, m.seq, m.payload ? *m.payload : Vec(),
                    now + static_cast<int64_t>(rng() % 61)});
  };
  for (int64_t now = 0; now < 20000; ++now) {
    for (size_t i = 0; i < algos.size(); ++i) {
      algos[i]->LocalStep();
      if (auto m = drivers[i]->Tick(now)) post(static_cast<int>(i), *m, now);
    }
    for (size_t k = 0; k < wire.size();) {
      if (wire[k].deliver_at > now) {
        ++k;
        continue;
      }
      Wire w = std::move(wire[k]);
      wire.erase(wire.begin() + static_cast<long>(k));
      auto& d = *drivers[w.to];
      switch (w.kind) {
        case ExchangeMessage::Kind::kRequest:
          post(w.to, d.OnRequest(w.from, w.seq, w.payload, now), now);
          break;
        case ExchangeMessage::Kind::kReply:
          d.OnReply(w.from, w.seq, w.payload);
          break;
        case ExchangeMessage::Kind::kBusy:
          d.OnBusy(w.from, w.seq, now);
          break;
        case ExchangeMessage::Kind::kRefused:  // never posted: these vectors are all finite
          break;
      }
    }
  }
  // Drain: deliver what is still in flight (replies and BUSYs only matter now).
  for (auto& w : wire) {
    auto& d = *drivers[w.to];
    if (w.kind == ExchangeMessage::Kind::kReply) d.OnReply(w.from, w.seq, w.payload);
  }
  int64_t timeouts = 0, busy = 0, late = 0, stale = 0, served = 0;
  for (size_t i = 0; i < drivers.size(); ++i) {
    timeouts += drivers[i]->timeouts();
    busy += drivers[i]->busy_received();
    late += drivers[i]->late_replies_merged();
    stale += drivers[i]->stale_dropped();
    served += algos[i]->counters().exchanges_served;
  }
  EXPECT_GT(timeouts, 0);
  EXPECT_GT(busy, 0);
  EXPECT_GT(late, 0);
  EXPECT_GT(served, 100);
  // Requests still in flight when the run stopped were never served, so no reply is owed; every
  // reply that was sent was merged by its initiator.
  EXPECT_EQ(stale, 0);
  EXPECT_LT((SumOf(view) - before).lpNorm<Eigen::Infinity>(), 1e-11);
}

TEST(ExchangeDriver, CrossedRequestsLetTheLowerIdInitiate) {
  FlatNetwork f = MakeFlat(topology::Ring(2), 3);
  auto a0 = algorithms::MakePairwiseAlgorithm(Swarm(1), f.setups[0]);
  auto a1 = algorithms::MakePairwiseAlgorithm(Swarm(1), f.setups[1]);
  ExchangeDriver d0(a0.get(), 0, {1}, 1), d1(a1.get(), 1, {0}, 2);
  a0->LocalStep();
  a1->LocalStep();
  auto r0 = d0.Tick(0);
  auto r1 = d1.Tick(0);
  ASSERT_TRUE(r0 && r1);
  const Vec offer0 = *r0->payload, offer1 = *r1->payload;
  const Vec sum_before = (a0->Model() + a1->Model()).tail(2);
  // Node 1 (higher id) receives node 0's request: it gives up its own offer and serves.
  ExchangeMessage reply = d1.OnRequest(0, r0->seq, offer0, 1);
  ASSERT_EQ(reply.kind, ExchangeMessage::Kind::kReply);
  EXPECT_FALSE(d1.offer_outstanding());
  // Node 0 (lower id) receives node 1's request: BUSY, it keeps waiting for its reply.
  ExchangeMessage busy = d0.OnRequest(1, r1->seq, offer1, 1);
  EXPECT_EQ(busy.kind, ExchangeMessage::Kind::kBusy);
  EXPECT_FALSE(d1.OnBusy(0, r1->seq, 2)) << "BUSY for an offer already given up is stale";
  EXPECT_TRUE(d0.OnReply(1, r0->seq, *reply.payload));
  EXPECT_LT(((a0->Model() + a1->Model()).tail(2) - sum_before).norm(), 1e-12);
  EXPECT_LT((a0->Model() - a1->Model()).tail(2).norm(), 1e-12);
}

// How long a node waiting for messages may sleep without delaying its driver (PairwiseNode's
// paced poll): until the offer's deadline, until a back-off ends, or for ever (nothing timed).
TEST(ExchangeDriver, MsUntilNextTimerNamesTheDeadlineAndTheEndOfABackOff) {
  FlatNetwork f = MakeFlat(topology::Ring(2), 3);
  auto a0 = algorithms::MakePairwiseAlgorithm(Swarm(1), f.setups[0]);
  auto a1 = algorithms::MakePairwiseAlgorithm(Swarm(1), f.setups[1]);
  node::ExchangeTiming timing;
  timing.reply_timeout_ms = 100;
  timing.backoff_min_ms = 7;
  timing.backoff_max_ms = 7;
  ExchangeDriver d0(a0.get(), 0, {1}, 1, timing), d1(a1.get(), 1, {0}, 2, timing);
  EXPECT_FALSE(d0.MsUntilNextTimer(0)) << "no local step yet: the algorithm wants no exchange";
  a0->LocalStep();
  EXPECT_EQ(d0.MsUntilNextTimer(0), 0) << "an offer is due now";
  auto r0 = d0.Tick(10);
  ASSERT_TRUE(r0);
  EXPECT_EQ(d0.MsUntilNextTimer(40), 70) << "the offer's deadline, 100 ms after it";
  EXPECT_EQ(d0.MsUntilNextTimer(200), 0) << "past the deadline: Tick abandons it now";
  // Crossed requests: node 1 (higher id) gets node 0's request while its own offer is out; node
  // 0 answers node 1's offer BUSY and node 1 backs off 7 ms.
  a1->LocalStep();
  auto r1 = d1.Tick(10);
  ASSERT_TRUE(r1);
  ExchangeMessage busy = d0.OnRequest(1, r1->seq, *r1->payload, 20);
  ASSERT_EQ(busy.kind, ExchangeMessage::Kind::kBusy);
  ASSERT_TRUE(d1.OnBusy(0, r1->seq, 30));
  EXPECT_FALSE(d1.offer_outstanding());
  // H = 1: one local step since its last offer, so it wants one again once the back-off is over.
  a1->LocalStep();
  EXPECT_EQ(d1.MsUntilNextTimer(32), 5);
  EXPECT_EQ(d1.MsUntilNextTimer(40), 0);
  EXPECT_TRUE(d1.Tick(40));
}

// A node waiting for merges (--merge-pace) also offers between the algorithm's offers (one per H
// local steps), to each neighbour it has not merged with since its last local step.
TEST(ExchangeDriver, APacedNodeOffersToEachNeighbourItHasNotMergedWithSinceItsStep) {
  FlatNetwork f = MakeFlat(topology::Ring(3), 3);
  std::vector<std::unique_ptr<algorithms::PairwiseAlgorithm>> a;
  std::vector<std::unique_ptr<ExchangeDriver>> d;
  for (int i = 0; i < 3; ++i) {
    a.push_back(algorithms::MakePairwiseAlgorithm(Swarm(2), f.setups[i]));
    d.push_back(std::make_unique<ExchangeDriver>(a[i].get(), i, f.setups[i].neighbors, 1 + i));
  }
  const Vec sum_before = (a[0]->Model() + a[1]->Model() + a[2]->Model()).tail(2);
  const auto serve = [&](const ExchangeMessage& request) {
    ExchangeMessage reply = d[request.peer]->OnRequest(0, request.seq, *request.payload, 0);
    ASSERT_EQ(reply.kind, ExchangeMessage::Kind::kReply);
    EXPECT_TRUE(d[0]->OnReply(request.peer, request.seq, *reply.payload));
  };
  EXPECT_FALSE(d[0]->Tick(0)) << "H = 2 and no local step: no offer at the algorithm's cadence";
  EXPECT_FALSE(d[0]->MsUntilNextTimer(0));
  EXPECT_EQ(d[0]->MsUntilNextTimer(0, /*paced=*/true), 0);
  auto first = d[0]->Tick(0, /*paced=*/true);
  ASSERT_TRUE(first);
  EXPECT_FALSE(d[0]->Tick(0, /*paced=*/true)) << "one offer outstanding at most";
  serve(*first);
  auto second = d[0]->Tick(1, /*paced=*/true);
  ASSERT_TRUE(second);
  EXPECT_NE(second->peer, first->peer) << "the other neighbour: the first is merged with";
  serve(*second);
  EXPECT_FALSE(d[0]->Tick(2, /*paced=*/true)) << "merged with both since its last step";
  EXPECT_FALSE(d[0]->MsUntilNextTimer(2, /*paced=*/true)) << "nothing timed: no busy poll";
  a[0]->LocalStep();
  EXPECT_TRUE(d[0]->Tick(3, /*paced=*/true)) << "after a local step both are fresh again";
  EXPECT_EQ(a[0]->counters().exchanges_initiated, 2);
  EXPECT_LT(((a[0]->Model() + a[1]->Model() + a[2]->Model()).tail(2) - sum_before).norm(), 1e-12);
}

// An algorithm that always wants an exchange and asks for `preferred` (-1: any).
using Prefers = testing::AlwaysOffers;

// The driver offers to the neighbour the algorithm asks for (DADAO settling a timed-out gossip)
// while it is available, and to a random available one otherwise.
TEST(ExchangeDriver, OffersToThePreferredPeerWhileItIsAvailable) {
  Prefers a;
  node::ExchangeTiming timing;
  timing.reply_timeout_ms = 1;
  timing.backoff_min_ms = 0;
  timing.backoff_max_ms = 0;
  timing.timeouts_to_exclude = 1000;
  ExchangeDriver d(&a, 0, {1, 2, 3}, 5, timing);
  const auto peers = [&](int64_t* now) {
    std::vector<int> count(4, 0);
    for (int k = 0; k < 60; ++k, *now += 2) {
      auto m = d.Tick(*now);
      if (m) ++count[static_cast<size_t>(m->peer)];
    }
    return count;
  };
  int64_t now = 0;
  a.preferred = 2;
  EXPECT_EQ(peers(&now), (std::vector<int>{0, 0, 60, 0}));
  d.SetAvailable(2, false);
  std::vector<int> c = peers(&now);
  EXPECT_EQ(c[2], 0);
  EXPECT_GT(c[1], 10);
  EXPECT_GT(c[3], 10);
  d.SetAvailable(2, true);
  a.preferred = -1;
  c = peers(&now);
  for (int p = 1; p <= 3; ++p) EXPECT_GT(c[static_cast<size_t>(p)], 5) << "peer " << p;
}

// Records why the driver gave up each offer.
class RecordsAborts : public Prefers {
 public:
  std::vector<std::string> aborts;
  void AbortExchange(bool may_still_reply) override {
    aborts.push_back(may_still_reply ? "timed out" : "refused");
    Prefers::AbortExchange(may_still_reply);
  }
  void AbortCrossedExchange() override {
    aborts.push_back("crossed");
    Prefers::AbortExchange(true);
  }
};

// The algorithm learns why its offer ended: a time-out (AbortExchange(true)), a crossed request
// that the higher id serves (AbortCrossedExchange), a BUSY (AbortExchange(false)). DADAO settles
// a timed-out gossip but makes a refused or crossed one again: the two must not be confused.
TEST(ExchangeDriver, TellsTheAlgorithmWhyAnOfferEnded) {
  RecordsAborts a;
  a.preferred = 3;
  node::ExchangeTiming timing;
  timing.reply_timeout_ms = 10;
  timing.backoff_min_ms = 0;
  timing.backoff_max_ms = 0;
  timing.timeouts_to_exclude = 1000;
  ExchangeDriver d(&a, /*self_id=*/5, {3, 7}, 1, timing);
  const Vec theirs = Vec::Zero(2);
  auto offer = d.Tick(0);
  ASSERT_TRUE(offer);
  ASSERT_EQ(offer->peer, 3);
  EXPECT_FALSE(d.Tick(9));
  EXPECT_TRUE(a.aborts.empty());
  // Timed out; a request of node 3's right after it is not a crossing (no offer outstanding).
  offer = d.Tick(10);
  EXPECT_EQ(a.aborts, (std::vector<std::string>{"timed out"}));
  ASSERT_TRUE(offer);  // no back-off here: the next offer at once
  // Node 3 (lower id) offers to us while ours is outstanding: we give ours up and serve.
  EXPECT_EQ(d.OnRequest(3, 77, theirs, 11).kind, ExchangeMessage::Kind::kReply);
  EXPECT_EQ(a.aborts, (std::vector<std::string>{"timed out", "crossed"}));
  offer = d.Tick(12);
  ASSERT_TRUE(offer);
  EXPECT_TRUE(d.OnBusy(3, offer->seq, 13));
  EXPECT_EQ(a.aborts, (std::vector<std::string>{"timed out", "crossed", "refused"}));
  // A request of node 3's with no offer of ours outstanding aborts nothing.
  EXPECT_EQ(d.OnRequest(3, 78, theirs, 14).kind, ExchangeMessage::Kind::kReply);
  // Node 7 (higher id) crossing our offer gets BUSY: ours stays outstanding.
  a.preferred = 7;
  offer = d.Tick(15);
  ASSERT_TRUE(offer);
  ASSERT_EQ(offer->peer, 7);
  EXPECT_EQ(d.OnRequest(7, 79, theirs, 16).kind, ExchangeMessage::Kind::kBusy);
  EXPECT_EQ(a.aborts.size(), 3u);
}

// Counts which merges the driver calls: the checked ones (the default, for vectors the transport
// did not scan) or the plain ones (SetVectorsChecked: the wire refused NaN/Inf as it copied them).
class CountsMerges : public Prefers {
 public:
  int checked = 0;
  int plain = 0;  // called by the driver itself, not by a checked default
  bool CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& v) override {
    if (depth_ == 0) ++plain;
    return Prefers::CompleteExchange(seq, v);
  }
  std::shared_ptr<const Vec> Respond(int peer, const Eigen::Ref<const Vec>& v) override {
    if (depth_ == 0) ++plain;
    return Prefers::Respond(peer, v);
  }
  MergeResult CompleteExchangeChecked(uint64_t seq, const Eigen::Ref<const Vec>& v,
                                      size_t* first_bad) override {
    ++checked;
    ++depth_;
    const MergeResult r = PairwiseAlgorithm::CompleteExchangeChecked(seq, v, first_bad);
    --depth_;
    return r;
  }
  std::shared_ptr<const Vec> RespondChecked(int peer, const Eigen::Ref<const Vec>& v,
                                            size_t* first_bad) override {
    ++checked;
    ++depth_;
    auto r = PairwiseAlgorithm::RespondChecked(peer, v, first_bad);
    --depth_;
    return r;
  }

 private:
  int depth_ = 0;
};

// A vector is checked for NaN/Inf once. The driver uses the checked merges unless the
// wire already refused non-finite values as it copied them (the multi-payload messages of
// ASY-SONATA, DADAO, ADFS and the compressed modes), and then the plain ones, which do not scan.
TEST(ExchangeDriver, UsesThePlainMergesOnlyForVectorsTheWireChecked) {
  for (const bool wire_checked : {false, true}) {
    CountsMerges a;
    node::ExchangeTiming timing;
    timing.backoff_min_ms = 0;
    timing.backoff_max_ms = 0;
    ExchangeDriver d(&a, /*self_id=*/0, {1}, 1, timing);
    d.SetVectorsChecked(wire_checked);
    const Vec theirs = Vec::Zero(2);
    EXPECT_EQ(d.OnRequest(1, 5, theirs, 0).kind, ExchangeMessage::Kind::kReply);
    const auto offer = d.Tick(1);
    ASSERT_TRUE(offer);
    d.OnReply(1, offer->seq, theirs);
    EXPECT_EQ(a.checked, wire_checked ? 0 : 2) << "wire_checked " << wire_checked;
    EXPECT_EQ(a.plain, wire_checked ? 2 : 0) << "wire_checked " << wire_checked;
  }
}

// Which messages the wire checks as it copies them, by mode.
TEST(ExchangeWire, ChecksValuesOfMultiPayloadAndCompressedMessagesOnly) {
  PairwiseOptions plain;
  EXPECT_FALSE(node::ExchangeWire(plain, 8).ChecksValues());
  PairwiseOptions f32 = plain;
  f32.compression = "f32";
  EXPECT_FALSE(node::ExchangeWire(f32, 8).ChecksValues());
  EXPECT_TRUE(node::ExchangeWire(plain, 8, /*blocks=*/3).ChecksValues());
  PairwiseOptions lattice = plain;
  lattice.compression = "lattice:8";
  EXPECT_TRUE(node::ExchangeWire(lattice, 8).ChecksValues());
  PairwiseOptions topk = plain;
  topk.compression = "topk:2";
  EXPECT_TRUE(node::ExchangeWire(topk, 8).ChecksValues());
}

}  // namespace
}  // namespace starling
