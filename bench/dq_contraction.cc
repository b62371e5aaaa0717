// Differential quantization, one channel: one worker, one server, least squares with condition
// number kappa; the worker sends R bits per coordinate per step through the uniform range quantizer
// whose range shrinks as r_t = r_0 gamma^t. For R = 1..8 it prints the empirical contraction factor
// (||xh_T - x*|| / ||xh_0 - x*||)^(1/T) of unquantized GD, DQ-GD and naive quantized GD (each
// quantized method with the smallest gamma on a grid for which no coordinate ever saturated),
// and the relative error floor of naive quantized GD with a fixed range (gamma = 1).
// Usage: starling-bench-dq [--kappa K] [--dim D] [--rows N] [--steps T] [--seed S] [--csv]
#include <Eigen/QR>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "algorithms/compression/dq_gd.h"

using starling::Vec;
using starling::algorithms::QuantizedGd;
using starling::algorithms::QuantizedGdOptions;
using Matrix = Eigen::MatrixXd;

namespace {

struct LeastSquares {
  Matrix a;
  Vec b, x_star;
  double mu = 0, lip = 0;
  // f(x) = ||A x - b||^2 / (2 n)
  void Gradient(const Vec& x, Vec* g) const { *g = a.transpose() * (a * x - b) / a.rows(); }
};

// A = U diag(s) V^T with Haar-like U, V (QR of Gaussians) and s^2 / n evenly spread on [1, kappa].
LeastSquares MakeInstance(int rows, int dim, double kappa, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  auto gaussian = [&](int r, int c) {
    Matrix m(r, c);
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < c; ++j) m(i, j) = normal(rng);
    return m;
  };
  const Matrix u = Eigen::HouseholderQR<Matrix>(gaussian(rows, dim)).householderQ() *
                   Matrix::Identity(rows, dim);
  const Matrix v = Eigen::HouseholderQR<Matrix>(gaussian(dim, dim)).householderQ();
  Vec s(dim);
  for (int j = 0; j < dim; ++j) s[j] = std::sqrt(rows * (1.0 + (kappa - 1.0) * j / (dim - 1)));
  LeastSquares p;
  p.a = u * s.asDiagonal() * v.transpose();
  p.b = p.a * gaussian(dim, 1).col(0) + 0.1 * gaussian(rows, 1).col(0);
  const Matrix h = p.a.transpose() * p.a / rows;
  p.x_star = h.ldlt().solve(p.a.transpose() * p.b / rows);
  p.mu = 1.0;
  p.lip = kappa;
  return p;
}

struct Run {
  double factor = NAN, final_rel = NAN, gamma = NAN;
  long saturated = 0;
};

Run RunQuantized(const LeastSquares& p, const QuantizedGdOptions& o, int steps) {
  const Vec x0 = Vec::Zero(p.x_star.size());
  QuantizedGd gd(o, x0);
  auto grad = [&](const Vec& x, Vec* g) { p.Gradient(x, g); };
  for (int t = 0; t < steps; ++t) gd.Step(grad);
  Run r;
  r.final_rel = (gd.server_iterate() - p.x_star).norm() / (x0 - p.x_star).norm();
  r.factor = std::pow(r.final_rel, 1.0 / steps);
  r.saturated = gd.saturated();
  r.gamma = o.gamma;
  return r;
}

// The smallest gamma on {0.10, 0.105, ..., 0.995, 1} with no saturation in `steps` steps.
Run BestSchedule(const LeastSquares& p, QuantizedGdOptions o, int steps) {
  for (int k = 0; k <= 180; ++k) {
    o.gamma = k == 180 ? 1.0 : 0.10 + 0.005 * k;
    const Run r = RunQuantized(p, o, steps);
    if (r.saturated == 0) return r;
  }
  return Run{};
}

}  // namespace

int main(int argc, char** argv) {
  double kappa = 100;
  int dim = 20, rows = 200, steps = 500;
  unsigned seed = 1;
  bool csv = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) std::exit((std::fprintf(stderr, "%s needs a value\n", a.c_str()), 2));
      return argv[++i];
    };
    if (a == "--kappa")
      kappa = std::atof(next());
    else if (a == "--dim")
      dim = std::atoi(next());
    else if (a == "--rows")
      rows = std::atoi(next());
    else if (a == "--steps")
      steps = std::atoi(next());
    else if (a == "--seed")
      seed = std::atoi(next());
    else if (a == "--csv")
      csv = true;
    else
      return std::fprintf(stderr, "unknown option %s\n", a.c_str()), 2;
  }
  if (!(kappa > 1) || dim < 2 || rows < dim || steps < 1) {
    return std::fprintf(stderr, "need kappa > 1, 2 <= dim <= rows, steps >= 1\n"), 2;
  }
  const LeastSquares p = MakeInstance(rows, dim, kappa, seed);
  const double eta = 2.0 / (p.mu + p.lip), sigma = (kappa - 1) / (kappa + 1);
  // r_0 covers the first message exactly: u_0 = grad f(x_0) for both methods.
  Vec g0;
  p.Gradient(Vec::Zero(dim), &g0);
  const double r0 = g0.lpNorm<Eigen::Infinity>();
  // Unquantized GD.
  Vec x = Vec::Zero(dim), g;
  for (int t = 0; t < steps; ++t) p.Gradient(x, &g), x -= eta * g;
  const double gd_factor = std::pow((x - p.x_star).norm() / p.x_star.norm(), 1.0 / steps);
  if (csv) {
    std::printf("bits,sigma_gd,gd,dq,dq_gamma,naive,naive_gamma,naive_fixed_floor\n");
  } else {
    std::printf("kappa %g, d %d, n %d, T %d, eta 2/(mu+L), sigma_GD %.4f, r0 %.3g\n", kappa, dim,
                rows, steps, sigma, r0);
    std::printf(
        "| R | 2^-R | GD factor | DQ-GD factor (gamma) | naive factor (gamma) | "
        "naive fixed-range rel. error |\n|---|---|---|---|---|---|\n");
  }
  for (int bits = 1; bits <= 8; ++bits) {
    const Run dq = BestSchedule(p, {eta, bits, r0, 1.0, true}, steps);
    const Run naive = BestSchedule(p, {eta, bits, r0, 1.0, false}, steps);
    const Run fixed = RunQuantized(p, {eta, bits, r0, 1.0, false}, steps);
    if (csv) {
      std::printf("%d,%.6f,%.6f,%.6f,%.4f,%.6f,%.4f,%.3e\n", bits, sigma, gd_factor, dq.factor,
                  dq.gamma, naive.factor, naive.gamma, fixed.final_rel);
    } else {
      std::printf("| %d | %.4f | %.4f | %.4f (%.3f) | %.4f (%.3f) | %.2e |\n", bits,
                  std::ldexp(1.0, -bits), gd_factor, dq.factor, dq.gamma, naive.factor, naive.gamma,
                  fixed.final_rel);
    }
  }
  return 0;
}
