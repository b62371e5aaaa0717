#include "algorithms/problems/multinomial_regression.h"

#include <cmath>
#include <stdexcept>
#include <utility>

#include "algorithms/problems/design_matrix.h"

namespace starling::algorithms {
namespace {

using ConstWeights = Eigen::Map<const Eigen::MatrixXd>;  // d x K, column-major like x

// G += a_i^T g for one sample's feature row a_i and a 1 x K row g.
void AddOuter(const DenseMatrix& a, int i, const Eigen::RowVectorXd& g, Eigen::MatrixXd* out) {
  out->noalias() += a.row(i).transpose() * g;
}
void AddOuter(const SparseMatrix& a, int i, const Eigen::RowVectorXd& g, Eigen::MatrixXd* out) {
  for (SparseMatrix::InnerIterator it(a, i); it; ++it) out->row(it.col()) += it.value() * g;
}

}  // namespace

MultinomialRegression::MultinomialRegression(Dataset data, int num_classes, double l2,
                                             double loss_scale)
    : data_(std::move(data)), num_classes_(num_classes), l2_(l2), scale_(loss_scale) {
  CheckProblemInput("multinomial", data_, l2_, scale_);
  const auto fail = [this](const std::string& what) {
    throw std::runtime_error("multinomial problem on " + DataName(data_) + ": " + what);
  };
  if (num_classes_ < 2) {
    fail("needs the number of classes (>= 2, from the full data), got " +
         std::to_string(num_classes_));
  }
  classes_.resize(data_.num_samples());
  for (int i = 0; i < data_.num_samples(); ++i) {
    const double y = data_.labels[i];
    if (y != std::floor(y) || y < 0.0 || y >= num_classes_) {
      fail("label " + std::to_string(y) + " of sample " + std::to_string(i) +
           " is not an integer class in [0, " + std::to_string(num_classes_) + ")");
    }
    classes_[i] = static_cast<int>(y);
  }
}

std::shared_ptr<const MultinomialRegression::PointCache> MultinomialRegression::At(
    const Vec& x) const {
  CheckSize("multinomial", "x", x, dim());
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_ && cache_->x == x) return cache_;
  }
  auto entry = std::make_shared<PointCache>();
  entry->x = x;
  const ConstWeights w(x.data(), data_.num_features, num_classes_);
  entry->logits = FeaturesTimes(data_, w);
  // Stable log-softmax: shift each row by its maximum so that every exp() is at most 1.
  const Vec row_max = entry->logits.rowwise().maxCoeff();
  entry->probabilities = (entry->logits.colwise() - row_max).array().exp().matrix();
  const Vec row_sum = entry->probabilities.rowwise().sum();  // in [1, K]
  entry->probabilities.array().colwise() /= row_sum.array();
  entry->log_normalizers = row_max + row_sum.array().log().matrix();
  std::lock_guard<std::mutex> lock(cache_mutex_);
  cache_ = entry;
  return entry;
}

double MultinomialRegression::Value(const Vec& x) const {
  const auto point = At(x);
  double loss = 0.0;
  for (int i = 0; i < num_samples(); ++i) {
    loss += point->log_normalizers[i] - point->logits(i, classes_[i]);
  }
  return scale_ * loss + 0.5 * l2_ * x.squaredNorm();
}

void MultinomialRegression::Gradient(const Vec& x, Vec* grad) const {
  const auto point = At(x);
  // d/dz of -log softmax(z)_y is p - e_y.
  DenseMatrix residual = point->probabilities;
  for (int i = 0; i < num_samples(); ++i) residual(i, classes_[i]) -= 1.0;
  grad->resize(dim());
  Eigen::Map<Eigen::MatrixXd> g(grad->data(), data_.num_features, num_classes_);
  WithFeatures(data_, [&](const auto& a) { g.noalias() = a.transpose() * residual; });
  *grad *= scale_;
  *grad += l2_ * x;
}

void MultinomialRegression::BatchGradient(const Vec& x, const std::vector<int>& samples,
                                          Vec* grad) const {
  CheckSize("multinomial BatchGradient", "x", x, dim());
  CheckBatch("multinomial BatchGradient", samples, num_samples());
  const ConstWeights w(x.data(), data_.num_features, num_classes_);
  Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(data_.num_features, num_classes_);
  WithFeatures(data_, [&](const auto& a) {
    Eigen::RowVectorXd p(num_classes_);
    for (int i : samples) {
      p.noalias() = a.row(i) * w;
      p.array() = (p.array() - p.maxCoeff()).exp();
      p /= p.sum();
      p[classes_[i]] -= 1.0;
      AddOuter(a, i, p, &sum);
    }
  });
  const double factor = scale_ * num_samples() / static_cast<double>(samples.size());
  *grad = factor * Eigen::Map<const Vec>(sum.data(), dim()) + l2_ * x;
}

void MultinomialRegression::HessianVector(const Vec& x, const Vec& v, Vec* out) const {
  CheckSize("multinomial HessianVector", "v", v, dim());
  const auto point = At(x);
  const ConstWeights direction(v.data(), data_.num_features, num_classes_);
  const DenseMatrix& p = point->probabilities;
  out->resize(dim());
  Eigen::Map<Eigen::MatrixXd> h(out->data(), data_.num_features, num_classes_);
  TransposeTimesRowOp(
      data_, direction,
      [&](Eigen::Index first, DenseMatrix& u) {
        // Per sample, the logits' Hessian diag(p) - p p^T applied to u = V^T a_i.
        const auto p_rows = p.middleRows(first, u.rows());
        u.array() *= p_rows.array();  // p .* u
        const Vec pu = u.rowwise().sum();
        u -= p_rows.cwiseProduct(pu.replicate(1, num_classes_));
      },
      &h);
  *out *= scale_;
  *out += l2_ * v;
}

double MultinomialRegression::SmoothnessBound() const {
  std::call_once(smoothness_once_,
                 [this] { smoothness_ = 0.5 * scale_ * GramMaxEigenvalue(data_) + l2_; });
  return smoothness_;
}

std::optional<double> MultinomialRegression::Accuracy(const Vec& x) const {
  const auto point = At(x);
  int correct = 0;
  for (int i = 0; i < num_samples(); ++i) {
    Eigen::Index best = 0;
    point->logits.row(i).maxCoeff(&best);  // first maximum on ties
    correct += best == classes_[i];
  }
  return static_cast<double>(correct) / num_samples();
}

}  // namespace starling::algorithms
