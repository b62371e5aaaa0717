// A small multi-layer perceptron for the non-convex runs (784-64-10 on Fashion-MNIST):
// one hidden layer of H ReLU units and a softmax output over K classes,
//   h = relu(W1 a + b1),  z = W2 h + b2,
//   f(x) = s * sum_i -log softmax(z_i)_{y_i} + (lambda/2) ||x||^2.
// The model x stacks W1 (H x d, column-major), b1 (H), W2 (K x H, column-major) and b2 (K).
// Non-convex: there is no smoothness bound (SmoothnessBound() is 0, so runs need an explicit
// --step), no Hessian and no reference optimum; start from a small random point (--x0 small),
// not from zeros, where every hidden unit would stay identical.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "algorithms/data/dataset.h"
#include "algorithms/problems/problem.h"

namespace starling::algorithms {

class Mlp final : public Problem {
 public:
  // Dense data with integer labels in [0, num_classes). Throws std::runtime_error naming "mlp"
  // and data.source otherwise (or on CheckProblemInput's conditions).
  Mlp(Dataset data, int num_classes, int hidden, double l2, double loss_scale);

  std::string name() const override { return "mlp"; }
  int dim() const override { return hidden_ * (features_ + 1) + classes_ * (hidden_ + 1); }
  int num_samples() const override { return data_.num_samples(); }
  double l2() const override { return l2_; }
  double loss_scale() const override { return scale_; }

  double Value(const Vec& x) const override;
  void Gradient(const Vec& x, Vec* grad) const override;
  void BatchGradient(const Vec& x, const std::vector<int>& samples, Vec* grad) const override;
  // Throws std::logic_error: the MLP has no Hessian-vector product here.
  void HessianVector(const Vec& x, const Vec& v, Vec* out) const override;
  double SmoothnessBound() const override { return 0.0; }
  std::optional<double> Accuracy(const Vec& x) const override;

 private:
  // Loss sum and (if grad) its gradient over rows [rows] (all rows if null), unscaled and
  // without the regulariser; *correct counts argmax hits if not null.
  double Pass(const Vec& x, const std::vector<int>* rows, Vec* grad, int* correct) const;

  Dataset data_;
  int classes_, hidden_, features_;
  double l2_, scale_;
};

}  // namespace starling::algorithms
