// A fake Problem for unit tests of the pure algorithm code: f(x) = 1/2 x^T D x - b^T x with a
// positive diagonal D, so every optimum has a closed form the tests compute independently.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/problems/problem.h"

namespace starling::testing {

class FakeQuadratic : public algorithms::Problem {
 public:
  FakeQuadratic(Vec diag, Vec b) : diag_(std::move(diag)), b_(std::move(b)) {}

  std::string name() const override { return "fake-quadratic"; }
  int dim() const override { return static_cast<int>(b_.size()); }
  int num_samples() const override { return 10; }
  double l2() const override { return 0.0; }
  double loss_scale() const override { return 1.0; }
  double Value(const Vec& x) const override {
    return 0.5 * x.dot(diag_.cwiseProduct(x)) - b_.dot(x);
  }
  void Gradient(const Vec& x, Vec* g) const override { *g = diag_.cwiseProduct(x) - b_; }
  void BatchGradient(const Vec& x, const std::vector<int>& samples, Vec* g) const override {
    if (samples.empty()) throw std::invalid_argument("empty batch");
    Gradient(x, g);
    // A deterministic perturbation that depends on the batch, so stochastic runs differ by seed.
    (*g)[0] += 1e-3 * (samples[0] % 7 - 3);
  }
  void HessianVector(const Vec&, const Vec& v, Vec* out) const override {
    *out = diag_.cwiseProduct(v);
  }
  double SmoothnessBound() const override { return diag_.maxCoeff(); }
  std::optional<double> Accuracy(const Vec&) const override { return std::nullopt; }

  const Vec& diag() const { return diag_; }
  const Vec& b() const { return b_; }

 private:
  Vec diag_, b_;
};

}  // namespace starling::testing
