#include "algorithms/problems/least_squares.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "algorithms/problems/design_matrix.h"

namespace starling::algorithms {

LeastSquares::LeastSquares(Dataset data, double l2, double loss_scale)
    : data_(std::move(data)), l2_(l2), scale_(loss_scale) {
  CheckProblemInput("least-squares", data_, l2_, scale_);
}

double LeastSquares::Value(const Vec& x) const {
  CheckSize("least-squares", "x", x, dim());
  const Vec residual =
      WithFeatures(data_, [&](const auto& a) -> Vec { return a * x - data_.labels; });
  return 0.5 * scale_ * residual.squaredNorm() + 0.5 * l2_ * x.squaredNorm();
}

void LeastSquares::Gradient(const Vec& x, Vec* grad) const {
  CheckSize("least-squares", "x", x, dim());
  WithFeatures(data_, [&](const auto& a) {
    const Vec residual = a * x - data_.labels;
    grad->noalias() = a.transpose() * residual;
  });
  *grad *= scale_;
  *grad += l2_ * x;
}

void LeastSquares::BatchGradient(const Vec& x, const std::vector<int>& samples, Vec* grad) const {
  CheckSize("least-squares BatchGradient", "x", x, dim());
  CheckBatch("least-squares BatchGradient", samples, num_samples());
  // Accumulates into *grad itself, as LogisticRegression does: a fresh d-vector per call (once
  // per local step) was an 8 MB allocation at d = 1e6, mmapped and faulted in at every step.
  grad->setZero(dim());
  WithFeatures(data_, [&](const auto& a) {
    for (int i : samples) *grad += (a.row(i).dot(x) - data_.labels[i]) * a.row(i).transpose();
  });
  *grad *= scale_ * num_samples() / static_cast<double>(samples.size());
  *grad += l2_ * x;
}

void LeastSquares::HessianVector(const Vec& x, const Vec& v, Vec* out) const {
  CheckSize("least-squares HessianVector", "x", x, dim());
  CheckSize("least-squares HessianVector", "v", v, dim());
  // Two passes over the data rather than the d x d Gram matrix: forming A^T A costs O(m d^2),
  // which only SolveProximal needs.
  WithFeatures(data_, [&](const auto& a) {
    const Vec av = a * v;
    out->noalias() = a.transpose() * av;
  });
  *out *= scale_;
  *out += l2_ * v;
}

double LeastSquares::SmoothnessBound() const {
  std::call_once(smoothness_once_,
                 [this] { smoothness_ = scale_ * GramMaxEigenvalue(data_) + l2_; });
  return smoothness_;
}

const LeastSquares::Normal& LeastSquares::normal() const {
  std::call_once(normal_once_, [this] {
    normal_.gram = FeatureGram(data_);
    WithFeatures(data_,
                 [&](const auto& a) { normal_.moment.noalias() = a.transpose() * data_.labels; });
  });
  return normal_;
}

bool LeastSquares::SolveProximal(const Vec& shift, double mu, const Vec& center, Vec* out) const {
  CheckSize("least-squares SolveProximal", "shift", shift, dim());
  CheckSize("least-squares SolveProximal", "center", center, dim());
  if (!std::isfinite(mu) || mu < 0.0) {
    throw std::invalid_argument("least-squares SolveProximal: mu must be finite and >= 0, got " +
                                std::to_string(mu));
  }
  // A dense d x d Cholesky is fine for the feature counts here (a9a 123, Fashion-MNIST 784,
  // OPTRA 500). When d is much larger than the shard's m, the Woodbury identity would instead
  // factor the m x m matrix (c I + s A A^T), c = lambda + mu > 0:
  //   (c I + s A^T A)^{-1} = (1/c) [I - s A^T (c I + s A A^T)^{-1} A].
  std::shared_ptr<const Factorization> factor;
  {
    std::lock_guard<std::mutex> lock(factor_mutex_);
    if (factor_ && factor_->mu == mu) factor = factor_;
  }
  if (!factor) {
    const Normal& n = normal();
    auto fresh = std::make_shared<Factorization>();
    fresh->mu = mu;
    Eigen::MatrixXd system = scale_ * n.gram;
    system.diagonal().array() += l2_ + mu;
    fresh->llt.compute(system);
    // LLT only fails on a non-positive pivot; a singular matrix can instead leave a pivot of
    // rounding size and a meaningless solve, so tiny pivots count as failure too.
    const double floor =
        dim() * std::numeric_limits<double>::epsilon() * system.diagonal().cwiseAbs().maxCoeff();
    fresh->positive_definite =
        fresh->llt.info() == Eigen::Success &&
        fresh->llt.matrixLLT().diagonal().array().square().minCoeff() > floor;
    std::lock_guard<std::mutex> lock(factor_mutex_);
    factor_ = fresh;
    factor = fresh;
  }
  if (!factor->positive_definite) return false;
  *out = factor->llt.solve(scale_ * normal().moment + shift + mu * center);
  return true;
}

}  // namespace starling::algorithms
