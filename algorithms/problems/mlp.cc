#include "algorithms/problems/mlp.h"

#include <cmath>
#include <stdexcept>

#include "algorithms/problems/design_matrix.h"

namespace starling::algorithms {

namespace {

constexpr int kChunk = 256;  // rows per matrix product: bounded scratch memory

}  // namespace

Mlp::Mlp(Dataset data, int num_classes, int hidden, double l2, double loss_scale)
    : data_(std::move(data)),
      classes_(num_classes),
      hidden_(hidden),
      features_(data_.num_features),
      l2_(l2),
      scale_(loss_scale) {
  CheckProblemInput("mlp", data_, l2, loss_scale);
  const std::string where = "mlp on " + data_.source + ": ";
  if (data_.is_sparse) throw std::runtime_error(where + "needs dense data (IDX or CSV)");
  if (num_classes < 2) throw std::runtime_error(where + "needs at least 2 classes");
  if (hidden < 1) throw std::runtime_error(where + "needs at least 1 hidden unit");
  for (int i = 0; i < data_.num_samples(); ++i) {
    const double y = data_.labels[i];
    if (y != std::floor(y) || y < 0 || y >= num_classes) {
      throw std::runtime_error(where + "label " + std::to_string(y) + " of row " +
                               std::to_string(i) + " is not a class in [0, " +
                               std::to_string(num_classes) + ")");
    }
  }
}

double Mlp::Pass(const Vec& x, const std::vector<int>* rows, Vec* grad, int* correct) const {
  const int d = features_, h = hidden_, k = classes_;
  const Eigen::Map<const DenseMatrix> w1(x.data(), h, d);
  const Eigen::Map<const Vec> b1(x.data() + h * d, h);
  const Eigen::Map<const DenseMatrix> w2(x.data() + h * (d + 1), k, h);
  const Eigen::Map<const Vec> b2(x.data() + h * (d + 1) + k * h, k);
  if (grad) grad->setZero(dim());
  double loss = 0.0;
  const int total = rows ? static_cast<int>(rows->size()) : data_.num_samples();
  DenseMatrix a, hidden, logits, delta_out, delta_hidden;
  for (int start = 0; start < total; start += kChunk) {
    const int m = std::min(kChunk, total - start);
    a.resize(m, d);
    for (int r = 0; r < m; ++r) {
      a.row(r) = data_.dense.row(rows ? (*rows)[start + r] : start + r);
    }
    hidden.noalias() = a * w1.transpose();            // m x h
    hidden.rowwise() += b1.transpose();
    hidden = hidden.cwiseMax(0.0);
    logits.noalias() = hidden * w2.transpose();       // m x k
    logits.rowwise() += b2.transpose();
    delta_out.resize(m, k);
    for (int r = 0; r < m; ++r) {
      const int y = static_cast<int>(data_.labels[rows ? (*rows)[start + r] : start + r]);
      Eigen::Index best;
      const double top = logits.row(r).maxCoeff(&best);
      if (correct && best == y) ++*correct;
      const Eigen::RowVectorXd e = (logits.row(r).array() - top).exp();
      const double sum = e.sum();
      loss += std::log(sum) - (logits(r, y) - top);
      if (grad) {
        delta_out.row(r) = e / sum;
        delta_out(r, y) -= 1.0;
      }
    }
    if (!grad) continue;
    Eigen::Map<DenseMatrix> g_w1(grad->data(), h, d);
    Eigen::Map<Vec> g_b1(grad->data() + h * d, h);
    Eigen::Map<DenseMatrix> g_w2(grad->data() + h * (d + 1), k, h);
    Eigen::Map<Vec> g_b2(grad->data() + h * (d + 1) + k * h, k);
    g_w2.noalias() += delta_out.transpose() * hidden;
    g_b2 += delta_out.colwise().sum().transpose();
    delta_hidden.noalias() = delta_out * w2;          // m x h
    delta_hidden = delta_hidden.cwiseProduct((hidden.array() > 0).cast<double>().matrix());
    g_w1.noalias() += delta_hidden.transpose() * a;
    g_b1 += delta_hidden.colwise().sum().transpose();
  }
  return loss;
}

double Mlp::Value(const Vec& x) const {
  return scale_ * Pass(x, nullptr, nullptr, nullptr) + 0.5 * l2_ * x.squaredNorm();
}

void Mlp::Gradient(const Vec& x, Vec* grad) const {
  Pass(x, nullptr, grad, nullptr);
  *grad *= scale_;
  grad->noalias() += l2_ * x;
}

void Mlp::BatchGradient(const Vec& x, const std::vector<int>& samples, Vec* grad) const {
  if (samples.empty()) throw std::invalid_argument("mlp: empty mini-batch");
  Pass(x, &samples, grad, nullptr);
  *grad *= scale_ * static_cast<double>(num_samples()) / samples.size();
  grad->noalias() += l2_ * x;
}

void Mlp::HessianVector(const Vec&, const Vec&, Vec*) const {
  throw std::logic_error("mlp: no Hessian-vector product (the problem is non-convex)");
}

std::optional<double> Mlp::Accuracy(const Vec& x) const {
  int correct = 0;
  Pass(x, nullptr, nullptr, &correct);
  return static_cast<double>(correct) / num_samples();
}

}  // namespace starling::algorithms
