// Compression building blocks: the lattice quantizer's exact-decoding
// condition, lattice-quantized SwarmSGD (same points averaged on both sides, failures detected
// and retried at full precision), and CHOCO-SGD with top-k and public copies.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "algorithms/compression/compression_spec.h"
#include "algorithms/compression/float32_rounding.h"
#include "algorithms/compression/lattice_quantizer.h"
#include "algorithms/pairwise/quantized_swarm_sgd.h"
#include "algorithms/pairwise/sparse_swarm_sgd.h"
#include "algorithms/round/round_algorithm.h"
#include "net/payload.h"
#include "node/config/run_setup.h"
#include "node/drivers/exchange_wire.h"
#include "node/drivers/vector_wire.h"
#include "node/sim/pairwise_simulator.h"
#include "node/sim/round_simulator.h"
#include "tests/fake_quadratic.h"
#include "topology/generators.h"
#include "topology/mixing.h"

namespace starling {
namespace {

using algorithms::LatticeQuantizer;

// Decoding returns s round(x/s + u) - s u whenever |that point - b| < q s / 2 in every
// coordinate, and the hash tells when it did not.
TEST(LatticeQuantizer, DecodesExactlyInsideTheRadiusAndDetectsFailureOutside) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal;
  for (int bits : {2, 4, 8}) {
    const LatticeQuantizer q(bits, 1e-3);
    const double radius = q.modulus() * q.scale() / 2;
    int inside = 0, outside = 0;
    for (int trial = 0; trial < 400; ++trial) {
      const int d = 50;
      Vec x(d), b(d), u;
      for (int k = 0; k < d; ++k) x[k] = 3 * normal(rng);
      // References at distances from well inside to well outside the radius.
      const double spread = radius * (trial % 8) / 4.0;
      for (int k = 0; k < d; ++k)
        b[k] = x[k] + spread * (2 * (rng() % 2) - 1.0) * (rng() % 100) / 100.0;
      LatticeQuantizer::Dither(1000 + trial, d, &u);
      std::vector<int64_t> n;
      std::vector<uint32_t> codes;
      Vec point, decoded;
      const uint32_t hash = q.Encode(x, u, &n, &codes, &point);
      EXPECT_LE((point - x).lpNorm<Eigen::Infinity>(), q.scale() / 2 + 1e-15);
      for (uint32_t c : codes) ASSERT_LT(c, static_cast<uint32_t>(q.modulus()));
      const uint32_t got = q.Decode(codes, b, u, &decoded);
      // The exact condition on the integers: |n - (b/s + u)| < q/2 in every coordinate.
      bool exact_condition = true;
      for (int k = 0; k < d; ++k) {
        exact_condition &= std::abs(n[k] - (b[k] / q.scale() + u[k])) < q.modulus() / 2.0 - 1e-9;
      }
      if (exact_condition) {
        ++inside;
        EXPECT_EQ(got, hash);
        EXPECT_EQ(decoded, point);
      } else if ((decoded - point).lpNorm<Eigen::Infinity>() > 0) {
        ++outside;
        EXPECT_NE(got, hash) << "a wrong decoding must show in the hash";
      }
    }
    EXPECT_GT(inside, 100) << bits;
    EXPECT_GT(outside, 20) << bits;
  }
}

// A failed decoding is off by a multiple of q = 2^bits in some coordinates: the hash must see a
// change in any one coordinate, by q or by a high bit, wherever it is (every lane), and codes
// must be n mod q for negative n too.
TEST(LatticeQuantizer, HashSeesAnyOneCoordinateOffByAMultipleOfQ) {
  std::mt19937_64 rng(9);
  std::vector<int64_t> n(1001);
  for (int64_t& v : n) v = static_cast<int64_t>(rng() % 2001) - 1000;
  const uint32_t base = LatticeQuantizer::Hash(n);
  int changes = 0;
  for (size_t k = 0; k < n.size(); k += 7) {
    for (int64_t delta : {int64_t{256}, int64_t{-65536}, int64_t{1} << 40, INT64_MIN}) {
      std::vector<int64_t> m = n;
      // In uint64_t: wraps instead of overflowing (INT64_MIN + a negative n is undefined).
      m[k] = static_cast<int64_t>(static_cast<uint64_t>(m[k]) + static_cast<uint64_t>(delta));
      EXPECT_NE(LatticeQuantizer::Hash(m), base) << "coordinate " << k << " delta " << delta;
      ++changes;
    }
  }
  EXPECT_GT(changes, 500);
  // Swapping two coordinates must show too (the hash depends on positions).
  std::vector<int64_t> swapped = n;
  std::swap(swapped[3], swapped[500]);
  ASSERT_NE(n[3], n[500]);
  EXPECT_NE(LatticeQuantizer::Hash(swapped), base);

  const LatticeQuantizer q(4, 1.0);
  Vec x(4), u = Vec::Zero(4), point;
  x << -17.0, -1.0, 0.0, 33.0;
  std::vector<int64_t> ints;
  std::vector<uint32_t> codes;
  q.Encode(x, u, &ints, &codes, &point);
  EXPECT_EQ(codes, (std::vector<uint32_t>{15, 15, 0, 1}));  // -17 = -2*16 + 15, 33 = 2*16 + 1
}

TEST(LatticeQuantizer, DitheredQuantizationIsUnbiased) {
  const LatticeQuantizer q(8, 0.1);
  Vec x = Vec::Constant(1, 0.0337), u, point;
  std::vector<int64_t> n;
  std::vector<uint32_t> codes;
  double sum = 0.0;
  const int trials = 20000;
  for (int t = 0; t < trials; ++t) {
    LatticeQuantizer::Dither(t, 1, &u);
    q.Encode(x, u, &n, &codes, &point);
    sum += point[0];
  }
  // Standard error of the mean: 0.1/sqrt(12 * 20000) ~ 2e-4.
  EXPECT_NEAR(sum / trials, 0.0337, 1e-3);
}

struct PairwiseNetwork {
  std::vector<std::unique_ptr<testing::FakeQuadratic>> problems;
  std::vector<algorithms::NodeSetup> setups;
};

PairwiseNetwork MakePairwise(int n, int dim, double spread) {
  PairwiseNetwork net;
  const topology::Graph graph = topology::Ring(n);
  for (int i = 0; i < n; ++i) {
    Vec d = Vec::Constant(dim, 1.0 + 0.1 * i), b = Vec::Constant(dim, 0.5 * i - 1.0);
    net.problems.push_back(std::make_unique<testing::FakeQuadratic>(d, b));
    algorithms::NodeSetup s;
    s.id = i;
    s.neighbors = graph.Neighbors(i);
    s.problem = net.problems.back().get();
    s.x0 = Vec::Constant(dim, spread * i);
    s.seed = 31 + i;
    net.setups.push_back(s);
  }
  return net;
}

Vec SumOfModels(const node::PairwiseSimulator& sim) {
  Vec sum = Vec::Zero(sim.node(0).Model().size());
  for (int i = 0; i < sim.num_nodes(); ++i) sum += sim.node(i).Model();
  return sum;
}

// An exchange moves the sum of models only by the quantization error (at most s per coordinate
// per side), both sides merging the same lattice points; with a lattice too coarse for the
// models' spread every exchange fails, nothing is merged, and the retry goes at full precision.
TEST(QuantizedSwarmSgd, ExchangesAverageTheSamePointsAndFailuresFallBack) {
  algorithms::PairwiseOptions options;
  options.step = 1e-3;
  options.batch_size = 1;
  options.local_steps = 1;
  options.compression = "lattice:8:1e-3";
  {
    PairwiseNetwork net = MakePairwise(6, 4, 0.01);  // spread well inside q s / 2 = 0.128
    node::PairwiseSimulator sim(net.setups, options, 3);
    for (int t = 0; t < 300; ++t) {
      const Vec before = SumOfModels(sim);
      // One activation: local steps move the sum by -step * sum of gradients; the exchange by
      // at most 2 * s/2 per coordinate. Bound both.
      sim.Activate();
      const Vec after = SumOfModels(sim);
      EXPECT_LT((after - before).lpNorm<Eigen::Infinity>(), 1e-3 + 0.1) << t;
    }
    int64_t failures = 0, merged = 0;
    for (int i = 0; i < 6; ++i) {
      failures += sim.node(i).counters().decode_failures;
      merged += sim.node(i).counters().exchanges_initiated;
    }
    EXPECT_EQ(failures, 0);
    EXPECT_GT(merged, 100);
    // 8 bits per coordinate plus a 72-bit header, not 64 per coordinate.
    EXPECT_LT(sim.bytes_sent(), merged * 2 * (8 * 4 + 72) / 8 + 1);
  }
  {
    options.compression = "lattice:2:1e-4";  // q s / 2 = 2e-4, far below the spread of 1.0
    PairwiseNetwork net = MakePairwise(4, 3, 1.0);
    node::PairwiseSimulator sim(net.setups, options, 4);
    for (int t = 0; t < 200; ++t) sim.Activate();
    int64_t failures = 0, full = 0, merged = 0;
    for (int i = 0; i < 4; ++i) {
      const auto& q = dynamic_cast<const algorithms::QuantizedSwarmSgd&>(sim.node(i));
      failures += q.decode_failures();
      full += q.full_precision_offers();
      merged += sim.node(i).counters().exchanges_initiated;
    }
    EXPECT_GT(failures, 0);
    EXPECT_GT(full, 0);
    // The full-precision retries still average the models: they end close together.
    EXPECT_GT(merged, 0);
    double spread = 0.0;
    for (int i = 1; i < 4; ++i)
      spread = std::max(spread, (sim.node(i).Model() - sim.node(0).Model()).norm());
    EXPECT_LT(spread, 0.5);
  }
}

// A reply whose hash does not match what it decodes to comes from a faulty peer: nothing is
// merged, the failure is counted and the next offer goes at full precision; nothing throws.
TEST(QuantizedSwarmSgd, AReplyWithAWrongHashIsAFailureNotACrash) {
  algorithms::PairwiseOptions options;
  options.step = 1e-3;
  options.compression = "lattice:8:1e-3";
  PairwiseNetwork net = MakePairwise(2, 4, 0.01);
  auto a = algorithms::MakePairwiseAlgorithm(options, net.setups[0]);
  auto b = algorithms::MakePairwiseAlgorithm(options, net.setups[1]);
  const Vec offer = *a->BeginExchange(1, 1);
  Vec reply = *b->Respond(0, offer);
  ASSERT_EQ(reply[0], algorithms::QuantizedSwarmSgd::kLattice);
  reply[1] = static_cast<double>(static_cast<uint32_t>(reply[1]) ^ 1u);
  const Vec before = a->Model();
  EXPECT_TRUE(a->CompleteExchange(1, reply));
  EXPECT_EQ(a->Model(), before);
  EXPECT_EQ(a->counters().decode_failures, 1);
  EXPECT_EQ(a->counters().exchanges_initiated, 0);
  EXPECT_EQ((*a->BeginExchange(1, 2))[0], algorithms::QuantizedSwarmSgd::kFull);
}

// Top-k SwarmSGD without local steps: exchanges alone must conserve the sum of models (both sides
// apply opposite changes computed from the same public copies), keep each edge's copies equal on
// its two nodes bit for bit, and, because what top-k leaves out is sent later (error feedback),
// bring every model to the initial average although each message carries 3 of 20 entries.
TEST(SparseSwarmSgd, ExchangesConserveTheSumKeepCopiesEqualAndReachTheAverage) {
  const int n = 5, dim = 20;
  PairwiseNetwork net = MakePairwise(n, dim, 0.0);
  std::mt19937_64 rng(9);
  std::normal_distribution<double> normal;
  for (auto& s : net.setups) {
    s.x0 = Vec::NullaryExpr(dim, [&](Eigen::Index) { return normal(rng); });
  }
  algorithms::PairwiseOptions options;
  options.step = 0.1;
  options.compression = "topk:3";  // gamma = k/d = 0.15
  std::vector<std::unique_ptr<algorithms::PairwiseAlgorithm>> nodes;
  Vec sum = Vec::Zero(dim);
  for (const auto& s : net.setups) {
    nodes.push_back(algorithms::MakePairwiseAlgorithm(options, s));
    sum += s.x0;
  }
  auto node = [&](int i) -> algorithms::SparseSwarmSgd& {
    return dynamic_cast<algorithms::SparseSwarmSgd&>(*nodes[i]);
  };
  uint64_t seq = 0;
  for (int t = 0; t < 4000; ++t) {
    const int i = static_cast<int>(rng() % n);
    const int j = net.setups[i].neighbors[rng() % net.setups[i].neighbors.size()];
    const Vec offer = *nodes[i]->BeginExchange(j, ++seq);
    const Vec reply = *nodes[j]->Respond(i, offer);
    ASSERT_TRUE(nodes[i]->CompleteExchange(seq, reply));
    ASSERT_TRUE(node(i).CopyOfSelf(j) == node(j).CopyOfPeer(i)) << t;
    ASSERT_TRUE(node(i).CopyOfPeer(j) == node(j).CopyOfSelf(i)) << t;
    Vec now = Vec::Zero(dim);
    for (int k = 0; k < n; ++k) now += nodes[k]->Model();
    ASSERT_LT((now - sum).lpNorm<Eigen::Infinity>(), 1e-12) << t;
  }
  const Vec average = sum / n;
  for (int k = 0; k < n; ++k) {
    EXPECT_LT((nodes[k]->Model() - average).lpNorm<Eigen::Infinity>(), 1e-9) << "node " << k;
    EXPECT_EQ(nodes[k]->counters().decode_failures, 0);
  }
  // The first exchange of each edge goes at full precision, the others as 3 entries.
  const int64_t bits = nodes[0]->counters().bits_sent;
  const int64_t merges =
      nodes[0]->counters().exchanges_initiated + nodes[0]->counters().exchanges_served;
  EXPECT_LT(bits, 2 * (8 + 64 * dim) + merges * (8 + 64 + 3 * 96));
}

// A lost reply leaves the responder's copies one update ahead of the initiator's. The next sparse
// offer on that edge must be refused (hash mismatch) rather than averaged with wrong values;
// both sides count the failure, the edge resynchronises at full precision, and its copies agree
// again. An offer to a node that is not a neighbour is a local bug and throws.
TEST(SparseSwarmSgd, DisagreeingCopiesAreDetectedAndResynchronised) {
  PairwiseNetwork net = MakePairwise(3, 6, 0.3);
  algorithms::PairwiseOptions options;
  options.step = 0.05;
  options.compression = "topk:2";
  auto a = algorithms::MakePairwiseAlgorithm(options, net.setups[0]);
  auto b = algorithms::MakePairwiseAlgorithm(options, net.setups[1]);
  auto& sa = dynamic_cast<algorithms::SparseSwarmSgd&>(*a);
  auto& sb = dynamic_cast<algorithms::SparseSwarmSgd&>(*b);
  auto exchange = [&](uint64_t seq) {
    a->LocalStep();
    b->LocalStep();
    const Vec offer = *a->BeginExchange(1, seq);
    return std::make_pair(offer[0], *b->Respond(0, offer));
  };
  auto [tag1, reply1] = exchange(1);
  EXPECT_EQ(tag1, algorithms::SparseSwarmSgd::kFull);  // a new edge starts at full precision
  ASSERT_TRUE(a->CompleteExchange(1, reply1));
  auto [tag2, reply2] = exchange(2);
  EXPECT_EQ(tag2, algorithms::SparseSwarmSgd::kSparse);
  a->AbortExchange(/*may_still_reply=*/false);  // the reply is lost
  (void)reply2;
  auto [tag3, reply3] = exchange(3);
  EXPECT_EQ(tag3, algorithms::SparseSwarmSgd::kSparse);
  EXPECT_EQ(reply3[0], algorithms::SparseSwarmSgd::kFailed);
  const Vec before = a->Model();
  ASSERT_TRUE(a->CompleteExchange(3, reply3));
  EXPECT_EQ(a->Model(), before);
  EXPECT_EQ(a->counters().decode_failures, 1);
  EXPECT_EQ(b->counters().decode_failures, 1);
  auto [tag4, reply4] = exchange(4);
  EXPECT_EQ(tag4, algorithms::SparseSwarmSgd::kFull);
  ASSERT_TRUE(a->CompleteExchange(4, reply4));
  EXPECT_TRUE(sa.CopyOfSelf(1) == sb.CopyOfPeer(0));
  EXPECT_TRUE(sa.CopyOfPeer(1) == sb.CopyOfSelf(0));
  auto [tag5, reply5] = exchange(5);
  EXPECT_EQ(tag5, algorithms::SparseSwarmSgd::kSparse);
  EXPECT_EQ(reply5[0], algorithms::SparseSwarmSgd::kSparse);
  EXPECT_TRUE(a->CompleteExchange(5, reply5));
  EXPECT_EQ(a->counters().exchanges_initiated, 3);
  // Node 0 and node 2 are neighbours on the ring of 3, node 5 is nobody.
  EXPECT_THROW(a->BeginExchange(5, 6), std::logic_error);
  EXPECT_THROW(algorithms::ParseTopKSpec("topk:0"), std::invalid_argument);
  EXPECT_THROW(algorithms::ParseTopKSpec("topk:3:1.5"), std::invalid_argument);
  EXPECT_THROW(algorithms::ParseTopKSpec("topk:x"), std::invalid_argument);
  EXPECT_THROW(algorithms::ParseTopKSpec("topk:3:0"), std::invalid_argument);
  EXPECT_EQ(algorithms::ParseTopKSpec("topk:3:0.25").gamma, 0.25);
}

// Both compressors read "PREFIX:INT[:NUMBER]" through one parser (compression_spec.h); each
// keeps its own ranges and default.
TEST(CompressionSpec, LatticeAndTopKSpecsParseAndRefuseAlike) {
  const algorithms::LatticeQuantizer q = algorithms::ParseLatticeSpec("lattice:6:2.5e-3");
  EXPECT_EQ(q.bits(), 6);
  EXPECT_EQ(q.scale(), 2.5e-3);
  EXPECT_EQ(algorithms::ParseLatticeSpec("lattice:8").scale(), 1e-4);  // the default step
  for (const char* bad : {"lattice:1", "lattice:17", "lattice:8:0", "lattice:8:", "lattice:x",
                          "lattice:8:1e-3x", "lattice8", "topk:3"}) {
    EXPECT_THROW(algorithms::ParseLatticeSpec(bad), std::invalid_argument) << bad;
  }
  EXPECT_EQ(algorithms::ParseTopKSpec("topk:40").k, 40);
  EXPECT_THROW(algorithms::ParseTopKSpec("topk:4:"), std::invalid_argument);
  EXPECT_THROW(algorithms::ParseTopKSpec("lattice:4"), std::invalid_argument);
  const auto fields = algorithms::ParseCompressionSpec("foo:12:0.5", "foo:");
  ASSERT_TRUE(fields);
  EXPECT_EQ(fields->integer, 12);
  EXPECT_EQ(fields->number, 0.5);
  EXPECT_FALSE(algorithms::ParseCompressionSpec("foo:12", "foo:")->number);
  EXPECT_FALSE(algorithms::ParseCompressionSpec("foo:12:0.5:1", "foo:"));
}

// A checkpoint keeps the model, the counters and every edge's copies: a node restored from it
// offers exactly what the original offers next, and its partner's copy check passes.
TEST(SparseSwarmSgd, ACheckpointRestoresTheCopiesOfEveryEdge) {
  PairwiseNetwork net = MakePairwise(3, 6, 0.3);
  algorithms::PairwiseOptions options;
  options.step = 0.05;
  options.compression = "topk:2";
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
  EXPECT_EQ(restored->Model(), a->Model());
  EXPECT_EQ(restored->counters().bits_sent, a->counters().bits_sent);
  a->LocalStep();
  restored->LocalStep();
  const Vec offer = *a->BeginExchange(1, 6);
  ASSERT_TRUE(offer == *restored->BeginExchange(1, 6));
  EXPECT_EQ(offer[0], algorithms::SparseSwarmSgd::kSparse);
  const Vec reply = *b->Respond(0, offer);
  EXPECT_EQ(reply[0], algorithms::SparseSwarmSgd::kSparse);
  ASSERT_TRUE(restored->CompleteExchange(6, reply));
  EXPECT_EQ(restored->counters().decode_failures, 0);
  // Another algorithm's state is refused.
  auto plain_options = options;
  plain_options.compression = "none";
  auto plain = algorithms::MakePairwiseAlgorithm(plain_options, net.setups[0]);
  EXPECT_THROW(plain->LoadState(state), std::invalid_argument);
}

// With local steps, top-k SwarmSGD still finds the optimum of the sum (sum b / sum diag).
TEST(SparseSwarmSgd, ConvergesToTheOptimumOfTheSum) {
  const int n = 6, dim = 8;
  PairwiseNetwork net = MakePairwise(n, dim, 0.5);
  algorithms::PairwiseOptions options;
  options.step = 0.01;
  options.batch_size = 1;
  options.local_steps = 2;
  options.compression = "topk:2";
  node::PairwiseSimulator sim(net.setups, options, 5);
  for (int t = 0; t < 20000; ++t) sim.Activate();
  Vec diag_sum = Vec::Zero(dim), b_sum = Vec::Zero(dim);
  for (int i = 0; i < n; ++i) {
    diag_sum += Vec::Constant(dim, 1.0 + 0.1 * i);
    b_sum += Vec::Constant(dim, 0.5 * i - 1.0);
  }
  const Vec optimum = b_sum.cwiseQuotient(diag_sum);
  Vec mean = SumOfModels(sim) / n;
  std::printf("top-k SwarmSGD: |mean - x*| = %.3g\n", (mean - optimum).norm());
  EXPECT_LT((mean - optimum).norm(), 0.05);
  for (int i = 0; i < n; ++i) EXPECT_LT((sim.node(i).Model() - optimum).norm(), 0.3) << i;
}

// CHOCO-SGD with top-k: every node's copy of a neighbour's public vector stays identical to that
// neighbour's own (checked through the mean, which CHOCO's consensus step preserves), and the run
// converges to the optimum of the sum, sum b / sum diag, with full gradients.
TEST(ChocoSgd, TopKWithPublicCopiesConverges) {
  const int n = 6, dim = 5;
  const topology::Graph graph = topology::Ring(n);
  const Eigen::MatrixXd w = topology::MetropolisHastings(graph);
  std::vector<std::unique_ptr<testing::FakeQuadratic>> problems;
  std::vector<algorithms::NodeSetup> setups;
  Vec diag_sum = Vec::Zero(dim), b_sum = Vec::Zero(dim);
  for (int i = 0; i < n; ++i) {
    Vec d(dim), b(dim);
    for (int k = 0; k < dim; ++k) {
      d[k] = 1.0 + 0.2 * ((i + k) % 3);
      b[k] = std::sin(i + 2.0 * k);
    }
    diag_sum += d;
    b_sum += b;
    problems.push_back(std::make_unique<testing::FakeQuadratic>(d, b));
    algorithms::NodeSetup s = node::NodeSetupOf(graph, w, i);
    s.problem = problems.back().get();
    s.x0 = Vec::Zero(dim);
    setups.push_back(s);
  }
  algorithms::RoundOptions options;
  options.algorithm = "choco-sgd";
  options.step = 0.02;
  options.params.Set("top-k", 2);
  options.params.Set("choco-gamma", 0.2);
  node::RoundSimulator sim(setups, options);
  sim.RunUntilIteration(6000);
  // Constant-step decentralized SGD with full gradients has an O(step) bias like DGD; check the
  // average model against the optimum loosely and the consensus tightly enough to show mixing.
  const Vec optimum = b_sum.cwiseQuotient(diag_sum);
  EXPECT_LT((sim.Spread().mean - optimum).norm(), 0.05);
  // Heterogeneous gradients at a constant step leave a disagreement: DGD's at the same step,
  // divided by CHOCO's weaker effective mixing (gamma times the fraction of coordinates sent,
  // 0.2 * 2/5 here), so about 12 times DGD's.
  algorithms::RoundOptions dgd = options;
  dgd.algorithm = "dgd";
  node::RoundSimulator reference(setups, dgd);
  reference.RunUntilIteration(6000);
  std::cout << "consensus: CHOCO top-2 " << sim.Spread().consensus << ", DGD "
            << reference.Spread().consensus << "\n";
  EXPECT_LT(sim.Spread().consensus, 30 * reference.Spread().consensus);
  // Uncompressed with gamma = 1, CHOCO is DGD in adapt-then-combine order: the same floor.
  algorithms::RoundOptions full = options;
  full.params.Set("top-k", 0);
  full.params.Set("choco-gamma", 1.0);
  node::RoundSimulator uncompressed(setups, full);
  uncompressed.RunUntilIteration(6000);
  EXPECT_LT(uncompressed.Spread().consensus, 2 * reference.Spread().consensus);
  EXPECT_GT(uncompressed.Spread().consensus, 0.5 * reference.Spread().consensus);
  // 2 of 5 coordinates per message: 2 * 96 bits instead of 5 * 64.
  EXPECT_EQ(sim.node(0).OutgoingBits(), 2 * 96);
}

// The packed codes are ceil(d bits / 8) bytes, read back exactly for every width, and a byte
// string of the wrong length or with stray bits past the last code is refused.
TEST(LatticeQuantizer, PacksCodesIntoTheirBitsAndRefusesStrayBits) {
  std::mt19937_64 rng(11);
  for (int bits = 1; bits <= 16; ++bits) {
    for (size_t dim : {size_t{1}, size_t{7}, size_t{8}, size_t{123}}) {
      std::vector<uint32_t> codes(dim);
      for (auto& c : codes) c = static_cast<uint32_t>(rng() & ((uint64_t{1} << bits) - 1));
      std::string packed;
      LatticeQuantizer::PackCodes(codes, bits, &packed);
      ASSERT_EQ(packed.size(), (dim * bits + 7) / 8) << bits << " " << dim;
      std::vector<uint32_t> back;
      ASSERT_TRUE(LatticeQuantizer::UnpackCodes(packed, dim, bits, &back));
      EXPECT_EQ(back, codes) << bits << " bits, dim " << dim;
      EXPECT_FALSE(LatticeQuantizer::UnpackCodes(packed + '\0', dim, bits, &back));
      if ((dim * bits) % 8 != 0) {
        std::string stray = packed;
        stray.back() = static_cast<char>(stray.back() | 0x80);
        EXPECT_FALSE(LatticeQuantizer::UnpackCodes(stray, dim, bits, &back)) << bits << " " << dim;
      }
    }
  }
  // Bit order: code k at bits [k*bits, (k+1)*bits), least significant first.
  std::string packed;
  LatticeQuantizer::PackCodes({0x5, 0x3, 0xA}, 4, &packed);
  EXPECT_EQ(packed, std::string("\x35\x0a", 2));
}

// What the daemon sends for each of QuantizedSwarmSgd's messages, and back: lattice codes as a
// lattice payload of log2 q bits per coordinate with the hash and dither seed in `check`, a
// full-precision retry as float64, a failure as no payload; anything else is a reject.
TEST(ExchangeWire, CarriesQuantizedMessagesAndRejectsWhatTheRunDoesNotSend) {
  const int d = 37;
  algorithms::PairwiseOptions options;
  options.compression = "lattice:4:0.01";
  node::ExchangeWire wire(options, d);
  const int h = algorithms::QuantizedSwarmSgd::kHeaderSize;
  std::mt19937_64 rng(3);
  Vec lattice(d + h);
  lattice[0] = algorithms::QuantizedSwarmSgd::kLattice;
  lattice[1] = 4000000000.0;  // a hash above 2^31
  lattice[2] = 123456789.0;   // the dither seed
  for (int k = 0; k < d; ++k) lattice[h + k] = static_cast<double>(rng() % 16);
  net::Envelope e;
  wire.Attach(lattice, &e);
  ASSERT_EQ(e.payloads.size(), 1u);
  EXPECT_EQ(e.payloads[0].encoding, net::Encoding::kLattice);
  EXPECT_EQ(e.payloads[0].bytes.size(), (d * 4 + 7) / 8u);
  net::Reject reject;
  ASSERT_TRUE(net::CheckPayload(e.payloads[0], &reject)) << reject.detail;
  Vec back;
  ASSERT_TRUE(wire.Collect(e, /*request=*/true, &back, &reject)) << reject.detail;
  EXPECT_EQ(back, lattice);

  Vec full(d + h);
  full.setZero();
  full.tail(d).setRandom();
  wire.Attach(full, &e);
  ASSERT_EQ(e.payloads.size(), 1u);
  EXPECT_EQ(e.payloads[0].encoding, net::Encoding::kFloat64);
  ASSERT_TRUE(wire.Collect(e, /*request=*/false, &back, &reject)) << reject.detail;
  EXPECT_EQ(back, full);

  Vec failed = Vec::Zero(d + h);
  failed[0] = algorithms::QuantizedSwarmSgd::kFailed;
  wire.Attach(failed, &e);
  EXPECT_TRUE(e.payloads.empty());
  ASSERT_TRUE(wire.Collect(e, /*request=*/false, &back, &reject));
  EXPECT_EQ(back[0], algorithms::QuantizedSwarmSgd::kFailed);
  // A request must offer something.
  EXPECT_FALSE(wire.Collect(e, /*request=*/true, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadPayloadCount);

  // Another modulus or scale than the run's, stray bits, two payloads, another dimension.
  wire.Attach(lattice, &e);
  std::string codes(e.payloads[0].bytes);
  net::Envelope other = e;
  other.payloads[0] = net::LatticePayload(d, 0.01, 8, std::string((d * 3 + 7) / 8, '\0'), 1);
  EXPECT_FALSE(wire.Collect(other, true, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadField);
  other.payloads[0] = net::LatticePayload(d, 0.02, 16, codes, 1);
  EXPECT_FALSE(wire.Collect(other, true, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadField);
  std::string stray = codes;
  stray.back() = static_cast<char>(stray.back() | 0xf0);  // d * 4 bits leave the high nibble
  other.payloads[0] = net::LatticePayload(d, 0.01, 16, stray, 1);
  EXPECT_FALSE(wire.Collect(other, true, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadLength);
  other.payloads = {e.payloads[0], e.payloads[0]};
  EXPECT_FALSE(wire.Collect(other, true, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadPayloadCount);
  const Vec shorter = Vec::Ones(d - 1);
  other.payloads = {net::Float64Payload(shorter.data(), d - 1)};
  EXPECT_FALSE(wire.Collect(other, true, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kWrongDimension);

  // A run without compression takes one float64 vector and refuses lattice codes.
  node::ExchangeWire plain(algorithms::PairwiseOptions{}, d);
  EXPECT_FALSE(plain.Collect(e, true, &back, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadEncoding);
  const Vec model = Vec::LinSpaced(d, -1.0, 1.0);
  plain.Attach(model, &other);
  ASSERT_TRUE(plain.Collect(other, true, &back, &reject));
  EXPECT_EQ(back, model);
}

// --compression f32's rounding is the float conversion (ties to even), saturating finite values
// beyond the float range as the wire's float32 payload does, so that payload carries the rounded
// values exactly.
TEST(Float32SwarmSgd, RoundingIsTheFloatConversionAndTheWireCarriesItExactly) {
  const double inf = std::numeric_limits<double>::infinity();
  const Vec x = (Vec(7) << 0.1, 1.0 / 3.0, -2.718281828459045, 1e-40, 1e39, -1e39, inf).finished();
  Vec r(7);
  algorithms::RoundToFloat32(x.data(), 7, r.data());
  const float f0 = 0.1f, f1 = 1.0f / 3.0f, f2 = -2.718281828459045f;
  EXPECT_EQ(r[0], static_cast<double>(f0));
  EXPECT_EQ(r[1], static_cast<double>(f1));
  EXPECT_EQ(r[2], static_cast<double>(f2));
  EXPECT_NE(r[0], 0.1);
  EXPECT_EQ(r[3], static_cast<double>(static_cast<float>(1e-40)));  // a float subnormal
  EXPECT_GT(r[3], 0.0);
  EXPECT_EQ(r[4], static_cast<double>(FLT_MAX));
  EXPECT_EQ(r[5], -static_cast<double>(FLT_MAX));
  EXPECT_EQ(r[6], inf);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  double n = nan;
  algorithms::RoundToFloat32(&n, 1, &n);
  EXPECT_TRUE(std::isnan(n));

  std::string storage;
  const net::Payload p = net::Float32Payload(r.data(), 6, &storage);
  Vec back(6);
  net::Reject reject;
  ASSERT_TRUE(net::PayloadToDoubles(p, back.data(), 6, &reject)) << reject.detail;
  EXPECT_EQ(back, r.head(6));
}

// Two SwarmSGD nodes (1 and 2 of a 3-node network) with --compression f32, one local step
// taken each, so that their models are off the float grid.
struct Float32Pair {
  explicit Float32Pair(int d) : net(MakePairwise(3, d, 0.1)) {
    options.step = 1e-3;
    options.batch_size = 1;
    options.local_steps = 1;
    options.compression = "f32";
    a = algorithms::MakePairwiseAlgorithm(options, net.setups[1]);
    b = algorithms::MakePairwiseAlgorithm(options, net.setups[2]);
    a->LocalStep();
    b->LocalStep();
  }
  algorithms::PairwiseOptions options;
  PairwiseNetwork net;
  std::unique_ptr<algorithms::PairwiseAlgorithm> a, b;
};

// Two SwarmSGD nodes with --compression f32, their messages through the daemon's ExchangeWire:
// each sends its model rounded to float, computed here independently; both merge the rounded
// pair (X_i += (S_j' - S_i')/2, X_j += (S_i' - S_j')/2), so the sum of models is conserved; a
// float64 payload is not this run's encoding.
TEST(Float32SwarmSgd, SendsTheRoundedModelAndMergesTheRoundedPair) {
  const int d = 5;
  Float32Pair pair(d);
  const algorithms::PairwiseOptions& options = pair.options;
  auto& a = pair.a;
  auto& b = pair.b;
  const Vec xa = a->Model(), xb = b->Model();
  Vec fa(d), fb(d);
  for (int k = 0; k < d; ++k) {
    fa[k] = static_cast<float>(xa[k]);
    fb[k] = static_cast<float>(xb[k]);
  }
  ASSERT_NE(fa, xa);  // the models are off the float grid, so the test sees the rounding
  ASSERT_NE(fb, xb);

  node::ExchangeWire wire(options, d);
  const std::shared_ptr<const Vec> offer = a->BeginExchange(2, 1);
  EXPECT_EQ(*offer, fa);
  net::Envelope e;
  EXPECT_EQ(wire.Attach(offer, &e), nullptr);  // the float32 values are the wire's own copy
  ASSERT_EQ(e.payloads.size(), 1u);
  EXPECT_EQ(e.payloads[0].encoding, net::Encoding::kFloat32);
  EXPECT_EQ(e.payloads[0].bytes.size(), 4u * d);
  Vec received;
  net::Reject reject;
  ASSERT_TRUE(wire.Collect(e, /*request=*/true, &received, &reject)) << reject.detail;
  EXPECT_EQ(received, fa);
  size_t bad = 0;
  const std::shared_ptr<const Vec> reply = b->RespondChecked(1, received, &bad);
  ASSERT_NE(reply, nullptr);
  EXPECT_EQ(*reply, fb);
  EXPECT_EQ(b->Model(), Vec(xb + 0.5 * (fa - fb)));
  wire.Attach(reply, &e);
  ASSERT_TRUE(wire.Collect(e, /*request=*/false, &received, &reject)) << reject.detail;
  EXPECT_EQ(received, fb);
  EXPECT_EQ(a->CompleteExchangeChecked(1, received, &bad),
            algorithms::PairwiseAlgorithm::MergeResult::kMerged);
  EXPECT_EQ(a->Model(), Vec(xa + 0.5 * (fb - fa)));
  EXPECT_LE((a->Model() + b->Model() - xa - xb).lpNorm<Eigen::Infinity>(), 1e-15);
  EXPECT_EQ(a->counters().bits_sent, 32 * d);
  EXPECT_EQ(b->counters().bits_sent, 32 * d);

  net::Envelope f64;
  f64.payloads.push_back(net::Float64Payload(fa.data(), d));
  EXPECT_FALSE(wire.Collect(f64, /*request=*/true, &received, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadEncoding);
}

// A float32 vector holding NaN or Inf, received over the wire (which does not scan it: the merge
// does), is refused by the checked merges on either side, naming the first bad coordinate, and
// leaves the model bit for bit as it was.
TEST(Float32SwarmSgd, ANonFiniteFloat32VectorLeavesTheModelBitForBit) {
  const int d = 6;
  Float32Pair pair(d);
  const algorithms::PairwiseOptions& options = pair.options;
  auto& a = pair.a;
  auto& b = pair.b;
  node::ExchangeWire wire(options, d);
  auto send = [&](Vec v, int k, double value, bool request) {
    v[k] = value;
    std::string storage;
    net::Envelope e;
    e.payloads.push_back(net::Float32Payload(v.data(), d, &storage));
    Vec received;
    net::Reject reject;
    EXPECT_TRUE(wire.Collect(e, request, &received, &reject)) << reject.detail;
    return received;
  };
  const Vec before_b = b->Model();
  size_t bad = 0;
  EXPECT_EQ(b->RespondChecked(1, send(a->Model(), 3, std::nan(""), true), &bad), nullptr);
  EXPECT_EQ(bad, 3u);
  EXPECT_EQ(std::memcmp(b->Model().data(), before_b.data(), sizeof(double) * d), 0);

  const Vec before_a = a->Model();
  a->BeginExchange(2, 1);
  EXPECT_EQ(a->CompleteExchangeChecked(
                1, send(b->Model(), 0, -std::numeric_limits<double>::infinity(), false), &bad),
            algorithms::PairwiseAlgorithm::MergeResult::kRefused);
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(std::memcmp(a->Model().data(), before_a.data(), sizeof(double) * d), 0);
  EXPECT_EQ(b->counters().bits_sent, 0);
}

// CHOCO-SGD's differences travel as top-k entries and come back as the same dense vector.
TEST(VectorWire, SparseVectorsTravelAsTheirNonzeroEntries) {
  const int d = 10;
  Vec v = Vec::Zero(2 * d);
  v[3] = 1.5;
  v[9] = -2.0;
  v[d + 0] = 1e-300;
  net::Envelope e;
  std::vector<std::string> storage;
  node::AttachSparseVectors(v, d, &storage, &e);
  ASSERT_EQ(e.payloads.size(), 2u);
  EXPECT_EQ(e.payloads[0].encoding, net::Encoding::kTopK);
  EXPECT_EQ(e.payloads[0].bytes.size(), 2 * net::kTopKEntryBytes);
  EXPECT_EQ(e.payloads[1].bytes.size(), 1 * net::kTopKEntryBytes);
  Vec back;
  net::Reject reject;
  ASSERT_TRUE(node::CollectVectors(e, &back, &reject)) << reject.detail;
  EXPECT_EQ(back, v);
}

}  // namespace
}  // namespace starling
