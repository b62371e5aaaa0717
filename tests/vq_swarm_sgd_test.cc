// SwarmSGD with vqSGD's cross-polytope quantizer (`--compression vq:S`, algorithms/pairwise/
// vq_swarm_sgd.h) and its wire form (node/drivers/exchange_wire.h): the invariant the merge
// claims (every merge conserves the sum of models; both sides add the same q to the copies),
// q recomputed from a message by the formula, convergence, checkpoints, and the packed payload
// with what a receiver must refuse. Also CHOCO-SGD's vq messages: their round wire form
// (node/drivers/vector_wire.h) and a checkpoint that redraws the same message.
#include "algorithms/pairwise/vq_swarm_sgd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "algorithms/compression/compression_spec.h"
#include "algorithms/compression/cross_polytope_quantizer.h"
#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/round/choco_sgd.h"
#include "net/payload.h"
#include "node/drivers/exchange_wire.h"
#include "node/drivers/vector_wire.h"
#include "node/sim/pairwise_simulator.h"
#include "tests/fake_quadratic.h"
#include "topology/generators.h"

namespace starling {
namespace {

using algorithms::VqSwarmSgd;

struct Network {
  std::vector<std::unique_ptr<testing::FakeQuadratic>> problems;
  std::vector<algorithms::NodeSetup> setups;
};

// f_i(x) = 1/2 sum_k (1 + 0.1 i) x_k^2 - (0.5 i - 1) x_k on a ring: the optimum of the sum is
// sum b / sum diag in every coordinate.
Network MakeNetwork(int n, int dim) {
  Network net;
  const topology::Graph graph = topology::Ring(n);
  std::mt19937_64 rng(9);
  std::normal_distribution<double> normal;
  for (int i = 0; i < n; ++i) {
    Vec d = Vec::Constant(dim, 1.0 + 0.1 * i), b = Vec::Constant(dim, 0.5 * i - 1.0);
    net.problems.push_back(std::make_unique<testing::FakeQuadratic>(d, b));
    algorithms::NodeSetup s;
    s.id = i;
    s.neighbors = graph.Neighbors(i);
    s.problem = net.problems.back().get();
    s.x0 = Vec::NullaryExpr(dim, [&](Eigen::Index) { return normal(rng); });
    s.seed = 31 + i;
    net.setups.push_back(s);
  }
  return net;
}

// q of a compressed message by the formula, independently of the quantizer's code:
// ||g|| sqrt(d)/S times the signed counts of the codes, divided by 1 + (d - 1)/S.
Vec QByHand(const Vec& message, int d, int samples) {
  Vec counts = Vec::Zero(d);
  for (int s = 0; s < samples; ++s) {
    const int code = static_cast<int>(message[VqSwarmSgd::kVqHeaderSize + s]);
    counts[code / 2] += code % 2 == 0 ? 1.0 : -1.0;
  }
  const double omega = (d - 1.0) / samples;
  return counts * (message[3] * std::sqrt(static_cast<double>(d)) / samples / (1.0 + omega));
}

TEST(VqSwarmSgd, EveryMergeConservesTheSumAndBothSidesAddTheSameQ) {
  const int n = 5, dim = 20, samples = 6;
  Network net = MakeNetwork(n, dim);
  algorithms::PairwiseOptions options;
  options.step = 0.1;
  options.compression = "vq:" + std::to_string(samples);
  std::vector<std::unique_ptr<algorithms::PairwiseAlgorithm>> nodes;
  Vec sum = Vec::Zero(dim);
  for (const auto& s : net.setups) {
    nodes.push_back(algorithms::MakePairwiseAlgorithm(options, s));
    sum += s.x0;
  }
  auto node = [&](int i) -> VqSwarmSgd& { return dynamic_cast<VqSwarmSgd&>(*nodes[i]); };
  // gamma = delta/2, delta = S/(d - 1 + S).
  EXPECT_DOUBLE_EQ(node(0).gamma(), 0.5 * samples / (dim - 1.0 + samples));
  std::mt19937_64 rng(4);
  uint64_t seq = 0;
  int compressed = 0;
  for (int t = 0; t < 3000; ++t) {
    const int i = static_cast<int>(rng() % n);
    const int j = net.setups[i].neighbors[rng() % net.setups[i].neighbors.size()];
    const Vec xi = nodes[i]->Model(), xj = nodes[j]->Model();
    const bool synced = t > 0 && node(j).CopyOfPeer(i).size() == dim;
    const Vec peer_copy_before = synced ? node(j).CopyOfPeer(i) : Vec();
    const Vec offer = *nodes[i]->BeginExchange(j, ++seq);
    const Vec reply = *nodes[j]->Respond(i, offer);
    ASSERT_TRUE(nodes[i]->CompleteExchange(seq, reply));
    // Both nodes of the edge hold the same copies, bit for bit.
    ASSERT_TRUE(node(i).CopyOfSelf(j) == node(j).CopyOfPeer(i)) << t;
    ASSERT_TRUE(node(i).CopyOfPeer(j) == node(j).CopyOfSelf(i)) << t;
    if (offer[0] == VqSwarmSgd::kVq) {
      ++compressed;
      ASSERT_EQ(offer.size(), VqSwarmSgd::kVqHeaderSize + samples);
      ASSERT_EQ(reply[0], VqSwarmSgd::kVq);
      // The responder added the q of the offer, as the formula computes it from the message.
      const Vec added = node(j).CopyOfPeer(i) - peer_copy_before;
      ASSERT_LT((added - QByHand(offer, dim, samples)).lpNorm<Eigen::Infinity>(),
                1e-12 * (1 + offer[3]))
          << t;
      // Each side moved by gamma (copy of the partner - copy of itself), in opposite directions.
      const Vec step_i = nodes[i]->Model() - xi, step_j = nodes[j]->Model() - xj;
      const Vec expected_i = node(i).gamma() * (node(i).CopyOfPeer(j) - node(i).CopyOfSelf(j));
      ASSERT_LT((step_i - expected_i).lpNorm<Eigen::Infinity>(), 1e-12) << t;
      ASSERT_LT((step_i + step_j).lpNorm<Eigen::Infinity>(), 1e-12) << t;
    }
    Vec now = Vec::Zero(dim);
    for (int k = 0; k < n; ++k) now += nodes[k]->Model();
    ASSERT_LT((now - sum).lpNorm<Eigen::Infinity>(), 1e-10) << t;
  }
  EXPECT_GT(compressed, 2900);
  // Pure gossip (no local steps) reaches the average.
  const Vec average = sum / n;
  for (int k = 0; k < n; ++k) {
    EXPECT_LT((nodes[k]->Model() - average).lpNorm<Eigen::Infinity>(), 1e-6) << "node " << k;
    EXPECT_EQ(nodes[k]->counters().decode_failures, 0);
  }
  // Bits: a full first exchange per edge and side, then 8 + 64 + 64 + S (1 + ceil(log2 20)).
  const int64_t merges =
      nodes[0]->counters().exchanges_initiated + nodes[0]->counters().exchanges_served;
  EXPECT_LE(nodes[0]->counters().bits_sent, 2 * (8 + 64 * dim) + merges * (8 + 64 + 64 + 6 * 6));
}

TEST(VqSwarmSgd, ConvergesToTheOptimumOfTheSum) {
  const int n = 6, dim = 8;
  Network net = MakeNetwork(n, dim);
  algorithms::PairwiseOptions options;
  options.step = 0.01;
  options.batch_size = 1;
  options.local_steps = 2;
  options.compression = "vq:4";
  node::PairwiseSimulator sim(net.setups, options, 5);
  for (int t = 0; t < 20000; ++t) sim.Activate();
  Vec diag_sum = Vec::Zero(dim), b_sum = Vec::Zero(dim), mean = Vec::Zero(dim);
  for (int i = 0; i < n; ++i) {
    diag_sum += Vec::Constant(dim, 1.0 + 0.1 * i);
    b_sum += Vec::Constant(dim, 0.5 * i - 1.0);
    mean += sim.node(i).Model() / n;
  }
  const Vec optimum = b_sum.cwiseQuotient(diag_sum);
  std::printf("vq SwarmSGD: |mean - x*| = %.3g\n", (mean - optimum).norm());
  EXPECT_LT((mean - optimum).norm(), 0.05);
  for (int i = 0; i < n; ++i) EXPECT_LT((sim.node(i).Model() - optimum).norm(), 0.3) << i;
}

TEST(VqSwarmSgd, ACheckpointRestoresTheCopiesAndTheSampleCounter) {
  Network net = MakeNetwork(3, 6);
  algorithms::PairwiseOptions options;
  options.step = 0.05;
  options.compression = "vq:3:0.2";
  auto a = algorithms::MakePairwiseAlgorithm(options, net.setups[0]);
  auto b = algorithms::MakePairwiseAlgorithm(options, net.setups[1]);
  for (uint64_t seq = 1; seq <= 5; ++seq) {
    a->LocalStep();
    const Vec offer = *a->BeginExchange(1, seq);
    ASSERT_TRUE(a->CompleteExchange(seq, *b->Respond(0, offer)));
  }
  algorithms::AlgorithmState state;
  ASSERT_TRUE(a->SaveState(&state));
  auto restored = algorithms::MakePairwiseAlgorithm(options, net.setups[0]);
  restored->LoadState(state);
  a->LocalStep();
  restored->LocalStep();
  const Vec offer = *a->BeginExchange(1, 6);
  // The same samples: the counter came back (a fresh node would draw its first message's).
  ASSERT_TRUE(offer == *restored->BeginExchange(1, 6));
  EXPECT_EQ(offer[0], VqSwarmSgd::kVq);
  // A top-k run's state is refused, and the other way round.
  auto topk_options = options;
  topk_options.compression = "topk:2";
  auto topk = algorithms::MakePairwiseAlgorithm(topk_options, net.setups[0]);
  EXPECT_THROW(topk->LoadState(state), std::invalid_argument);
}

// A compressed offer whose body is malformed (a code >= 2d, a fractional code, the wrong length:
// never from a checked wire, but the algorithm must not trust it) is answered as a failure:
// nothing merged on either side, the failure counted, the edge resynchronised at full precision.
TEST(VqSwarmSgd, AMalformedOfferIsAFailureNotACrash) {
  const int dim = 6;
  Network net = MakeNetwork(2, dim);
  algorithms::PairwiseOptions options;
  options.step = 0.1;
  options.compression = "vq:3";
  auto a = algorithms::MakePairwiseAlgorithm(options, net.setups[0]);
  auto b = algorithms::MakePairwiseAlgorithm(options, net.setups[1]);
  ASSERT_TRUE(a->CompleteExchange(1, *b->Respond(0, *a->BeginExchange(1, 1))));  // full: sync
  for (double bad : {2.0 * dim, 1.5, -1.0}) {
    Vec offer = *a->BeginExchange(1, 2);
    ASSERT_EQ(offer[0], VqSwarmSgd::kVq);
    offer[VqSwarmSgd::kVqHeaderSize + 1] = bad;
    const Vec before = b->Model();
    const int64_t failures = b->counters().decode_failures;
    const Vec reply = *b->Respond(0, offer);
    EXPECT_EQ(reply[0], VqSwarmSgd::kFailed) << bad;
    EXPECT_TRUE(b->Model() == before) << bad;
    EXPECT_EQ(b->counters().decode_failures, failures + 1) << bad;
    ASSERT_TRUE(a->CompleteExchange(2, reply));
    // The next offer resynchronises at full precision.
    const Vec full = *a->BeginExchange(1, 3);
    EXPECT_EQ(full[0], VqSwarmSgd::kFull);
    ASSERT_TRUE(a->CompleteExchange(3, *b->Respond(0, full)));
  }
  Vec shorter = *a->BeginExchange(1, 4);
  shorter.conservativeResize(shorter.size() - 1);
  EXPECT_EQ((*b->Respond(0, shorter))[0], VqSwarmSgd::kFailed);
}

TEST(VqSwarmSgd, SpecsAndBoundsAreChecked) {
  EXPECT_EQ(algorithms::ParseVqSpec("vq:12").samples, 12);
  EXPECT_EQ(algorithms::ParseVqSpec("vq:12:0.25").gamma, 0.25);
  for (const char* bad : {"vq:0", "vq:-3", "vq:12:0", "vq:12:1.5", "vq:", "vq:x", "vq:3:0.1:2"}) {
    EXPECT_THROW(algorithms::ParseVqSpec(bad), std::invalid_argument) << bad;
    EXPECT_THROW(algorithms::CheckCompressionSpec(bad), std::invalid_argument) << bad;
  }
  EXPECT_NO_THROW(algorithms::CheckCompressionSpec("vq:7"));
  // S above max(d, 64) would not fit the wire's bound.
  Network net = MakeNetwork(2, 6);
  algorithms::PairwiseOptions options;
  options.step = 0.1;
  options.compression = "vq:65";
  EXPECT_THROW(algorithms::MakePairwiseAlgorithm(options, net.setups[0]), std::invalid_argument);
  EXPECT_THROW(node::ExchangeWire(options, 6), std::invalid_argument);
  options.compression = "vq:64";
  EXPECT_NO_THROW(algorithms::MakePairwiseAlgorithm(options, net.setups[0]));
}

// The wire: a compressed message travels as a kCrossPolytope payload of ceil(S * bits / 8) bytes
// and comes back as the same Vec; S, codes and encodings other than the run's are refused.
TEST(VqSwarmSgd, MessagesTravelPackedAndHostilePayloadsAreRefused) {
  const int d = 37, samples = 9;  // 1 + 6 bits a code: 63 bits, 8 bytes
  algorithms::PairwiseOptions options;
  options.compression = "vq:" + std::to_string(samples);
  node::ExchangeWire wire(options, d);
  Vec message(VqSwarmSgd::kVqHeaderSize + samples);
  message[0] = VqSwarmSgd::kVq;
  message[1] = 4000000000.0;  // hashes above 2^31
  message[2] = 12345.0;
  message[3] = 0.8125;  // the norm
  std::mt19937_64 rng(3);
  for (int s = 0; s < samples; ++s) {
    message[VqSwarmSgd::kVqHeaderSize + s] = static_cast<double>(rng() % (2 * d));
  }
  net::Envelope e;
  wire.Attach(message, &e);
  ASSERT_EQ(e.payloads.size(), 1u);
  EXPECT_EQ(e.payloads[0].encoding, net::Encoding::kCrossPolytope);
  EXPECT_EQ(e.payloads[0].bytes.size(), 8u);
  EXPECT_EQ(e.payloads[0].scale, 0.8125);
  EXPECT_EQ(e.payloads[0].modulus, static_cast<uint32_t>(samples));
  net::Reject reject;
  ASSERT_TRUE(net::CheckPayload(e.payloads[0], &reject)) << reject.detail;
  Vec back;
  ASSERT_TRUE(wire.Collect(e, /*request=*/true, &back, &reject)) << reject.detail;
  EXPECT_EQ(back, message);
  // Full precision and failure answers as in the other compressed modes.
  Vec full = Vec::Zero(d + 3);
  full.tail(d).setRandom();
  wire.Attach(full, &e);
  EXPECT_EQ(e.payloads[0].encoding, net::Encoding::kFloat64);
  ASSERT_TRUE(wire.Collect(e, false, &back, &reject)) << reject.detail;
  EXPECT_EQ(back, full);

  wire.Attach(message, &e);
  const std::string codes(e.payloads[0].bytes);
  net::Envelope other = e;
  // Another S than the run's (with bytes of the right length for it).
  const std::string ten(net::CrossPolytopeBytes(d, 10), '\0');
  other.payloads[0] = net::CrossPolytopePayload(d, 0.5, 10, ten);
  EXPECT_FALSE(wire.Collect(other, true, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadField);
  // A code >= 2d: the first code's 7 bits all set (127 >= 74).
  std::string high = codes;
  high[0] = static_cast<char>(high[0] | 0x7f);
  other.payloads[0] = net::CrossPolytopePayload(d, 0.5, samples, high);
  EXPECT_FALSE(wire.Collect(other, true, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadSparse);
  // The unused top bit of the last byte (63 bits used of 64).
  std::string stray = codes;
  stray.back() = static_cast<char>(stray.back() | 0x80);
  other.payloads[0] = net::CrossPolytopePayload(d, 0.5, samples, stray);
  EXPECT_FALSE(wire.Collect(other, true, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadField);
  // A negative norm; another dimension; a top-k payload in a vq run.
  other.payloads[0] = net::CrossPolytopePayload(d, -0.5, samples, codes);
  EXPECT_FALSE(wire.Collect(other, true, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadField);
  other.payloads[0] = net::CrossPolytopePayload(d - 1, 0.5, samples, codes);
  EXPECT_FALSE(wire.Collect(other, true, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kWrongDimension);
  std::string storage;
  other.payloads[0] = net::TopKPayload(d, {1, 2}, {0.5, 0.25}, &storage);
  EXPECT_FALSE(wire.Collect(other, true, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadEncoding);
  // Runs without vq refuse cross-polytope payloads.
  node::ExchangeWire plain(algorithms::PairwiseOptions{}, d);
  EXPECT_FALSE(plain.Collect(e, true, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadEncoding);
  algorithms::PairwiseOptions topk;
  topk.compression = "topk:3";
  node::ExchangeWire topk_wire(topk, d);
  EXPECT_FALSE(topk_wire.Collect(e, true, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadEncoding);
}

// CHOCO-SGD's payload with --vq-samples is the message [norm, S codes]: the round wire packs it
// and gives the same Vec back, refusing another S, dimension, encoding or payload count; a
// checkpoint taken after some iterations redraws the same message on load.
TEST(ChocoSgdVq, MessagesTravelPackedAndACheckpointRedrawsTheSameMessage) {
  const int n = 3, dim = 10, samples = 5;
  Network net = MakeNetwork(n, dim);
  for (auto& s : net.setups) {
    s.self_weight = 1.0 / 3;
    s.neighbor_weights.assign(s.neighbors.size(), 1.0 / 3);
  }
  const algorithms::ScheduledStep step{0.05, algorithms::StepSchedule()};
  std::vector<std::unique_ptr<algorithms::ChocoSgd>> nodes;
  for (const auto& s : net.setups) {
    nodes.push_back(std::make_unique<algorithms::ChocoSgd>(s, step, 0, 0, 0.2, samples));
  }
  EXPECT_EQ(nodes[0]->OutgoingVqSamples(), samples);
  EXPECT_FALSE(nodes[0]->SparseOutgoing());
  for (int t = 0; t < 7; ++t) {
    std::vector<Vec> sent;
    for (auto& a : nodes) {
      // Every payload goes through the wire and back before a neighbour reads it.
      net::Envelope e;
      std::string storage;
      node::AttachCrossPolytope(a->Outgoing(), dim, samples, &storage, &e);
      ASSERT_EQ(e.payloads.size(), 1u);
      EXPECT_EQ(e.payloads[0].bytes.size(), (samples * 5 + 7) / 8u);  // 1 + ceil(log2 10) bits
      Vec back;
      net::Reject reject;
      ASSERT_TRUE(node::CollectCrossPolytope(e, dim, samples, &back, &reject)) << reject.detail;
      ASSERT_TRUE(back == a->Outgoing());
      sent.push_back(back);
    }
    for (int i = 0; i < n; ++i) {
      std::vector<const Vec*> inbox;
      for (int j : net.setups[i].neighbors) inbox.push_back(&sent[j]);
      nodes[i]->Advance(inbox);
    }
  }
  algorithms::AlgorithmState state;
  ASSERT_TRUE(nodes[0]->SaveState(&state));
  algorithms::ChocoSgd restored(net.setups[0], step, 0, 0, 0.2, samples);
  ASSERT_FALSE(restored.Outgoing() == nodes[0]->Outgoing());  // iteration 0's message
  restored.LoadState(state);
  EXPECT_TRUE(restored.Outgoing() == nodes[0]->Outgoing());

  // What a receiver refuses.
  net::Envelope e;
  std::string storage;
  node::AttachCrossPolytope(nodes[0]->Outgoing(), dim, samples, &storage, &e);
  Vec back;
  net::Reject reject;
  EXPECT_FALSE(node::CollectCrossPolytope(e, dim, samples + 1, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadField);  // a valid S, not the run's
  EXPECT_FALSE(node::CollectCrossPolytope(e, dim + 1, samples, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kWrongDimension);
  const std::string six(net::CrossPolytopeBytes(dim, 6), '\0');
  net::Envelope other = e;
  other.payloads[0] = net::CrossPolytopePayload(dim, 1.0, 6, six);
  EXPECT_FALSE(node::CollectCrossPolytope(other, dim, samples, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadField);
  other.payloads = {e.payloads[0], e.payloads[0]};
  EXPECT_FALSE(node::CollectCrossPolytope(other, dim, samples, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadPayloadCount);
  const Vec x = Vec::Ones(dim);
  other.payloads = {net::Float64Payload(x.data(), dim)};
  EXPECT_FALSE(node::CollectCrossPolytope(other, dim, samples, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadEncoding);
  // And a run that does not send vq messages refuses them.
  EXPECT_FALSE(node::CollectVectors(e, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadEncoding);
}

}  // namespace
}  // namespace starling
