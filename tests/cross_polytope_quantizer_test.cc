// vqSGD's cross-polytope quantizer against its formulas (arXiv:1911.07971): the
// sampling distribution of a small vector against the hand-computed probabilities, unbiasedness
// with a tolerance from the exact per-coordinate variance, the norm bound, the second moment
// (d - 1)||g||^2 / S, the wire form and the rejects of malformed bytes.
#include "algorithms/compression/cross_polytope_quantizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace starling::algorithms {
namespace {

using Q = CrossPolytopeQuantizer;

// g = (3, -4, 0): ||g|| = 5, v = (0.6, -0.8, 0), ||v||_1 = 1.4, r = 1 - 1.4/sqrt(3).
std::vector<double> HandProbabilities() {
  const double root = std::sqrt(3.0), spread = (1.0 - 1.4 / root) / 6.0;
  return {0.6 / root + spread, spread, spread, 0.8 / root + spread, spread, spread};
}

TEST(CrossPolytope, ProbabilitiesOfASmallVectorMatchTheFormula) {
  std::vector<double> p;
  Q::Probabilities(Vec((Vec(3) << 3, -4, 0).finished()), &p);
  const std::vector<double> want = HandProbabilities();
  ASSERT_EQ(p.size(), want.size());
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], want[i], 1e-15) << i;
}

// Chi-square of 60000 single samples against the hand probabilities: 5 degrees of freedom,
// 20.5 is the 0.999 quantile, so a correct sampler fails one run in a thousand.
TEST(CrossPolytope, SamplesFollowTheFormulaDistribution) {
  const Vec g = (Vec(3) << 3, -4, 0).finished();
  std::mt19937_64 rng(11);
  const int n = 60000;
  std::vector<double> count(6, 0.0);
  for (int t = 0; t < n; ++t) count[Q::Encode(g, 1, &rng).codes[0]] += 1;
  const std::vector<double> p = HandProbabilities();
  double chi2 = 0;
  for (int i = 0; i < 6; ++i) chi2 += std::pow(count[i] - n * p[i], 2) / (n * p[i]);
  EXPECT_LT(chi2, 20.5);
}

// The mean of N decodings against g, per coordinate within 5 standard errors; the variance of
// one sample's coordinate k is d ||g||^2 (p(+k) + p(-k)) - g_k^2 (its square is d ||g||^2 when
// k is drawn, 0 otherwise). Also the second moment E||Q(g) - g||^2 = (d - 1)||g||^2 / S.
TEST(CrossPolytope, DecodingsAreUnbiasedWithTheStatedVariance) {
  const int d = 16, n = 20000, s = 2;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal;
  Vec g(d);
  for (int k = 0; k < d; ++k) g[k] = normal(rng) + (k < 3 ? 2.0 : 0.0);
  Vec sum = Vec::Zero(d), q;
  double err2 = 0;
  for (int t = 0; t < n; ++t) {
    ASSERT_TRUE(Q::Decode(Q::Encode(g, s, &rng), d, &q));
    sum += q;
    err2 += (q - g).squaredNorm();
  }
  std::vector<double> p;
  Q::Probabilities(g, &p);
  const double g2 = g.squaredNorm();
  for (int k = 0; k < d; ++k) {
    const double var = (d * g2 * (p[2 * k] + p[2 * k + 1]) - g[k] * g[k]) / s;
    EXPECT_NEAR(sum[k] / n, g[k], 5 * std::sqrt(var / n)) << "coordinate " << k;
  }
  // ||Q - g||^2 is bounded by (sqrt(d) + 1)^2 ||g||^2: Hoeffding at 5 * range / sqrt(n) is far
  // beyond chance; a variance off by a factor of 1.2 would still be caught.
  const double want = (d - 1) * g2 / s;
  EXPECT_NEAR(err2 / n, want, 5 * std::pow(std::sqrt(d) + 1, 2) * g2 / std::sqrt(n) / 3);
}

TEST(CrossPolytope, DecodedNormIsAtMostSqrtDTimesTheNorm) {
  const int d = 9;
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> uniform(-1, 1);
  Vec g(d), q;
  for (int trial = 0; trial < 200; ++trial) {
    for (int k = 0; k < d; ++k) g[k] = uniform(rng);
    ASSERT_TRUE(Q::Decode(Q::Encode(g, 1, &rng), d, &q));
    EXPECT_NEAR(q.norm(), std::sqrt(d) * g.norm(), 1e-12);  // one sample: exactly on the sphere
    ASSERT_TRUE(Q::Decode(Q::Encode(g, 4, &rng), d, &q));
    EXPECT_LE(q.norm(), std::sqrt(d) * g.norm() * (1 + 1e-12));
    EXPECT_EQ((q.array() != 0).count() <= 4, true);
  }
  ASSERT_TRUE(Q::Decode(Q::Encode(Vec::Zero(d), 3, &rng), d, &q));
  EXPECT_EQ(q, Vec::Zero(d));
}

TEST(CrossPolytope, MessageBitsAreOneSignBitPlusTheIndexBitsAndTheNorm) {
  EXPECT_EQ(Q::CodeBits(124), 1 + 7);  // ceil(log2 124) = 7
  EXPECT_EQ(Q::CodeBits(128), 1 + 7);
  EXPECT_EQ(Q::CodeBits(129), 1 + 8);
  EXPECT_EQ(Q::MessageBits(124, 12), 64 + 12 * 8);
}

TEST(CrossPolytope, PackedMessagesRoundTripAndMalformedBytesAreRejected) {
  const int d = 5, s = 3;  // 4-bit codes: 8 + 2 bytes
  CrossPolytopeMessage m{2.5, {0, 9, 4}}, back;
  std::string bytes;
  Q::Pack(m, d, &bytes);
  ASSERT_EQ(bytes.size(), 8u + 2u);
  ASSERT_TRUE(Q::Unpack(bytes, d, s, &back));
  EXPECT_EQ(back.norm, 2.5);
  EXPECT_EQ(back.codes, m.codes);
  Vec q;
  ASSERT_TRUE(Q::Decode(back, d, &q));
  const double step = 2.5 * std::sqrt(5.0) / 3;
  EXPECT_EQ(q, (Vec(5) << step, 0, step, 0, -step).finished());

  // S is the spec's, known to both sides; 5 codes need 3 bytes, not 2.
  EXPECT_FALSE(Q::Unpack(bytes, d, s + 2, &back));
  EXPECT_FALSE(Q::Unpack(bytes.substr(0, 9), d, s, &back));  // truncated
  EXPECT_FALSE(Q::Unpack(bytes + '\0', d, s, &back));        // trailing byte
  std::string high = bytes;
  high[9] = static_cast<char>(high[9] | 0x10);  // unused bits of the last byte
  EXPECT_FALSE(Q::Unpack(high, d, s, &back));
  std::string big = bytes;
  big[8] = static_cast<char>((big[8] & 0xf0) | 10);  // code 10 = -e_5 of a 5-vector: out of range
  EXPECT_FALSE(Q::Unpack(big, d, s, &back));
  for (double norm :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(), -1.0}) {
    CrossPolytopeMessage bad{norm, {0, 1, 2}};
    Q::Pack(bad, d, &bytes);
    EXPECT_FALSE(Q::Unpack(bytes, d, s, &back)) << norm;
    EXPECT_FALSE(Q::Decode(bad, d, &q)) << norm;
  }
  EXPECT_FALSE(Q::Decode(CrossPolytopeMessage{1.0, {}}, d, &q));
  EXPECT_FALSE(Q::Decode(CrossPolytopeMessage{1.0, {10}}, d, &q));
}

}  // namespace
}  // namespace starling::algorithms
