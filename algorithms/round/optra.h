// OPTRA, the accelerated primal-dual method of Xu, Tian, Sun and Scutari (arXiv:1910.10666;
// transcribed from the authors' OPTRA.m), with Chebyshev-accelerated gossip (the authors'
// AccGossip.m).
//
// Every node runs, with L~ = P_K(Lap) the Chebyshev gossip operator over Lap = I - W:
//   setup:  X = H = x0, Y = 0, Yhat = tau L~ X                       (K exchanges of X)
//   iteration k = 1, 2, ...:
//     theta' = (sqrt(theta^4 + 4 theta^2) - theta^2) / 2
//     a = theta'/theta - theta', sigma = 1/theta', T_k = tau/theta, beta = theta/theta'
//     V  = X - gamma (grad f_i(X) + Yhat)                            (1 local gradient)
//     H' = V - c2 (L~ V)                                             (phase 0: K exchanges of V)
//     X  = H' + a (H' - H);  Xhat = sigma X + (1 - sigma) H'
//     Y' = Y + T_k (L~ Xhat)                                         (phase 1: K exchanges of Xhat)
//     Yhat = Y' + beta (Y' - Y);  H = H';  Y = Y'
// with gamma = nu / (nu L + T + 1) and tau = c2 / (nu (T + 1)): the steps depend on the horizon T,
// which every node must know in advance. Iterations past T continue the same recursion.
//
// Steps (StepKey): the setup phase is (0, 0, 1..K); iteration k is (k, 0, 1..K) then (k, 1, 1..K).
// The local gradient of iteration k is taken as soon as iteration k-1 (or the setup) completes, so
// that V is ready to send. Model() is X of the last completed iteration. Counters: comm_rounds
// follows the paper, 2K per completed iteration (the K setup exchanges are counted in
// vectors_sent only); gradient_passes counts the gradients actually taken, so it runs one ahead of
// iteration() (the gradient of the iteration in progress).
#pragma once

#include <Eigen/Core>
#include <utility>
#include <vector>

#include "algorithms/round/round_algorithm.h"

namespace starling::algorithms {

// Run-wide constants of the Chebyshev gossip operator (AccGossip.m) for a Laplacian
// Lap = I - W with extreme non-zero eigenvalues lambda2 < lambda_max:
//   gamma = lambda2 / lambda_max, c1 = (1 + gamma) / (1 - gamma), c3 = 2 / (lambda2 + lambda_max),
//   a_0 = 1, a_1 = c1, a_{k+1} = 2 c1 a_k - a_{k-1},
//   L~ v = v - z_K / a_K with z_0 = v, z_1 = c1 (v - c3 Lap v),
//   z_{k+1} = 2 c1 (z_k - c3 Lap z_k) - z_{k-1}.
// Throws std::invalid_argument unless 0 < lambda2 < lambda_max and steps >= 1.
struct ChebyshevCoefficients {
  ChebyshevCoefficients(double lambda2, double lambda_max, int steps);

  int steps = 1;  // K, the number of exchanges per application
  double gamma = 0.0, c1 = 0.0, c3 = 0.0;
  std::vector<double> a;  // a_0 .. a_K
};

// One node's share of one application of L~ to a distributed vector v (one row per node): K
// sequential exchanges of z_k. Usage: Start(v); then, while !done(), send Outgoing() to every
// neighbour and call Advance(w_z) with w_z = (W z)_i, the mixing of the received z's (e.g. by
// MixSegment); then Result() is (L~ v)_i.
class ChebyshevGossip {
 public:
  explicit ChebyshevGossip(ChebyshevCoefficients coefficients) : c_(std::move(coefficients)) {}

  void Start(const Vec& v);
  // 1..K while running; the subround of the exchange Outgoing() belongs to.
  int subround() const { return subround_; }
  bool done() const { return subround_ > c_.steps; }
  const Vec& Outgoing() const { return z_; }
  void Advance(const Vec& w_z);
  const Vec& Result() const { return result_; }
  // Checkpoints: appends the state to `state` / reads it back from the given positions
  // (returns the next vector position).
  void Save(AlgorithmState* state) const;
  size_t Load(const AlgorithmState& state, size_t int_at, size_t vector_at);

 private:
  ChebyshevCoefficients c_;
  int subround_ = 0;
  Vec v_, z_prev_, z_, z_next_, result_;
};

// The dense matrix P_K(Lap) that ChebyshevGossip applies (for tests and for spectra), computed
// in closed form from the eigendecomposition of the symmetric `laplacian`:
//   P_K(lambda) = 1 - T_K(c1 (1 - c3 lambda)) / T_K(c1), T_K the Chebyshev polynomial.
Eigen::MatrixXd ChebyshevGossipMatrix(const ChebyshevCoefficients& coefficients,
                                      const Eigen::MatrixXd& laplacian);

// OPTRA's own parameters (--optra-nu, --optra-inner, --horizon; OptraParamTable() in optra.cc).
struct OptraParams {
  double nu = 100.0;
  int inner = 4;        // 2K, gossip exchanges per iteration (even, >= 2)
  int64_t horizon = 0;  // T, which the steps depend on; 0 = the run's iterations
};
const ParamTable<OptraParams>& OptraParamTable();

class Optra : public RoundAlgorithm {
 public:
  // Uses params (nu > 0, 2K even and >= 2, the horizon T >= 1, already resolved from 0),
  // options.smoothness (L) and laplacian_lambda2 < laplacian_lambda_max (of Lap = I - W). Throws
  // std::invalid_argument naming the parameter on a bad value.
  Optra(const NodeSetup& setup, const RoundOptions& options, const OptraParams& params);

  std::string name() const override { return "optra"; }
  StepKey key() const override;
  const Vec& Outgoing() const override { return gossip_.Outgoing(); }
  void Advance(const std::vector<const Vec*>& inbox) override;
  int64_t iteration() const override { return iteration_; }
  const Vec& Model() const override { return x_; }
  AlgorithmCounters counters() const override;
  bool SaveState(AlgorithmState* state) const override;
  void LoadState(const AlgorithmState& state) override;

 private:
  enum class Phase { kSetup, kPrimal, kDual };
  void StartIteration();

  NodeSetup setup_;
  int steps_ = 1;  // K
  ChebyshevGossip gossip_;
  double c2_ = 0.0, step_ = 0.0, tau_ = 0.0;
  double theta_ = 1.0;
  // This iteration's scalars: extrapolation a, sigma_k, T_k, beta_k.
  double a_ = 0.0, sigma_ = 0.0, dual_step_ = 0.0, beta_ = 0.0;
  Phase phase_ = Phase::kSetup;
  int64_t iteration_ = 0;
  int64_t exchanges_ = 0;
  double passes_ = 0.0;
  Vec x_, h_, y_, y_hat_;  // committed state
  Vec grad_, v_, h_next_, x_next_, x_hat_, w_z_;
};

}  // namespace starling::algorithms
