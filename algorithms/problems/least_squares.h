// L2-regularized least squares:
//   f(x) = s * sum_i 0.5 (a_i^T x - b_i)^2 + (lambda/2) ||x||^2,   b_i = the sample's label.
// (OPTRA's f_i = ||A_i x - b_i||^2 is this with s = 2 and lambda = 0.)
#pragma once

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/data/dataset.h"
#include "algorithms/problems/problem.h"

namespace starling::algorithms {

class LeastSquares final : public Problem {
 public:
  // Labels are the real-valued targets. Throws std::runtime_error naming "least-squares" and
  // data.source on bad input (CheckProblemInput).
  LeastSquares(Dataset data, double l2, double loss_scale);

  LeastSquares(const LeastSquares&) = delete;
  LeastSquares& operator=(const LeastSquares&) = delete;

  std::string name() const override { return "least-squares"; }
  int dim() const override { return data_.num_features; }
  int num_samples() const override { return data_.num_samples(); }
  double l2() const override { return l2_; }
  double loss_scale() const override { return scale_; }
  // The shard, one row per sample (for methods that work sample by sample: ADFS).
  const Dataset& data() const { return data_; }

  double Value(const Vec& x) const override;
  void Gradient(const Vec& x, Vec* grad) const override;
  void BatchGradient(const Vec& x, const std::vector<int>& samples, Vec* grad) const override;
  void HessianVector(const Vec& x, const Vec& v, Vec* out) const override;
  // s * lambda_max(A^T A) + lambda: the Hessian's largest eigenvalue itself (up to a relative
  // 1e-8 safety margin), computed on the first call.
  double SmoothnessBound() const override;
  // Solves (s A^T A + (lambda + mu) I) z = s A^T b + shift + mu * center, the optimality
  // condition of f(z) - <shift, z> + (mu/2)||z - center||^2. The first call forms A^T A (d x d,
  // O(m d^2)); the Cholesky factorisation for the last mu is kept, so repeated calls with the
  // same mu (Network-DANE) cost two triangular solves. Returns false, leaving *out unchanged,
  // when that matrix is not numerically positive definite (lambda + mu = 0 and a rank-deficient
  // shard): then there is no unique minimiser. Throws std::invalid_argument for mu < 0 or
  // non-finite, or vectors of the wrong size. Safe to call concurrently.
  bool SolveProximal(const Vec& shift, double mu, const Vec& center, Vec* out) const override;
  std::optional<double> Accuracy(const Vec&) const override { return std::nullopt; }

 private:
  struct Normal {          // the normal equations' data, formed on first use
    Eigen::MatrixXd gram;  // A^T A
    Vec moment;            // A^T b
  };
  struct Factorization {
    double mu = 0.0;
    Eigen::LLT<Eigen::MatrixXd> llt;  // of s A^T A + (lambda + mu) I
    bool positive_definite = false;
  };
  const Normal& normal() const;

  Dataset data_;
  double l2_;
  double scale_;

  mutable std::once_flag normal_once_;
  mutable Normal normal_;
  mutable std::mutex factor_mutex_;
  mutable std::shared_ptr<const Factorization> factor_;  // guarded by factor_mutex_
  mutable std::once_flag smoothness_once_;
  mutable double smoothness_ = 0.0;
};

}  // namespace starling::algorithms
