// Differential quantization (arXiv:2002.02508): the uniform range quantizer against
// its formula, DQ-GD's identity "the compensated point is exact GD", and naive quantization's
// floor with a fixed range.
#include "algorithms/compression/dq_gd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "algorithms/compression/range_quantizer.h"

namespace starling {
namespace {

using algorithms::QuantizedGd;
using algorithms::QuantizedGdOptions;
using algorithms::RangeQuantizer;

// Q(v) is the nearest of the 2^R cell midpoints -r + (2r/2^R)(k + 1/2) (found here by scanning
// all of them), within r 2^-R of v inside the range; outside it saturates and is counted.
TEST(RangeQuantizer, IsTheNearestMidpointAndCountsSaturation) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> uniform(-1.5, 1.5);
  for (int bits : {1, 2, 3, 5, 8}) {
    const RangeQuantizer q(bits);
    const double r = 0.7;
    const int levels = 1 << bits;
    const double delta = 2 * r / levels;
    Vec v(400);
    for (Eigen::Index k = 0; k < v.size(); ++k) v[k] = uniform(rng);
    Vec out;
    const int saturated = q.Quantize(v, r, &out);
    int outside = 0;
    for (Eigen::Index k = 0; k < v.size(); ++k) {
      double best = 0, best_dist = std::numeric_limits<double>::infinity();
      for (int j = 0; j < levels; ++j) {
        const double mid = -r + delta * (j + 0.5);
        if (std::abs(mid - v[k]) < best_dist) best_dist = std::abs(mid - v[k]), best = mid;
      }
      EXPECT_NEAR(out[k], best, 1e-12) << "bits " << bits << " v " << v[k];
      if (std::abs(v[k]) <= r) {
        EXPECT_LE(std::abs(out[k] - v[k]), r * std::ldexp(1.0, -bits) + 1e-15);
      } else {
        ++outside;
      }
    }
    EXPECT_EQ(saturated, outside);
    EXPECT_GT(outside, 0);
  }
  EXPECT_THROW(RangeQuantizer(0), std::invalid_argument);
  EXPECT_THROW(RangeQuantizer(31), std::invalid_argument);
}

// f(x) = 1/2 (x - c)^T H (x - c) with H diagonal in [mu, L].
struct Quadratic {
  Vec h, c;
  void Gradient(const Vec& x, Vec* g) const { *g = h.cwiseProduct(x - c); }
};

Quadratic MakeQuadratic(int d, double mu, double L) {
  Quadratic f;
  f.h = Vec::LinSpaced(d, mu, L);
  f.c = Vec::LinSpaced(d, -1.0, 2.0);
  return f;
}

// [DERIVED] x_t = xh_t + eta e_{t-1} follows x_{t+1} = x_t - eta grad f(x_t) exactly, at any
// number of bits and even when messages saturate: compare with GD run here directly.
TEST(QuantizedGd, DifferentialCompensatedPointIsExactGd) {
  const Quadratic f = MakeQuadratic(6, 0.1, 1.0);
  const double eta = 2.0 / 1.1;
  const Vec x0 = Vec::Zero(6);
  for (int bits : {1, 3, 8}) {
    QuantizedGd dq({eta, bits, 1.0, 0.95, true}, x0);
    Vec x = x0;
    for (int t = 0; t < 60; ++t) {
      dq.Step([&](const Vec& p, Vec* g) { f.Gradient(p, g); });
      Vec g;
      f.Gradient(x, &g);
      x -= eta * g;
      ASSERT_LE((dq.worker_point() - x).lpNorm<Eigen::Infinity>(), 1e-12 * (1 + x.norm()))
          << "bits " << bits << " step " << t;
    }
    EXPECT_EQ(dq.bits_sent(), 60LL * bits * 6);
  }
}

// The server iterate of DQ-GD contracts at about sigma_GD = (kappa-1)/(kappa+1) when the range
// schedule is wide enough (no saturation), while naive quantized GD with a fixed range stalls at
// an error floor of the order eta * r 2^-R / mu... and above 1e-6 here.
TEST(QuantizedGd, DifferentialReachesGdRateNaiveFixedRangeStalls) {
  const double mu = 0.1, L = 1.0;
  const Quadratic f = MakeQuadratic(6, mu, L);
  const double eta = 2.0 / (mu + L), sigma = (L - mu) / (L + mu);
  const Vec x0 = Vec::Zero(6);
  const int steps = 150;
  const double r0 = 2 * L * (x0 - f.c).lpNorm<Eigen::Infinity>();
  QuantizedGd dq({eta, 4, r0, std::max(sigma, 4 * std::ldexp(1.0, -4)), true}, x0);
  QuantizedGd naive({eta, 4, r0, 1.0, false}, x0);
  for (int t = 0; t < steps; ++t) {
    dq.Step([&](const Vec& p, Vec* g) { f.Gradient(p, g); });
    naive.Step([&](const Vec& p, Vec* g) { f.Gradient(p, g); });
  }
  EXPECT_EQ(dq.saturated(), 0);
  const double e0 = (x0 - f.c).norm();
  const double dq_factor = std::pow((dq.server_iterate() - f.c).norm() / e0, 1.0 / steps);
  EXPECT_LT(dq_factor, sigma + 0.01) << "sigma_GD " << sigma;
  EXPECT_GT((naive.server_iterate() - f.c).norm(), 1e-6);
}

}  // namespace
}  // namespace starling
