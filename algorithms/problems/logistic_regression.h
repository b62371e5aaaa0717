// L2-regularized binary logistic regression without a bias term:
//   f(x) = s * sum_i log(1 + exp(-y_i a_i^T x)) + (lambda/2) ||x||^2,   y_i in {-1, +1}.
// (A bias is a constant-1 feature added to the data, so that it is regularized like the rest.)
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/data/dataset.h"
#include "algorithms/problems/problem.h"

namespace starling::algorithms {

class LogisticRegression final : public Problem {
 public:
  // `data.labels` must all be -1 or +1 (LabelMap converts other encodings). Throws
  // std::runtime_error naming "logistic" and data.source on bad labels or bad input
  // (CheckProblemInput in design_matrix.h).
  LogisticRegression(Dataset data, double l2, double loss_scale);

  LogisticRegression(const LogisticRegression&) = delete;
  LogisticRegression& operator=(const LogisticRegression&) = delete;

  std::string name() const override { return "logistic"; }
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
  // s/4 * lambda_max(A^T A) + lambda (the logistic loss has curvature at most 1/4), computed on
  // the first call.
  double SmoothnessBound() const override;
  // Fraction of samples with sign(a^T x) == y, where a^T x = 0 predicts +1.
  std::optional<double> Accuracy(const Vec& x) const override;

 private:
  // Everything about a point x that costs a pass over the data. Newton-CG and the
  // value-then-gradient pattern of line searches ask for the same x repeatedly, so the last one
  // is kept: a Hessian-vector product then costs two passes instead of three.
  struct PointCache {
    Vec x;
    Vec margins;  // A x (the Hessian's curvature weights are derived from it when needed, so
                  // that a gradient does not pay an exp per sample for them)
  };
  std::shared_ptr<const PointCache> At(const Vec& x) const;

  Dataset data_;
  double l2_;
  double scale_;

  mutable std::mutex cache_mutex_;
  mutable std::shared_ptr<const PointCache> cache_;  // guarded by cache_mutex_
  mutable std::once_flag smoothness_once_;
  mutable double smoothness_ = 0.0;
};

}  // namespace starling::algorithms
