// Quantized gossip for DGD, gradient tracking and EXTRA (--gossip-bits, --gossip-quantizer;
// algorithms/round/quantized_gossip.h): the quantizer and the
// differential rule against formulas written out here, the state machines against their matrix
// form, naive vs differential on a small network, and the messages' wire form (packed R-bit
// codes, node/drivers/vector_wire.h) with what a receiver refuses.
#include "algorithms/round/quantized_gossip.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "algorithms/compression/range_quantizer.h"
#include "algorithms/round/gradient_tracking.h"
#include "algorithms/round/round_algorithm.h"
#include "net/codec.h"
#include "net/payload.h"
#include "net/payload_view.h"
#include "node/config/run_setup.h"
#include "node/drivers/vector_wire.h"
#include "node/sim/round_simulator.h"
#include "tests/fake_quadratic.h"
#include "topology/generators.h"
#include "topology/mixing.h"

namespace starling {
namespace {

using algorithms::NodeSetup;
using algorithms::RoundOptions;
using Matrix = Eigen::MatrixXd;
using testing::FakeQuadratic;

struct Network {
  Matrix w;
  std::vector<std::unique_ptr<FakeQuadratic>> problems;
  std::vector<NodeSetup> setups;
  Vec optimum;  // argmin sum_i f_i, in closed form
};

Network MakeNetwork(const topology::Graph& graph, int dim, uint64_t seed) {
  Network net;
  net.w = topology::MetropolisHastings(graph);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.5, 2.0), v(-1.0, 1.0);
  Vec diag_sum = Vec::Zero(dim), b_sum = Vec::Zero(dim);
  for (int i = 0; i < graph.num_nodes(); ++i) {
    Vec d(dim), b(dim);
    for (int k = 0; k < dim; ++k) {
      d[k] = u(rng);
      b[k] = v(rng);
    }
    diag_sum += d;
    b_sum += b;
    net.problems.push_back(std::make_unique<FakeQuadratic>(d, b));
  }
  net.optimum = b_sum.cwiseQuotient(diag_sum);
  for (int i = 0; i < graph.num_nodes(); ++i) {
    NodeSetup s = node::NodeSetupOf(graph, net.w, i);
    s.problem = net.problems[i].get();
    s.x0 = Vec::Constant(dim, 0.3 * i - 0.5);
    s.seed = 100 + i;
    net.setups.push_back(s);
  }
  return net;
}

RoundOptions Options(const std::string& name, double step, int bits,
                     const std::string& quantizer = "differential") {
  RoundOptions o;
  o.algorithm = name;
  o.step = step;
  o.params.Set("gossip-bits", bits);
  o.params.Set("gossip-quantizer", quantizer);
  return o;
}

// The uniform R-bit quantizer on [-r, r], r = max_k |v_k|, written out from its definition
// (midpoints of 2^R equal cells; the top edge v = r falls in the last cell).
Vec DirectQ(const Vec& v, int bits) {
  const double r = v.cwiseAbs().maxCoeff();
  if (r == 0) return Vec::Zero(v.size());
  const double levels = std::pow(2.0, bits), delta = 2 * r / levels;
  Vec q(v.size());
  for (int k = 0; k < v.size(); ++k) {
    const double cell = std::min(std::floor((v[k] + r) / delta), levels - 1);
    q[k] = -r + delta * (cell + 0.5);
  }
  return q;
}

// Row-wise DirectQ of each d-column block of Z.
Matrix DirectQRows(const Matrix& z, int bits, int segments) {
  const int d = static_cast<int>(z.cols()) / segments;
  Matrix q(z.rows(), z.cols());
  for (int i = 0; i < z.rows(); ++i) {
    for (int s = 0; s < segments; ++s) {
      q.block(i, s * d, 1, d) = DirectQ(z.block(i, s * d, 1, d).transpose(), bits).transpose();
    }
  }
  return q;
}

Matrix GradientRows(const Network& net, const Matrix& x) {
  Matrix g(x.rows(), x.cols());
  Vec gi;
  for (int i = 0; i < x.rows(); ++i) {
    net.problems[i]->Gradient(x.row(i).transpose(), &gi);
    g.row(i) = gi.transpose();
  }
  return g;
}

Matrix Models(const node::RoundSimulator& sim) {
  Matrix x(sim.num_nodes(), sim.node(0).Model().size());
  for (int i = 0; i < sim.num_nodes(); ++i) x.row(i) = sim.node(i).Model().transpose();
  return x;
}

// The public copies after one exchange of payload rows Z: differential Zh + Q(Z - Zh), naive Q(Z).
Matrix NextCopies(const Matrix& z, const Matrix& zh, bool differential, int bits, int segments) {
  return differential ? Matrix(zh + DirectQRows(z - zh, bits, segments))
                      : DirectQRows(z, bits, segments);
}

TEST(QuantizedGossip, QuantizerOnTheMessagesOwnRangeIsTheDirectFormula) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal;
  for (int bits : {1, 2, 3, 5, 8, 12}) {
    const algorithms::RangeQuantizer quantizer(bits);
    for (int trial = 0; trial < 20; ++trial) {
      Vec v(17), q;
      for (int k = 0; k < v.size(); ++k) v[k] = std::ldexp(normal(rng), trial % 7 - 3);
      const double r = algorithms::QuantizeWithOwnRange(quantizer, v, &q);
      EXPECT_EQ(r, v.cwiseAbs().maxCoeff());
      EXPECT_EQ(q, DirectQ(v, bits)) << "bits " << bits;
      // Inside the range the error is at most half a cell, r 2^-R.
      EXPECT_LE((q - v).lpNorm<Eigen::Infinity>(), r * std::ldexp(1.0, -bits) * (1 + 1e-12));
    }
  }
  Vec zero = Vec::Zero(4), q;
  EXPECT_EQ(algorithms::QuantizeWithOwnRange(algorithms::RangeQuantizer(4), zero, &q), 0.0);
  EXPECT_EQ(q, zero);
}

// One node's rule, step by step, against the differential formula: m_t = Q(z_t - zh_t),
// zh_{t+1} = zh_t + m_t (for this node and each neighbour), mix = z + sum_j W_ij (zh_j - zh_i).
TEST(QuantizedGossip, DifferentialRuleIsTheDirectFormula) {
  NodeSetup s;
  s.id = 1;
  s.neighbors = {0, 2};
  s.neighbor_weights = {0.25, 0.35};
  s.self_weight = 0.4;
  const int bits = 3, d = 5;
  algorithms::GossipQuantParams params;
  params.bits = bits;
  algorithms::QuantizedGossip gossip(s, d, 1, params);
  std::mt19937_64 rng(9);
  std::normal_distribution<double> normal;
  auto random_vec = [&] {
    Vec v(d);
    for (int k = 0; k < d; ++k) v[k] = normal(rng);
    return v;
  };
  Vec zh_self = Vec::Zero(d), zh0 = Vec::Zero(d), zh2 = Vec::Zero(d);
  for (int t = 0; t < 6; ++t) {
    const Vec z = random_vec();
    gossip.Encode(z);
    const Vec expected_message = DirectQ(z - zh_self, bits);
    ASSERT_EQ(gossip.message(), expected_message) << "t " << t;
    // The neighbours' messages: whatever they quantized (here: their own differences).
    const Vec m0 = DirectQ(random_vec() - zh0, bits), m2 = DirectQ(random_vec() - zh2, bits);
    gossip.Receive({&m0, &m2});
    zh_self += expected_message;
    zh0 += m0;
    zh2 += m2;
    Vec mixed;
    gossip.Mix(z, 0, &mixed);
    const Vec expected = z + 0.25 * (zh0 - zh_self) + 0.35 * (zh2 - zh_self);
    EXPECT_LE((mixed - expected).lpNorm<Eigen::Infinity>(), 1e-14) << "t " << t;
    gossip.Commit();
  }
}

// DGD, EXTRA and gradient tracking as state machines equal their matrix form with Q written out
// here (W the Metropolis-Hastings matrix, I the identity):
//   DGD:   Zh+ = next copies of X;  X+ = X + (W - I) Zh+ - step grad F(X)
//   EXTRA: WX := X + (W - I) Zh+;   X^1 = WX^0 - step grad,
//          X^{k+1} = X^k + WX^k - (X^{k-1} + WX^{k-1})/2 - step (grad F(X^k) - grad F(X^{k-1}))
//   GT:    Z = [X - step Y, Y];  Zh+ = next copies of Z (one range per half);
//          X+ = Zx + (W - I) Zhx+;  Y+ = Zy + (W - I) Zhy+ + grad F(X+) - grad F(X)
class MatrixForm : public ::testing::TestWithParam<std::string> {};

TEST_P(MatrixForm, StateMachinesEqualTheMatrixForm) {
  const bool differential = GetParam() == "differential";
  const int bits = 4, d = 3, iterations = 40;
  Network net = MakeNetwork(topology::Ring(6), d, 3);
  const int n = static_cast<int>(net.setups.size());
  const Matrix w_minus_i = net.w - Matrix::Identity(n, n);
  Matrix x0(n, d);
  for (int i = 0; i < n; ++i) x0.row(i) = net.setups[i].x0.transpose();
  const double step = 0.3;
  // Not bit for bit: the matrix products here sum in another order than MixSegment, and once the
  // difference z - zh is down to rounding size a last-bit change of z moves it across a cell
  // edge. The change is then at most one cell of that tiny difference: measured up to 8e-12 in
  // 40 iterations (differential), 6e-16 (naive); a wrong rule is off by O(1e-2) here.
  const double kTolerance = 1e-10;
  {  // DGD
    node::RoundSimulator sim(net.setups, Options("dgd", step, bits, GetParam()));
    Matrix x = x0, zh = Matrix::Zero(n, d);
    for (int t = 0; t < iterations; ++t) {
      const Matrix g = GradientRows(net, x);
      zh = NextCopies(x, zh, differential, bits, 1);
      x = x + w_minus_i * zh - step * g;
      sim.Step();
      ASSERT_LE((Models(sim) - x).lpNorm<Eigen::Infinity>(), kTolerance) << "dgd t " << t;
    }
  }
  {  // EXTRA
    node::RoundSimulator sim(net.setups, Options("extra", step, bits, GetParam()));
    Matrix x = x0, x_prev, wx_prev, g_prev, zh = Matrix::Zero(n, d);
    for (int t = 0; t < iterations; ++t) {
      const Matrix g = GradientRows(net, x);
      zh = NextCopies(x, zh, differential, bits, 1);
      const Matrix wx = x + w_minus_i * zh;
      const Matrix next = t == 0 ? Matrix(wx - step * g)
                                 : Matrix(x + wx - 0.5 * (x_prev + wx_prev) - step * (g - g_prev));
      x_prev = x;
      wx_prev = wx;
      g_prev = g;
      x = next;
      sim.Step();
      ASSERT_LE((Models(sim) - x).lpNorm<Eigen::Infinity>(), kTolerance) << "extra t " << t;
    }
  }
  {  // gradient tracking
    node::RoundSimulator sim(net.setups, Options("gradient-tracking", step, bits, GetParam()));
    Matrix x = x0, y = GradientRows(net, x0), zh = Matrix::Zero(n, 2 * d);
    for (int t = 0; t < iterations; ++t) {
      Matrix z(n, 2 * d);
      z << x - step * y, y;
      zh = NextCopies(z, zh, differential, bits, 2);
      const Matrix x_next = z.leftCols(d) + w_minus_i * zh.leftCols(d);
      y = z.rightCols(d) + w_minus_i * zh.rightCols(d) + GradientRows(net, x_next) -
          GradientRows(net, x);
      x = x_next;
      sim.Step();
      ASSERT_LE((Models(sim) - x).lpNorm<Eigen::Infinity>(), kTolerance) << "gt t " << t;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(QuantizedGossip, MatrixForm, ::testing::Values("differential", "naive"));

double DistanceTo(const node::RoundSimulator& sim, const Matrix& target) {
  return (Models(sim) - target).lpNorm<Eigen::Infinity>();
}

// The claim of differential quantization: with differential messages the methods reach the
// unquantized error, with naive ones they stall at a floor of about the quantization step.
TEST(QuantizedGossip, DifferentialReachesTheUnquantizedErrorNaiveStalls) {
  Network net = MakeNetwork(topology::ErdosRenyi(10, 0.4, 3), 4, 2);
  const int n = static_cast<int>(net.setups.size());
  const Matrix optimum = Matrix::Ones(n, 1) * net.optimum.transpose();
  for (const std::string method : {"gradient-tracking", "extra", "dgd"}) {
    const int iterations = 1500;
    // DGD's target is its own fixed point (O(step) away from the optimum): unquantized DGD run
    // to convergence.
    node::RoundSimulator exact(net.setups, Options(method, 0.2, 0));
    exact.RunUntilIteration(4 * iterations);
    const Matrix target = method == "dgd" ? Models(exact) : optimum;
    if (method != "dgd") {
      ASSERT_LT(DistanceTo(exact, target), 1e-12) << method;
    }
    for (int bits = 2; bits <= 8; ++bits) {
      node::RoundSimulator diff(net.setups, Options(method, 0.2, bits, "differential"));
      diff.RunUntilIteration(iterations);
      EXPECT_LT(DistanceTo(diff, target), 1e-10) << method << " differential, R = " << bits;
      node::RoundSimulator naive(net.setups, Options(method, 0.2, bits, "naive"));
      naive.RunUntilIteration(iterations);
      // The floor, about the quantization step 2^-R |x*|_inf: measured 0.8 to 2.1 steps at
      // R = 2..8 for the three methods; the differential runs are at 1e-14 or below.
      const double floor = DistanceTo(naive, target);
      const double step_size = std::ldexp(1.0, -bits) * optimum.lpNorm<Eigen::Infinity>();
      EXPECT_GT(floor, 0.3 * step_size) << method << " naive, R = " << bits;
      std::printf("%s R=%d: naive floor %.3g (quantization step %.3g), differential %.3g\n",
                  method.c_str(), bits, floor, step_size, DistanceTo(diff, target));
    }
  }
}

// Gradient tracking's invariant sum_i y_i = sum_i grad f_i(x_i) survives quantization: the mixing
// x_i + sum_j W_ij (xh_j - xh_i) keeps sums whatever the copies are.
TEST(QuantizedGossip, GradientTrackingKeepsItsInvariant) {
  Network net = MakeNetwork(topology::ErdosRenyi(8, 0.5, 4), 3, 5);
  for (const std::string quantizer : {"differential", "naive"}) {
    node::RoundSimulator sim(net.setups, Options("gradient-tracking", 0.2, 3, quantizer));
    Vec g;
    for (int t = 0; t < 200; ++t) {
      sim.Step();
      Vec tracker_sum = Vec::Zero(3), grad_sum = Vec::Zero(3);
      for (int i = 0; i < sim.num_nodes(); ++i) {
        const auto& gt = dynamic_cast<const algorithms::GradientTracking&>(sim.node(i));
        tracker_sum += gt.tracker();
        net.problems[i]->Gradient(gt.Model(), &g);
        grad_sum += g;
      }
      ASSERT_LT((tracker_sum - grad_sum).lpNorm<Eigen::Infinity>(), 1e-12)
          << quantizer << " t " << t;
    }
  }
}

TEST(QuantizedGossip, CountsRBitsPerCoordinatePlusOneRangePerVector) {
  Network net = MakeNetwork(topology::Ring(4), 7, 1);
  EXPECT_EQ(algorithms::MakeRoundAlgorithm(Options("dgd", 0.1, 5), net.setups[0])->OutgoingBits(),
            5 * 7 + 64);
  EXPECT_EQ(algorithms::MakeRoundAlgorithm(Options("extra", 0.1, 1, "naive"), net.setups[0])
                ->OutgoingBits(),
            7 + 64);
  EXPECT_EQ(algorithms::MakeRoundAlgorithm(Options("gradient-tracking", 0.1, 8), net.setups[0])
                ->OutgoingBits(),
            2 * (8 * 7 + 64));
  EXPECT_EQ(algorithms::MakeRoundAlgorithm(Options("dgd", 0.1, 0), net.setups[0])->OutgoingBits(),
            64 * 7);
}

TEST(QuantizedGossip, RefusesBadOptionsNamingThem) {
  Network net = MakeNetwork(topology::Ring(4), 2, 1);
  auto error_of = [&](const RoundOptions& o) {
    try {
      algorithms::MakeRoundAlgorithm(o, net.setups[0]);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of(Options("dgd", 0.1, 31)), "--gossip-bits 31: must be <= 30");
  EXPECT_EQ(error_of(Options("dgd", 0.1, -1)), "--gossip-bits -1: must be >= 0");
  EXPECT_EQ(error_of(Options("gradient-tracking", 0.1, 4, "lazy")),
            "--gossip-quantizer lazy: must be 'differential' or 'naive'");
}

// A checkpoint holds the public copies: a run saved and resumed mid-way equals one not stopped.
TEST(QuantizedGossip, CheckpointResumesBitForBit) {
  Network net = MakeNetwork(topology::Ring(5), 3, 7);
  for (const std::string method : {"dgd", "extra", "gradient-tracking"}) {
    const RoundOptions options = Options(method, 0.2, 3);
    std::vector<std::unique_ptr<algorithms::RoundAlgorithm>> a, b;
    for (const NodeSetup& s : net.setups) {
      a.push_back(algorithms::MakeRoundAlgorithm(options, s));
      b.push_back(algorithms::MakeRoundAlgorithm(options, s));
    }
    auto step = [&](std::vector<std::unique_ptr<algorithms::RoundAlgorithm>>& nodes) {
      std::vector<Vec> out;
      for (auto& node : nodes) out.push_back(node->Outgoing());
      for (size_t i = 0; i < nodes.size(); ++i) {
        std::vector<const Vec*> inbox;
        for (int j : net.setups[i].neighbors) inbox.push_back(&out[j]);
        nodes[i]->Advance(inbox);
      }
    };
    for (int t = 0; t < 7; ++t) step(a);
    for (size_t i = 0; i < a.size(); ++i) {
      algorithms::AlgorithmState state;
      ASSERT_TRUE(a[i]->SaveState(&state));
      b[i]->LoadState(state);
    }
    for (int t = 0; t < 9; ++t) {
      step(a);
      step(b);
    }
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i]->Model(), b[i]->Model()) << method << " node " << i;
      EXPECT_EQ(a[i]->Outgoing(), b[i]->Outgoing()) << method << " node " << i;
    }
  }
}

// Through the wire: each payload is packed (one range-codes payload per d-vector, R bits a code),
// encoded, decoded and unpacked before a neighbour reads it. The values a receiver gets are the
// sender's Outgoing() bit for bit, and equal the quantizer's points written out here from the
// codes and the range the payload carries; a run whose every message travels so equals the run
// that hands the values over directly.
TEST(QuantizedGossip, MessagesTravelAsPackedRangeCodes) {
  const int d = 11;
  Network net = MakeNetwork(topology::Ring(5), d, 4);
  const int n = static_cast<int>(net.setups.size());
  const net::DecodeLimits limits = net::LimitsForRun(d, 2);
  for (const std::string method : {"dgd", "extra", "gradient-tracking"}) {
    for (const std::string quantizer : {"differential", "naive"}) {
      for (int bits : {1, 3, 8, 30}) {
        const RoundOptions options = Options(method, 0.2, bits, quantizer);
        const int segments = method == "gradient-tracking" ? 2 : 1;
        std::vector<std::unique_ptr<algorithms::RoundAlgorithm>> wired, direct;
        for (const NodeSetup& setup : net.setups) {
          wired.push_back(algorithms::MakeRoundAlgorithm(options, setup));
          direct.push_back(algorithms::MakeRoundAlgorithm(options, setup));
        }
        const algorithms::QuantizedGossip* gossip = wired[0]->OutgoingGossip();
        ASSERT_NE(gossip, nullptr);
        ASSERT_EQ(gossip->bits(), bits);
        ASSERT_EQ(gossip->segments(), segments);
        for (int t = 0; t < 12; ++t) {
          std::vector<Vec> received(n), handed(n);
          for (int i = 0; i < n; ++i) {
            const Vec& coded = wired[i]->OutgoingGossip()->coded();
            ASSERT_EQ(coded.size(), segments * (1 + d));
            net::Envelope e;
            e.type = net::MessageType::kRound;
            std::vector<std::string> storage;
            node::AttachRangeCodes(coded, d, bits, &storage, &e);
            ASSERT_EQ(e.payloads.size(), static_cast<size_t>(segments));
            const std::string bytes = net::Encode(e);
            net::Envelope decoded;
            net::Reject reject;
            ASSERT_TRUE(net::Decode(bytes.data(), bytes.size(), limits, &decoded, &reject))
                << reject.detail;
            // The codes and ranges as they arrive, decoded by the formula: -r + (2r/2^R)(k + 1/2).
            Vec by_formula(segments * d);
            for (int s = 0; s < segments; ++s) {
              const net::Payload& p = decoded.payloads[s];
              ASSERT_EQ(p.bytes.size(), (d * bits + 7) / 8u);
              EXPECT_EQ(p.scale, coded[s * (1 + d)]);
              const double r = p.scale, delta = 2 * r / std::ldexp(1.0, bits);
              for (int k = 0; k < d; ++k) {
                const uint32_t code = net::CrossPolytopeCode(p.bytes, bits, k);
                by_formula[s * d + k] = r == 0 ? 0.0 : -r + delta * (code + 0.5);
              }
            }
            ASSERT_TRUE(node::CollectRangeCodes(decoded, d, segments, bits, &received[i], &reject))
                << reject.detail;
            ASSERT_TRUE(received[i] == wired[i]->Outgoing()) << method << " node " << i;
            ASSERT_TRUE(by_formula == wired[i]->Outgoing()) << method << " node " << i;
            handed[i] = direct[i]->Outgoing();
          }
          for (int i = 0; i < n; ++i) {
            std::vector<const Vec*> in_wired, in_direct;
            for (int j : net.setups[i].neighbors) {
              in_wired.push_back(&received[j]);
              in_direct.push_back(&handed[j]);
            }
            wired[i]->Advance(in_wired);
            direct[i]->Advance(in_direct);
          }
        }
        for (int i = 0; i < n; ++i) {
          EXPECT_TRUE(wired[i]->Model() == direct[i]->Model())
              << method << " " << quantizer << " R " << bits << " node " << i;
        }
      }
    }
  }
  // An unquantized run has no coded messages.
  EXPECT_EQ(algorithms::MakeRoundAlgorithm(Options("dgd", 0.1, 0), net.setups[0])->OutgoingGossip(),
            nullptr);
}

// What a receiver refuses, each counted by the daemon as a reject naming the sender.
TEST(QuantizedGossip, ReceiverRefusesMessagesOfAnotherRun) {
  const int d = 9, bits = 4;
  Network net = MakeNetwork(topology::Ring(4), d, 2);
  auto gt = algorithms::MakeRoundAlgorithm(Options("gradient-tracking", 0.2, bits), net.setups[0]);
  const Vec& coded = gt->OutgoingGossip()->coded();
  net::Envelope e;
  std::vector<std::string> storage;
  node::AttachRangeCodes(coded, d, bits, &storage, &e);
  ASSERT_EQ(e.payloads.size(), 2u);
  Vec out;
  net::Reject reject;
  ASSERT_TRUE(node::CollectRangeCodes(e, d, 2, bits, &out, &reject)) << reject.detail;
  EXPECT_TRUE(out == gt->Outgoing());
  // Another R (a valid one), another dimension, one segment missing or one too many.
  EXPECT_FALSE(node::CollectRangeCodes(e, d, 2, bits + 1, &out, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadField);
  EXPECT_NE(reject.detail.find("--gossip-bits"), std::string::npos) << reject.detail;
  EXPECT_FALSE(node::CollectRangeCodes(e, d + 1, 2, bits, &out, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kWrongDimension);
  EXPECT_FALSE(node::CollectRangeCodes(e, d, 1, bits, &out, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadPayloadCount);
  net::Envelope other = e;
  other.payloads.push_back(e.payloads[0]);
  EXPECT_FALSE(node::CollectRangeCodes(other, d, 2, bits, &out, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadPayloadCount);
  // A float64 vector, or cross-polytope codes, where range codes are due.
  const Vec x = Vec::Ones(d);
  other.payloads = {e.payloads[0], net::Float64Payload(x.data(), d)};
  EXPECT_FALSE(node::CollectRangeCodes(other, d, 2, bits, &out, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadEncoding);
  const std::string cp(net::CrossPolytopeBytes(d, 2), '\0');
  other.payloads = {net::CrossPolytopePayload(d, 1.0, 2, cp), e.payloads[1]};
  EXPECT_FALSE(node::CollectRangeCodes(other, d, 2, bits, &out, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadEncoding);
  // A negative range and a set padding bit (the codec refuses them before; checked again here).
  std::string dirty(e.payloads[1].bytes);
  dirty.back() = static_cast<char>(dirty.back() | 0x80);  // 36 bits used of 40
  other.payloads = {e.payloads[0], net::RangeCodesPayload(d, 1.0, bits, dirty)};
  EXPECT_FALSE(node::CollectRangeCodes(other, d, 2, bits, &out, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadField);
  other.payloads = {e.payloads[0], net::RangeCodesPayload(d, -1.0, bits, e.payloads[1].bytes)};
  EXPECT_FALSE(node::CollectRangeCodes(other, d, 2, bits, &out, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadField);
  // A run that does not send range codes refuses them.
  EXPECT_FALSE(node::CollectVectors(e, &out, &reject));
  EXPECT_EQ(reject.reason, net::RejectReason::kBadEncoding);
}

// The coded form's own checks (a checkpoint's message and the daemon's kept payloads go through
// them): the right size, finite ranges >= 0, integer codes < 2^R.
TEST(QuantizedGossip, CodedMessagesAreCheckedWhereTheyAreRead) {
  const int d = 3, bits = 2;
  Vec values;
  const Vec good = (Vec(4) << 0.5, 0, 3, 1).finished();
  ASSERT_TRUE(algorithms::QuantizedGossip::DecodeCoded(good, d, 1, bits, &values));
  // delta = 2 * 0.5 / 4 = 0.25: points -0.375, -0.125, 0.125, 0.375.
  EXPECT_TRUE(values == (Vec(3) << -0.375, 0.375, -0.125).finished());
  auto bad = [&](int at, double value) {
    Vec v = good;
    v[at] = value;
    return !algorithms::QuantizedGossip::DecodeCoded(v, d, 1, bits, &values);
  };
  EXPECT_TRUE(bad(0, -0.5));
  EXPECT_TRUE(bad(0, std::nan("")));
  EXPECT_TRUE(bad(0, INFINITY));
  EXPECT_TRUE(bad(1, 4));  // 2^R
  EXPECT_TRUE(bad(2, -1));
  EXPECT_TRUE(bad(3, 1.5));
  EXPECT_TRUE(bad(3, std::nan("")));
  EXPECT_FALSE(algorithms::QuantizedGossip::DecodeCoded(good, d + 1, 1, bits, &values));
  EXPECT_FALSE(algorithms::QuantizedGossip::DecodeCoded(good, d, 2, bits, &values));
  EXPECT_FALSE(algorithms::QuantizedGossip::DecodeCoded(good, d, 1, 31, &values));
  // A range of 0 decodes to zeros whatever the codes.
  EXPECT_TRUE(algorithms::QuantizedGossip::DecodeCoded((Vec(4) << 0, 3, 3, 0).finished(), d, 1,
                                                       bits, &values));
  EXPECT_TRUE(values == Vec::Zero(3));
  // A checkpoint whose message is not a coded message of this run is refused on load.
  Network net = MakeNetwork(topology::Ring(4), d, 2);
  auto dgd = algorithms::MakeRoundAlgorithm(Options("dgd", 0.2, bits), net.setups[0]);
  algorithms::AlgorithmState state;
  ASSERT_TRUE(dgd->SaveState(&state));
  ASSERT_EQ(state.vectors[1], dgd->OutgoingGossip()->coded());
  state.vectors[1][2] = 7;  // a code >= 2^R
  EXPECT_THROW(dgd->LoadState(state), std::invalid_argument);
}

}  // namespace
}  // namespace starling
