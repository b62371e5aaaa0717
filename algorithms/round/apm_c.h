// APM-C, the accelerated penalty method with Chebyshev-accelerated consensus of Li, Fang, Yin and
// Lin (arXiv:1810.01053, Algorithm 2), run as the OPTRA authors run it as their baseline
// (their APM_C.m, non-strongly-convex branch). With W' = I - Lap/lambda_max
// and eta = (1 - sqrt(1 - l2^2)) / (1 + sqrt(1 - l2^2)), l2 = 1 - lambda2/lambda_max the second
// largest eigenvalue of W', every node runs
//   theta_1 = 1, theta_{k+1} = (sqrt(theta_k^4 + 4 theta_k^2) - theta_k^2) / 2
//   iteration k = 1, 2, ...:
//     Y  = X + theta_{k+1} (1 - theta_k) / theta_k (X - X_old)
//     Z0 = Y - grad f_i(Y) / L                                       (1 local gradient)
//     T_k = ceil(c log(k) / sqrt(1 - l2)) rounds of
//       Z <- (1 + eta) W'Z - eta Z_old        (Z = Z_old = Z0 at the start; one exchange each)
//     X_old = X;  X = (L theta_{k+1}^2 Z0 + beta0 Z) / (L theta_{k+1}^2 + beta0)
// with (W'Z)_i = Z_i - (Z_i - sum_j W_ij Z_j) / lambda_max, c = --apmc-inner-const (0.2 in the
// authors' runs) and beta0 = --apmc-beta0 (1e4).
//
// Steps (StepKey): iteration k's rounds are (k, 0, 1..T_k). T_1 = 0 (log 1 = 0): iteration 1 mixes
// nothing, but the node still exchanges Z0 once at (1, 0, 0) and ignores what it receives, so that
// every iteration is a step the drivers can wait on; that exchange is in vectors_sent but not in
// comm_rounds, which counts the paper's T_k per iteration. The gradient of iteration k + 1 is
// taken as soon as iteration k completes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/round/round_algorithm.h"

namespace starling::algorithms {

// APM-C's own parameters (--apmc-beta0, --apmc-inner-const; ApmCParamTable() in apm_c.cc).
struct ApmCParams {
  double beta0 = 1e4;
  double inner_const = 0.2;
};
const ParamTable<ApmCParams>& ApmCParamTable();

class ApmC : public RoundAlgorithm {
 public:
  // Uses options.smoothness (L > 0), laplacian_lambda2 < laplacian_lambda_max, params.beta0 > 0
  // and params.inner_const > 0. Throws std::invalid_argument naming the bad value.
  ApmC(const NodeSetup& setup, const RoundOptions& options, const ApmCParams& params);

  std::string name() const override { return "apm-c"; }
  StepKey key() const override { return {iteration_ + 1, 0, subround_}; }
  const Vec& Outgoing() const override { return z_; }
  void Advance(const std::vector<const Vec*>& inbox) override;
  int64_t iteration() const override { return iteration_; }
  const Vec& Model() const override { return x_; }
  AlgorithmCounters counters() const override;
  bool SaveState(AlgorithmState* state) const override;
  void LoadState(const AlgorithmState& state) override;

  // T_k, the consensus rounds of iteration k >= 1.
  int InnerRounds(int64_t k) const;

 private:
  // Begins iteration iteration_ + 1: extrapolation, gradient step, T_k.
  void BeginIteration();
  void FinishIteration();

  NodeSetup setup_;
  double l_, beta0_, inner_const_, lambda_max_, eta_, root_gap_;
  double theta_ = 1.0, theta_next_ = 1.0;
  int64_t iteration_ = 0;
  int rounds_ = 0;    // T_k of the iteration in progress
  int subround_ = 0;  // 1..T_k, or 0 for the unmixed exchange of a T_k = 0 iteration
  int64_t comm_rounds_ = 0, vectors_sent_ = 0;
  double passes_ = 0.0;
  Vec x_, x_old_, y_, grad_, z0_, z_, z_old_, mixed_, next_;
};

}  // namespace starling::algorithms
