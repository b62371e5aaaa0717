// L2-regularized multinomial (softmax) logistic regression over K classes, no bias term.
// The model x in R^{dK} is a d x K weight matrix W stored column-major: the weight of feature f
// for class c is x[c * d + f]. With z_i = W^T a_i,
//   f(x) = s * sum_i -log softmax(z_i)_{y_i} + (lambda/2) ||x||^2,   y_i in {0, ..., K-1}.
// The model is over-parameterised (adding a vector to every column leaves the softmax
// unchanged); lambda > 0 makes the minimiser unique.
#pragma once

#include <Eigen/Core>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/data/dataset.h"
#include "algorithms/problems/problem.h"

namespace starling::algorithms {

class MultinomialRegression final : public Problem {
 public:
  // `num_classes` K >= 2 must be the same on every node (it comes from the full data, not the
  // shard). Every label must be an integer in [0, K). Throws std::runtime_error naming
  // "multinomial" and data.source otherwise, or on bad input (CheckProblemInput).
  MultinomialRegression(Dataset data, int num_classes, double l2, double loss_scale);

  MultinomialRegression(const MultinomialRegression&) = delete;
  MultinomialRegression& operator=(const MultinomialRegression&) = delete;

  std::string name() const override { return "multinomial"; }
  int dim() const override { return data_.num_features * num_classes_; }
  int num_samples() const override { return data_.num_samples(); }
  double l2() const override { return l2_; }
  double loss_scale() const override { return scale_; }
  int num_classes() const { return num_classes_; }

  double Value(const Vec& x) const override;
  void Gradient(const Vec& x, Vec* grad) const override;
  void BatchGradient(const Vec& x, const std::vector<int>& samples, Vec* grad) const override;
  void HessianVector(const Vec& x, const Vec& v, Vec* out) const override;
  // s/2 * lambda_max(A^T A) + lambda: the softmax cross-entropy Hessian in the logits,
  // diag(p) - p p^T, has eigenvalues at most 1/2. Computed on the first call.
  double SmoothnessBound() const override;
  // Fraction of samples whose largest logit (lowest class on ties) is their label.
  std::optional<double> Accuracy(const Vec& x) const override;

 private:
  // The last point's logits and probabilities (see LogisticRegression::PointCache for why).
  struct PointCache {
    Vec x;
    // Row-major (DenseMatrix): one sample's K values are contiguous, and products with A are
    // fast into this layout (design_matrix.h, FeaturesTimes).
    DenseMatrix logits;         // m x K, A W
    DenseMatrix probabilities;  // m x K, row-wise softmax of logits
    Vec log_normalizers;        // m, log sum_c exp(logits(i, c))
  };
  std::shared_ptr<const PointCache> At(const Vec& x) const;

  Dataset data_;
  int num_classes_;
  std::vector<int> classes_;  // labels as integers
  double l2_;
  double scale_;

  mutable std::mutex cache_mutex_;
  mutable std::shared_ptr<const PointCache> cache_;  // guarded by cache_mutex_
  mutable std::once_flag smoothness_once_;
  mutable double smoothness_ = 0.0;
};

}  // namespace starling::algorithms
