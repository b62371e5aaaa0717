// Network-DANE, Network-SVRG and Network-SARAH (Li, Chen, Chi, Yang; arXiv:1909.05844;
// as in the authors' network_optimizer.py / NetworkDANE.py / NetworkSVRG.py /
// NetworkSARAH.py). Every node holds x_i, the tracker s_i and g_prev = grad f_i(y_i):
//   init:  x = y = x0;  s = grad f_i(y);  g_prev = s
//   iteration t: n_mix sequential exchanges of (x, s), mixing x with W and s with the lazy
//     W_s = c W + (1 - c) I (c: RoundOptions::tracker_lazy_c), which gives W^n_mix and W_s^n_mix:
//     y = (W^n_mix x)_i;  s = (W_s^n_mix s)_i + grad f_i(y) - g_prev;  g_prev = grad f_i(y)
//     x = LocalUpdate(y, s)
// LocalUpdate:
//   Network-DANE: argmin_z f_i(z) - <grad f_i(y) - s, z> + (mu/2)||z - y||^2, exactly where the
//     problem has a closed form (least squares: a cached Cholesky factor), else Nesterov's method
//     for strongly convex functions from y, constants (L + mu, sigma + mu), --inner-steps
//     iterations (default 100), returning the last gradient-step point.
//   Network-SVRG: u = y, v = s; K_in times: u -= eta v; Z = b rows drawn uniformly with
//     replacement; v = g_Z(u) - g_Z(y) + s + mu (u - y).  x = u.
//   Network-SARAH: the same with v = v + g_Z(u) - g_Z(u_prev) + mu (u - y) (as the
//     authors' NetworkSARAH.py has it).
//   g_Z is the unbiased mini-batch gradient of f_i (Problem::BatchGradient), b = batch_size (1 if
//   0), K_in = --inner-steps (default below, ResolveInnerSteps), eta = the resolved step (0.1/L
//   default).
// Invariant (tests): sum_i s_i = sum_i grad f_i(y_i) after every iteration.
//
// Steps (StepKey): iteration t's exchanges are (t, 0, 0..n_mix-1), payload [x; s]. Counters follow
// the reference code: comm_rounds += n_mix per iteration; vectors_sent += 2 n_mix; gradient_passes
// counts full local gradients plus sample gradients / m_i.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "algorithms/round/round_algorithm.h"

namespace starling::algorithms {

// The family's own parameters, shared by the three variants (--dane-mu, --mix-rounds,
// --inner-steps; NetworkDaneParamTable() in network_dane.cc).
struct NetworkDaneParams {
  double mu = kAutomatic;  // the proximal weight of the local problem; -1 = automatic
  int mix_rounds = 1;      // n_mix exchanges of (x, s) per iteration
  int inner_steps = 0;     // K_in (SVRG/SARAH) or Nesterov iterations (DANE); 0 = automatic
  static constexpr double kAutomatic = -1.0;
};
const ParamTable<NetworkDaneParams>& NetworkDaneParamTable();

// The automatic values, resolved from run-wide facts only (L, the mean shard size M/N), so that
// every node resolves them alike (docs/explanations/algorithms/network-dane.md):
//   Network-DANE mu = kDaneMuFactor * L * min(1, sqrt(d / (M/N))): of the order of the gap
//     beta = max_i ||H_i - H|| between local and global Hessians, which the DANE analysis puts
//     at about L sqrt(d/m) for i.i.d. shards of m rows; DANE needs mu of that order where the
//     local problems differ (mu = 0 settled at relative gap 20-100 with 40-row shards of
//     logistic regression, above f(0)), while a larger mu only slows it (a9a, 6,100-row shards:
//     1e-6 in 6 iterations at mu = 0, 24 at this default, 52 at 0.1 L). SVRG/SARAH: mu = 0 (the
//     reference code).
//   Network-SVRG/SARAH K_in = max(ceil(0.05 M/N), kMinInnerSteps): the reference experiments'
//     5% of a node's rows, but at least their 50 (eta K_in L = 5 at eta = 0.1/L); one inner step
//     on small shards made SVRG equal to SARAH and stall.
//   Network-DANE Nesterov iterations: 100 (the reference code's local_n_iters).
inline constexpr double kDaneMuFactor = 0.3;
// The automatic mu is far too large where the local problems are small: a warning at start
// (NetworkDaneWarnings) when the mean shard M/N has at most kDaneSmallShardRatio * d rows, with
// the automatic value divided by kDaneSmallShardDivisor to try. Measured with starling-sim,
// logistic regression, l2 1e-3, 16 nodes, ER(0.3), rounds to a relative gap of 1e-6: breast
// cancer (455 rows, d = 30, 28 rows a node) not in 3000 at the automatic 1.83 (3.6e-4 left),
// 380 at 1.83/20, 290 at 0.061; a9a's first 2000 rows (125 a node, d = 123) 1670 at the
// automatic 0.49, 200 at 0.03; its first 4000 (250 a node) 1140 at the automatic 0.34, 180 at
// 0.02. A mu 60 times below the automatic one on the breast-cancer shards (0.03) was still at
// 0.009 after 3000 rounds (the local problems too flat): the hint is a warning, not a default.
inline constexpr double kDaneSmallShardRatio = 4.0;
inline constexpr double kDaneSmallShardDivisor = 20.0;
inline constexpr int kMinInnerSteps = 50;
// `dim` is the model's dimension d (the same on every node).
double ResolveDaneMu(const RoundOptions& options, const NetworkDaneParams& params,
                     bool dane_variant, int dim);
// `local_samples` serves only hand-built options without mean_shard_samples (tests).
int ResolveInnerSteps(const RoundOptions& options, const NetworkDaneParams& params,
                      bool dane_variant, int local_samples);

class NetworkDane : public RoundAlgorithm {
 public:
  enum class Variant { kDane, kSvrg, kSarah };

  // `step` is eta for SVRG/SARAH (ignored by DANE). Uses options.smoothness, strong_convexity,
  // tracker_lazy_c and batch_size. Throws std::invalid_argument on a bad parameter (mix_rounds <
  // 1, negative mu, no smoothness bound for DANE's iterative solver, a lazy factor outside (0, 1]).
  NetworkDane(const NodeSetup& setup, const RoundOptions& options, const NetworkDaneParams& params,
              Variant variant, double step);

  std::string name() const override;
  StepKey key() const override { return {iteration_, 0, subround_}; }
  const Vec& Outgoing() const override { return outgoing_; }
  void Advance(const std::vector<const Vec*>& inbox) override;
  int64_t iteration() const override { return iteration_; }
  const Vec& Model() const override { return x_; }
  AlgorithmCounters counters() const override;
  // Checkpoints hold x, y, s, g_prev, the half-mixed payload of the iteration in progress and the
  // sampling engine; the local solvers finish inside Advance(), so no inner-loop state is ever
  // pending between steps.
  bool SaveState(AlgorithmState* state) const override;
  void LoadState(const AlgorithmState& state) override;
  // The tracker s_i (for the invariant test) and the averaged point y_i.
  const Vec& tracker() const { return s_; }
  const Vec& averaged() const { return y_; }

 private:
  void LocalUpdate();
  void SolveDaneByNesterov();
  void VarianceReducedSteps();

  NodeSetup setup_;
  Variant variant_;
  double step_, mu_, smoothness_, sigma_, lazy_c_;
  int mix_rounds_, inner_steps_, batch_;
  std::mt19937_64 rng_;
  int64_t iteration_ = 0;
  int subround_ = 0;
  double passes_ = 0.0;
  Vec x_, y_, s_, g_prev_, outgoing_, mixed_;
  // Scratch for the local solvers.
  Vec shift_, u_, u_prev_, v_, g_a_, g_b_, nag_y_, nag_y_prev_;
  std::vector<int> samples_;
};

}  // namespace starling::algorithms
