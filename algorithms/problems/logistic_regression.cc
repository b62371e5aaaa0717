#include "algorithms/problems/logistic_regression.h"

#include <cmath>
#include <stdexcept>
#include <utility>

#include "algorithms/problems/design_matrix.h"

namespace starling::algorithms {
namespace {

// log(1 + exp(u)) without overflow for large u or loss of digits for very negative u.
Eigen::ArrayXd Softplus(const Eigen::ArrayXd& u) { return u.max(0.0) + (-u.abs()).exp().log1p(); }
// 1 / (1 + exp(-u)) = exp(min(u, 0)) / (1 + exp(-|u|)): no exp of a positive number.
Eigen::ArrayXd Sigmoid(const Eigen::ArrayXd& u) {
  return u.min(0.0).exp() / (1.0 + (-u.abs()).exp());
}
double SigmoidScalar(double u) {
  const double e = std::exp(-std::abs(u));
  return (u >= 0.0 ? 1.0 : e) / (1.0 + e);
}

}  // namespace

LogisticRegression::LogisticRegression(Dataset data, double l2, double loss_scale)
    : data_(std::move(data)), l2_(l2), scale_(loss_scale) {
  CheckProblemInput("logistic", data_, l2_, scale_);
  for (int i = 0; i < data_.num_samples(); ++i) {
    const double y = data_.labels[i];
    if (y != 1.0 && y != -1.0) {
      throw std::runtime_error("logistic problem on " + DataName(data_) + ": label " +
                               std::to_string(y) + " of sample " + std::to_string(i) +
                               " is not -1 or +1");
    }
  }
}

std::shared_ptr<const LogisticRegression::PointCache> LogisticRegression::At(const Vec& x) const {
  CheckSize("logistic", "x", x, dim());
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_ && cache_->x == x) return cache_;
  }
  // Computed outside the lock so that concurrent callers at different points do not serialise
  // on the expensive pass; the last one to finish wins the slot.
  auto entry = std::make_shared<PointCache>();
  entry->x = x;
  entry->margins = WithFeatures(data_, [&](const auto& a) -> Vec { return a * x; });
  std::lock_guard<std::mutex> lock(cache_mutex_);
  cache_ = entry;
  return entry;
}

double LogisticRegression::Value(const Vec& x) const {
  const auto point = At(x);
  const Eigen::ArrayXd u = -(data_.labels.array() * point->margins.array());
  return scale_ * Softplus(u).sum() + 0.5 * l2_ * x.squaredNorm();
}

void LogisticRegression::Gradient(const Vec& x, Vec* grad) const {
  const auto point = At(x);
  const auto y = data_.labels.array();
  // d/dt log(1 + exp(-y t)) = -y sigma(-y t).
  const Vec residual = (-y * Sigmoid(-y * point->margins.array())).matrix();
  WithFeatures(data_, [&](const auto& a) { grad->noalias() = a.transpose() * residual; });
  *grad *= scale_;
  *grad += l2_ * x;
}

void LogisticRegression::BatchGradient(const Vec& x, const std::vector<int>& samples,
                                       Vec* grad) const {
  CheckSize("logistic BatchGradient", "x", x, dim());
  CheckBatch("logistic BatchGradient", samples, num_samples());
  // Accumulates into *grad itself: no temporary per call (this runs once per local step).
  grad->setZero(dim());
  WithFeatures(data_, [&](const auto& a) {
    for (int i : samples) {
      const double y = data_.labels[i];
      const double t = a.row(i).dot(x);
      *grad += (-y * SigmoidScalar(-y * t)) * a.row(i).transpose();
    }
  });
  *grad *= scale_ * num_samples() / static_cast<double>(samples.size());
  *grad += l2_ * x;
}

void LogisticRegression::HessianVector(const Vec& x, const Vec& v, Vec* out) const {
  CheckSize("logistic HessianVector", "v", v, dim());
  const auto point = At(x);
  out->resize(dim());
  const Vec& margins = point->margins;
  TransposeTimesRowOp(
      data_, v,
      [&](Eigen::Index first, Vec& u) {
        // sigma(t) sigma(-t) = e / (1 + e)^2 with e = exp(-|t|).
        const Eigen::ArrayXd e = (-margins.segment(first, u.size()).array().abs()).exp();
        u.array() *= e / (1.0 + e).square();
      },
      out);
  *out *= scale_;
  *out += l2_ * v;
}

double LogisticRegression::SmoothnessBound() const {
  std::call_once(smoothness_once_,
                 [this] { smoothness_ = 0.25 * scale_ * GramMaxEigenvalue(data_) + l2_; });
  return smoothness_;
}

std::optional<double> LogisticRegression::Accuracy(const Vec& x) const {
  const auto point = At(x);
  int correct = 0;
  for (int i = 0; i < num_samples(); ++i) {
    const double predicted = point->margins[i] >= 0.0 ? 1.0 : -1.0;
    correct += predicted == data_.labels[i];
  }
  return static_cast<double>(correct) / num_samples();
}

}  // namespace starling::algorithms
