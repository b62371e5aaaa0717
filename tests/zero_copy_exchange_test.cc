// The daemon's plain SwarmSGD exchange path without copies: the algorithm hands out
// its offer and reply as shared vectors it never changes while they are held, the daemon sends
// them with themselves as the transport's keepalive (ExchangeWire::Attach), and the receiver
// reads the frame in place (ExchangeWire::Collect), whose NaN/Inf the merge checks.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/pairwise/quantized_swarm_sgd.h"
#include "algorithms/pairwise/snapshot_pool.h"
#include "net/codec.h"
#include "net/envelope.h"
#include "net/fault_plan.h"
#include "net/faulty_transport.h"
#include "net/payload.h"
#include "net/reject.h"
#include "net/transport.h"
#include "node/drivers/exchange_driver.h"
#include "node/drivers/exchange_wire.h"
#include "tests/fake_quadratic.h"

namespace starling {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

Vec Random(int dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Vec v(dim);
  for (int k = 0; k < dim; ++k) v[k] = u(rng);
  return v;
}

TEST(SnapshotPool, NeverHandsOutAVectorSomeoneHoldsAndReusesReleasedOnes) {
  algorithms::SnapshotPool pool(2);
  std::shared_ptr<Vec> a = pool.Take();
  *a = Vec::Constant(4, 1.0);
  std::shared_ptr<const Vec> held = a;  // e.g. ZeroMQ, until it has sent the bytes
  const Vec* a_raw = a.get();
  a.reset();
  std::shared_ptr<Vec> b = pool.Take();
  EXPECT_NE(b.get(), a_raw);
  *b = Vec::Constant(4, 2.0);
  EXPECT_EQ(*held, Vec::Constant(4, 1.0));
  b.reset();
  held.reset();
  // Both are free again: the first one comes back, its storage reused.
  EXPECT_EQ(pool.Take().get(), a_raw);
  // Beyond max_pooled, vectors in use are allocated on their own and not kept.
  auto x = pool.Take(), y = pool.Take(), z = pool.Take();
  EXPECT_EQ(pool.pooled(), 2u);
  EXPECT_NE(z.get(), x.get());
  EXPECT_NE(z.get(), y.get());
}

algorithms::NodeSetup SetupOf(int id, const algorithms::Problem* problem, int dim) {
  algorithms::NodeSetup s;
  s.id = id;
  s.neighbors = {1 - id};
  s.problem = problem;
  s.x0 = Random(dim, 10 + id);
  s.seed = 5 + id;
  return s;
}

algorithms::PairwiseOptions Swarm() {
  algorithms::PairwiseOptions o;
  o.step = 0.1;
  o.batch_size = 1;
  o.local_steps = 1;
  return o;
}

// A message the algorithm handed out stays as it was while it is held, through local steps,
// replies and further offers; once released its storage is reused for the next one.
TEST(SwarmSgdMessages, AHeldMessageNeverChanges) {
  constexpr int kDim = 8;
  testing::FakeQuadratic problem(Vec::Constant(kDim, 1.0), Vec::Constant(kDim, 0.5));
  auto a = algorithms::MakePairwiseAlgorithm(Swarm(), SetupOf(0, &problem, kDim));
  auto b = algorithms::MakePairwiseAlgorithm(Swarm(), SetupOf(1, &problem, kDim));
  a->LocalStep();
  std::shared_ptr<const Vec> offer = a->BeginExchange(1, 1);
  const Vec offer_value = *offer;
  EXPECT_EQ(offer_value, a->Model());
  std::shared_ptr<const Vec> reply = b->Respond(0, *offer);
  const Vec reply_value = *reply;
  ASSERT_TRUE(a->CompleteExchange(1, *reply));
  // More steps, replies and offers on both sides while both messages are held.
  for (uint64_t seq = 2; seq < 6; ++seq) {
    a->LocalStep();
    b->LocalStep();
    auto next = a->BeginExchange(1, seq);
    EXPECT_NE(next.get(), offer.get());
    auto next_reply = b->Respond(0, *next);
    EXPECT_NE(next_reply.get(), reply.get());
    ASSERT_TRUE(a->CompleteExchange(seq, *next_reply));
  }
  EXPECT_EQ(*offer, offer_value);
  EXPECT_EQ(*reply, reply_value);
  const Vec* offer_raw = offer.get();
  offer.reset();
  reply.reset();
  // Released (and its offer finished): the pool hands the same storage out again.
  bool reused = false;
  for (uint64_t seq = 6; seq < 12 && !reused; ++seq) {
    a->LocalStep();
    auto next = a->BeginExchange(1, seq);
    reused = next.get() == offer_raw;
    ASSERT_TRUE(a->CompleteExchange(seq, *b->Respond(0, *next)));
  }
  EXPECT_TRUE(reused);
}

net::Envelope RequestViewing(const double* values, uint32_t dim) {
  net::Envelope e;
  e.type = net::MessageType::kXchgReq;
  e.exchange_seq = 1;
  e.payloads = {net::Float64Payload(values, dim)};
  return e;
}

TEST(ExchangeWire, PlainAttachSendsTheMessageItselfAndCollectViewsTheBytes) {
  constexpr int kDim = 1000;  // 8000 bytes: a payload frame of its own
  node::ExchangeWire wire(algorithms::PairwiseOptions{}, kDim);
  auto message = std::make_shared<const Vec>(Random(kDim, 1));
  net::Envelope e;
  e.type = net::MessageType::kXchgReq;
  const std::shared_ptr<const void> keepalive = wire.Attach(message, &e);
  // The payload views the algorithm's vector, which the keepalive owns: Send copies nothing.
  EXPECT_EQ(keepalive.get(), static_cast<const void*>(message.get()));
  ASSERT_EQ(e.payloads.size(), 1u);
  EXPECT_EQ(e.payloads[0].bytes.data(), reinterpret_cast<const char*>(message->data()));
  EXPECT_EQ(e.payloads[0].bytes.size(), 8u * kDim);

  // Received bytes, aligned as a frame of their own is: viewed in place, not copied.
  std::vector<double> frame(message->data(), message->data() + kDim);
  net::Reject reject;
  const std::optional<Eigen::Map<const Vec>> view =
      wire.Collect(RequestViewing(frame.data(), kDim), /*request=*/true, &reject);
  ASSERT_TRUE(view) << reject.detail;
  EXPECT_EQ(view->data(), frame.data());
  EXPECT_EQ(*view, *message);
  // The copying form still returns the values.
  Vec copy;
  ASSERT_TRUE(wire.Collect(RequestViewing(frame.data(), kDim), true, &copy, &reject));
  EXPECT_EQ(copy, *message);

  // NaN/Inf are the merge's to refuse (ExchangeDriver calls the checked merges,
  // checked_merge_test.cc): the view passes them on, still in place, without a scan.
  frame[kDim / 3] = kNaN;
  const std::optional<Eigen::Map<const Vec>> unchecked =
      wire.Collect(RequestViewing(frame.data(), kDim), /*request=*/true, &reject);
  ASSERT_TRUE(unchecked) << reject.detail;
  EXPECT_EQ(unchecked->data(), frame.data());
  EXPECT_FALSE(unchecked->allFinite());
  frame[kDim / 3] = 0.0;
  // Every other check stays: dimension, encoding, payload count.
  EXPECT_FALSE(wire.Collect(RequestViewing(frame.data(), kDim - 1), true, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kWrongDimension);
  net::Envelope two = RequestViewing(frame.data(), kDim);
  two.payloads.push_back(two.payloads[0]);
  EXPECT_FALSE(wire.Collect(two, true, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadPayloadCount);
  // Every encoding a plain run does not send is refused, never read: lattice, cross-polytope and
  // range codes (quantized gossip's, sent to a pairwise run), each valid in itself.
  const std::string codes(net::RangeCodesBytes(kDim, 3), '\0');
  ASSERT_EQ(net::LatticeBytes(kDim, 8), codes.size());
  const std::string cp(net::CrossPolytopeBytes(kDim, 2), '\0');
  for (const net::Payload& p :
       {net::RangeCodesPayload(kDim, 1.0, 3, codes), net::LatticePayload(kDim, 1.0, 8, codes),
        net::CrossPolytopePayload(kDim, 1.0, 2, cp)}) {
    net::Envelope other = RequestViewing(frame.data(), kDim);
    other.payloads = {p};
    EXPECT_FALSE(wire.Collect(other, true, &reject)) << net::EncodingName(p.encoding);
    EXPECT_EQ(reject.reason, net::RejectReason::kBadEncoding) << net::EncodingName(p.encoding);
  }

  // Unaligned bytes (e.g. a small payload inside the header frame) are converted, correctly.
  std::vector<char> unaligned(8 * kDim + 1);
  std::memcpy(unaligned.data() + 1, message->data(), 8 * kDim);
  net::Envelope odd = RequestViewing(message->data(), kDim);
  odd.payloads[0].bytes = std::string_view(unaligned.data() + 1, 8 * kDim);
  const auto converted = wire.Collect(odd, true, &reject);
  ASSERT_TRUE(converted) << reject.detail;
  EXPECT_NE(static_cast<const void*>(converted->data()), unaligned.data() + 1);
  EXPECT_EQ(*converted, *message);
}

TEST(ExchangeWire, CompressedModesKeepOnlyFullPrecisionMessagesAlive) {
  constexpr int kDim = 600;
  algorithms::PairwiseOptions lattice;
  lattice.compression = "lattice:8:0.01";
  node::ExchangeWire wire(lattice, kDim);
  auto full = std::make_shared<Vec>(Vec::Zero(kDim + 3));
  full->tail(kDim) = Random(kDim, 2);
  (*full)[0] = algorithms::QuantizedSwarmSgd::kFull;
  net::Envelope e;
  std::shared_ptr<const Vec> full_message = full;
  EXPECT_EQ(wire.Attach(full_message, &e).get(), static_cast<const void*>(full.get()));
  ASSERT_EQ(e.payloads.size(), 1u);
  EXPECT_EQ(e.payloads[0].bytes.data(), reinterpret_cast<const char*>(full->data() + 3));
  // Lattice codes are packed into the wire's storage: nothing of the message to keep alive.
  auto codes = std::make_shared<Vec>(Vec::Zero(kDim + 3));
  (*codes)[0] = algorithms::QuantizedSwarmSgd::kLattice;
  std::shared_ptr<const Vec> codes_message = codes;
  EXPECT_EQ(wire.Attach(codes_message, &e), nullptr);
  ASSERT_EQ(e.payloads.size(), 1u);
  EXPECT_EQ(e.payloads[0].encoding, net::Encoding::kLattice);
}

net::TransportOptions OptionsFor(int32_t self, int dim) {
  net::TransportOptions o;
  o.self_id = self;
  o.bind_endpoint = "inproc://zero-copy-exchange-" + std::to_string(self);
  o.peers = {{1 - self, "inproc://zero-copy-exchange-" + std::to_string(1 - self)}};
  o.run_id = net::RunIdOf("zero-copy-exchange-test");
  o.dim = static_cast<uint32_t>(dim);
  o.limits = net::LimitsForRun(static_cast<uint32_t>(dim), 4);
  o.heartbeat_interval = std::chrono::milliseconds(50);
  return o;
}

// One node as the daemon's pairwise loop wires it (node/daemon/daemon.cc, Node::RunPairwise): the
// algorithm under an ExchangeDriver, messages attached by ExchangeWire and sent through a
// FaultyTransport with the message as keepalive; received ones collected as views and handed
// to the driver inside the transport's handler. `received_at` records where each received
// message's values were read from.
struct TestNode {
  TestNode(zmq::context_t* context, int id, const algorithms::Problem* problem, int dim,
           const net::FaultPlan& plan)
      : transport(context, OptionsFor(id, dim)),
        faulty(&transport, plan, id),
        algorithm(algorithms::MakePairwiseAlgorithm(Swarm(), SetupOf(id, problem, dim))),
        driver(algorithm.get(), id, {1 - id}, 99 + id),
        wire(Swarm(), dim) {
    driver.SetRejectSink([this](int peer, const net::Reject& reject) {
      refused_from.push_back(peer);
      transport.ReportReject(peer, reject);
    });
  }

  void Send(const node::ExchangeMessage& m) {
    if (m.kind == node::ExchangeMessage::Kind::kRefused) return;  // no answer
    net::Envelope out;
    out.type = m.kind == node::ExchangeMessage::Kind::kRequest ? net::MessageType::kXchgReq
                                                               : net::MessageType::kXchgRep;
    out.exchange_seq = m.seq;
    sent.push_back(m.payload);
    ASSERT_TRUE(faulty.Send(m.peer, out, wire.Attach(m.payload, &out)));
  }
  void Handle(int32_t peer, const net::Envelope& e) {
    if (e.type != net::MessageType::kXchgReq && e.type != net::MessageType::kXchgRep) return;
    net::Reject reject;
    const std::optional<Eigen::Map<const Vec>> incoming =
        wire.Collect(e, e.type == net::MessageType::kXchgReq, &reject);
    if (!incoming) {
      transport.ReportReject(peer, reject);
      return;
    }
    received_at.push_back(incoming->data());
    if (e.type == net::MessageType::kXchgReq) {
      Send(driver.OnRequest(peer, e.exchange_seq, *incoming, 0));
    } else {
      driver.OnReply(peer, e.exchange_seq, *incoming);
    }
  }
  void Poll() {
    transport.Poll(std::chrono::milliseconds(2),
                   [this](int32_t peer, const net::Envelope& e) { Handle(peer, e); });
    faulty.Flush();
    transport.Tick();
  }

  net::Transport transport;
  net::FaultyTransport faulty;
  std::unique_ptr<algorithms::PairwiseAlgorithm> algorithm;
  node::ExchangeDriver driver;
  node::ExchangeWire wire;
  std::vector<std::shared_ptr<const Vec>> sent;  // held, so their storage is not reused
  std::vector<const double*> received_at;
  std::vector<int> refused_from;  // senders of vectors the merge refused
};

// Over inproc ZeroMQ hands a message's frames from one socket to the other without copying
// them, so a frame the receiver reads is the sender's buffer itself only if neither side copied:
// the receiver's view must point into the sender's snapshot. A pooled copy on the send side
// (no keepalive), a deep copy in the FaultyTransport, or a conversion into a Vec on the receive
// side each makes the pointers differ.
void ExchangeWithoutCopies(const net::FaultPlan& plan) {
  constexpr int kDim = 20000;  // 160 KB per message
  testing::FakeQuadratic problem(Vec::Constant(kDim, 1.0), Vec::Constant(kDim, 0.5));
  zmq::context_t context(1);
  TestNode n0(&context, 0, &problem, kDim, plan);
  TestNode n1(&context, 1, &problem, kDim, plan);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!(n0.transport.peer(1).accepted_us && n1.transport.peer(0).accepted_us)) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "no handshake";
    n0.Poll();
    n1.Poll();
  }
  n0.algorithm->LocalStep();
  std::optional<node::ExchangeMessage> request = n0.driver.Tick(0);
  ASSERT_TRUE(request && request->payload);
  n0.Send(*request);
  while (n0.algorithm->counters().exchanges_initiated < 1) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the exchange did not complete";
    n0.Poll();
    n1.Poll();
  }
  ASSERT_EQ(n1.received_at.size(), 1u);
  ASSERT_EQ(n0.received_at.size(), 1u);
  ASSERT_EQ(n1.sent.size(), 1u);
  EXPECT_EQ(n1.received_at[0], n0.sent[0]->data()) << "the offer was copied on its way";
  EXPECT_EQ(n0.received_at[0], n1.sent[0]->data()) << "the reply was copied on its way";
  EXPECT_EQ(n1.algorithm->counters().exchanges_served, 1);
  // The exchange itself: neither node stepped since its snapshot, so both now hold the average.
  const Vec average = 0.5 * (*n0.sent[0] + *n1.sent[0]);
  EXPECT_LT((n0.algorithm->Model() - average).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((n1.algorithm->Model() - average).cwiseAbs().maxCoeff(), 1e-12);

  // A request with a NaN reaches the merge in place (no scan on the way), which refuses it: the
  // model stays bit for bit, and the reject is counted by the transport, naming the sender.
  auto bad = std::make_shared<Vec>(n0.algorithm->Model());
  (*bad)[kDim / 2] = kNaN;
  const Vec before = n1.algorithm->Model();
  n0.Send({node::ExchangeMessage::Kind::kRequest, 1, 12345, bad});
  while (n1.transport.rejects().count(net::RejectReason::kNonFinite) < 1) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the NaN request did not arrive";
    n0.Poll();
    n1.Poll();
  }
  EXPECT_EQ(n1.transport.rejects().count(net::RejectReason::kNonFinite), 1u);
  EXPECT_EQ(n1.refused_from, std::vector<int>{0});
  EXPECT_EQ(n1.driver.merge_rejects(), 1);
  EXPECT_EQ(n1.algorithm->counters().exchanges_served, 1);
  EXPECT_EQ(std::memcmp(n1.algorithm->Model().data(), before.data(), sizeof(double) * kDim), 0);
  ASSERT_EQ(n1.received_at.size(), 2u);
  EXPECT_EQ(n1.received_at[1], bad->data()) << "the bad request was copied on its way";
}

TEST(ZeroCopyExchange, OfferAndReplyArriveAsTheSendersOwnBytes) {
  ExchangeWithoutCopies(net::FaultPlan{});
}

// Delayed messages wait in the FaultyTransport holding the keepalive, not a copy.
TEST(ZeroCopyExchange, DelayedMessagesAreNotCopiedEither) {
  net::FaultPlan plan;
  plan.defaults.delay = 5;  // milliseconds
  ExchangeWithoutCopies(plan);
}

}  // namespace
}  // namespace starling
