#include "topology/inference.h"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace starling::topology {

const char* EstimatorName(Estimator estimator) {
  switch (estimator) {
    case Estimator::kGranger:
      return "granger";
    case Estimator::kOneLag:
      return "one-lag";
    case Estimator::kResidual:
      return "residual";
    case Estimator::kLogGranger:
      return "log-granger";
  }
  return "unknown";
}

const char* EstimatorNames() { return "granger, one-lag, residual, log-granger"; }

Estimator ParseEstimator(const std::string& name) {
  if (name == "granger") return Estimator::kGranger;
  if (name == "one-lag") return Estimator::kOneLag;
  if (name == "residual") return Estimator::kResidual;
  if (name == "log-granger") return Estimator::kLogGranger;
  throw std::invalid_argument("--estimator '" + name + "': unknown (one of " + EstimatorNames() +
                              ", or all)");
}

std::vector<Estimator> ParseEstimators(const std::string& spec) {
  if (spec == "all") {
    return {Estimator::kGranger, Estimator::kOneLag, Estimator::kResidual, Estimator::kLogGranger};
  }
  std::vector<Estimator> list;
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    const Estimator e = ParseEstimator(item);
    if (std::find(list.begin(), list.end(), e) != list.end()) {
      throw std::invalid_argument("--estimator '" + spec + "': " + item + " is listed twice");
    }
    list.push_back(e);
  }
  if (list.empty()) ParseEstimator(spec);  // "" or ",": says what the names are
  return list;
}

int64_t MinimumSamples(Estimator estimator, int observed) {
  const int64_t s = std::max(observed, 2);
  return estimator == Estimator::kGranger || estimator == Estimator::kLogGranger ? 2 * s : s;
}

MomentAccumulator::MomentAccumulator(int dim, int block) : dim_(dim), block_(block) {
  if (dim < 1) throw std::invalid_argument("moment accumulator: dimension must be >= 1");
  if (block < 1) throw std::invalid_argument("moment accumulator: block must be >= 1");
  previous_.setZero(dim);
  pending_x_.setZero(dim, block);
  pending_y_.setZero(dim, block);
  sum_xx_.setZero(dim, dim);
  sum_yx_.setZero(dim, dim);
}

void MomentAccumulator::Add(const Eigen::Ref<const Eigen::VectorXd>& y) {
  if (y.size() != dim_) {
    throw std::invalid_argument("moment accumulator: sample of size " + std::to_string(y.size()) +
                                ", expected " + std::to_string(dim_));
  }
  if (have_previous_) {
    pending_x_.col(pending_) = previous_;
    pending_y_.col(pending_) = y;
    ++pending_;
    ++pairs_;
    if (pending_ == block_) Flush();
  }
  previous_ = y;
  have_previous_ = true;
}

void MomentAccumulator::Flush() const {
  if (pending_ == 0) return;
  const auto x = pending_x_.leftCols(pending_);
  const auto y = pending_y_.leftCols(pending_);
  sum_xx_.noalias() += x * x.transpose();
  sum_yx_.noalias() += y * x.transpose();
  pending_ = 0;
}

Moments MomentAccumulator::Finish() const {
  Flush();
  Moments m;
  m.pairs = pairs_;
  if (pairs_ == 0) {
    m.r0.setZero(dim_, dim_);
    m.r1.setZero(dim_, dim_);
    return m;
  }
  const double inv = 1.0 / static_cast<double>(pairs_);
  m.r0 = sum_xx_ * inv;
  m.r1 = sum_yx_ * inv;
  return m;
}

Eigen::MatrixXd Estimate(Estimator estimator, const Moments& moments) {
  const int s = static_cast<int>(moments.r0.rows());
  const int64_t need = MinimumSamples(estimator, s);
  if (moments.pairs < need) {
    throw std::invalid_argument("the " + std::string(EstimatorName(estimator)) +
                                " estimator needs at least " + std::to_string(need) +
                                " sample pairs for " + std::to_string(s) + " observed nodes, got " +
                                std::to_string(moments.pairs));
  }
  switch (estimator) {
    case Estimator::kLogGranger: {
      const Eigen::MatrixXd a = Symmetrize(Estimate(Estimator::kGranger, moments));
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(a);
      // A stable sampled process has eigenvalues in (0, 1) when the sampling period is short;
      // noise (or a period long against the decay) can push the smallest ones to or below 0,
      // where the logarithm does not exist: clamp them (a score, not a claimed generator).
      const double top = eig.eigenvalues().cwiseAbs().maxCoeff();
      const Eigen::VectorXd logs = eig.eigenvalues().cwiseMax(1e-9 * top).array().log().matrix();
      return eig.eigenvectors() * logs.asDiagonal() * eig.eigenvectors().transpose();
    }
    case Estimator::kGranger: {
      // A = R1 R0^-1  <=>  A^T = R0^-1 R1^T, R0 symmetric positive definite.
      // The eigenvalues (s is at most a few hundred) say reliably whether R0 can be inverted;
      // LDLT's own condition estimate misses exact zeros on the diagonal.
      const Eigen::VectorXd eig =
          Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(moments.r0, Eigen::EigenvaluesOnly)
              .eigenvalues();
      Eigen::LDLT<Eigen::MatrixXd> ldlt(moments.r0);
      if (ldlt.info() != Eigen::Success || !(eig.minCoeff() > 1e-12 * eig.maxCoeff())) {
        throw std::runtime_error(
            "the granger estimator: the observed nodes' lag-0 moment matrix "
            "is singular (constant or duplicated observations?)");
      }
      return ldlt.solve(moments.r1.transpose()).transpose();
    }
    case Estimator::kOneLag:
      return moments.r1;
    case Estimator::kResidual:
      return moments.r1 - moments.r0;
  }
  throw std::logic_error("unknown estimator");
}

Eigen::MatrixXd Symmetrize(const Eigen::MatrixXd& m) {
  if (m.rows() != m.cols()) throw std::invalid_argument("symmetrize: matrix is not square");
  return 0.5 * (m + m.transpose());
}

std::vector<std::pair<int, int>> ObservedPairs(int observed) {
  std::vector<std::pair<int, int>> pairs;
  for (int i = 0; i < observed; ++i) {
    for (int j = i + 1; j < observed; ++j) pairs.emplace_back(i, j);
  }
  return pairs;
}

std::vector<double> PairScores(const Eigen::MatrixXd& estimate) {
  std::vector<double> scores;
  for (const auto& [i, j] : ObservedPairs(static_cast<int>(estimate.rows()))) {
    scores.push_back(0.5 * (estimate(i, j) + estimate(j, i)));
  }
  return scores;
}

TwoMeansSplit TwoMeans1D(const std::vector<double>& values) {
  TwoMeansSplit out;
  const size_t m = values.size();
  out.upper.assign(m, false);
  out.threshold = std::numeric_limits<double>::infinity();
  if (m == 0) return out;
  std::vector<double> sorted(values);
  std::sort(sorted.begin(), sorted.end());
  // Centre first: the SSE formula below subtracts large squares, and centring keeps them small.
  const double mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / m;
  std::vector<double> prefix(m + 1, 0.0), prefix_sq(m + 1, 0.0);
  for (size_t k = 0; k < m; ++k) {
    const double v = sorted[k] - mean;
    prefix[k + 1] = prefix[k] + v;
    prefix_sq[k + 1] = prefix_sq[k] + v * v;
  }
  out.lower_mean = mean;
  out.sse = prefix_sq[m] - prefix[m] * prefix[m] / m;
  size_t best = 0;  // size of the lower cluster; 0 = no split
  double best_sse = std::numeric_limits<double>::infinity();
  for (size_t k = 1; k < m; ++k) {
    if (!(sorted[k - 1] < sorted[k])) continue;  // equal values stay together
    const double lo = prefix[k], hi = prefix[m] - prefix[k];
    const double sse = prefix_sq[m] - lo * lo / k - hi * hi / (m - k);
    if (sse < best_sse) {
      best_sse = sse;
      best = k;
    }
  }
  if (best == 0) return out;
  out.threshold = 0.5 * (sorted[best - 1] + sorted[best]);
  out.lower_mean = mean + prefix[best] / best;
  out.upper_mean = mean + (prefix[m] - prefix[best]) / (m - best);
  out.sse = std::max(0.0, best_sse);
  for (size_t k = 0; k < m; ++k) out.upper[k] = values[k] > out.threshold;
  return out;
}

TwoMeansSplit GaussianMixture1D(const std::vector<double>& values) {
  TwoMeansSplit out = TwoMeans1D(values);
  const size_t m = values.size();
  if (m < 4 || std::isinf(out.threshold)) return out;
  // Start from the 2-means clusters.
  double w = 0, mean1 = 0, mean0 = 0, var1 = 0, var0 = 0, total_var = 0, total_mean = 0;
  for (double v : values) total_mean += v;
  total_mean /= m;
  for (double v : values) total_var += (v - total_mean) * (v - total_mean);
  total_var /= m;
  const double floor = 1e-9 * total_var + 1e-300;
  size_t n1 = 0;
  for (size_t k = 0; k < m; ++k) n1 += out.upper[k];
  w = static_cast<double>(n1) / m;
  mean1 = out.upper_mean;
  mean0 = out.lower_mean;
  for (size_t k = 0; k < m; ++k) {
    const double v = values[k];
    if (out.upper[k]) {
      var1 += (v - mean1) * (v - mean1);
    } else {
      var0 += (v - mean0) * (v - mean0);
    }
  }
  var1 = std::max(var1 / n1, floor);
  var0 = std::max(var0 / (m - n1), floor);
  std::vector<double> g(m);
  for (int iteration = 0; iteration < 500; ++iteration) {
    // E step, in logs so that far tails do not underflow to 0/0.
    double g_sum = 0, g_v = 0;
    for (size_t k = 0; k < m; ++k) {
      const double v = values[k];
      const double l1 = std::log(w) - 0.5 * std::log(var1) - (v - mean1) * (v - mean1) / (2 * var1);
      const double l0 =
          std::log1p(-w) - 0.5 * std::log(var0) - (v - mean0) * (v - mean0) / (2 * var0);
      g[k] = 1.0 / (1.0 + std::exp(l0 - l1));
      g_sum += g[k];
      g_v += g[k] * v;
    }
    // M step.
    const double h_sum = m - g_sum;
    if (g_sum < 1e-9 || h_sum < 1e-9) break;  // one component took everything: keep 2-means
    double h_v = 0;
    for (size_t k = 0; k < m; ++k) h_v += (1 - g[k]) * values[k];
    const double new_mean1 = g_v / g_sum, new_mean0 = h_v / h_sum;
    double s1 = 0, s0 = 0;
    for (size_t k = 0; k < m; ++k) {
      s1 += g[k] * (values[k] - new_mean1) * (values[k] - new_mean1);
      s0 += (1 - g[k]) * (values[k] - new_mean0) * (values[k] - new_mean0);
    }
    const double change = std::abs(new_mean1 - mean1) + std::abs(new_mean0 - mean0);
    w = std::min(std::max(g_sum / m, 1e-12), 1 - 1e-12);
    mean1 = new_mean1;
    mean0 = new_mean0;
    var1 = std::max(s1 / g_sum, floor);
    var0 = std::max(s0 / h_sum, floor);
    if (change <= 1e-12 * std::sqrt(total_var)) break;
  }
  const bool first_is_upper = mean1 >= mean0;
  TwoMeansSplit mix;
  mix.upper.assign(m, false);
  mix.lower_mean = first_is_upper ? mean0 : mean1;
  mix.upper_mean = first_is_upper ? mean1 : mean0;
  double lowest_upper = std::numeric_limits<double>::infinity();
  double highest_lower = -std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < m; ++k) {
    // Values below the lower mean are never edges, even where a wider upper component would
    // claim the far tail.
    mix.upper[k] = (first_is_upper ? g[k] > 0.5 : g[k] < 0.5) && values[k] > mix.lower_mean;
    if (mix.upper[k]) {
      lowest_upper = std::min(lowest_upper, values[k]);
    } else {
      highest_lower = std::max(highest_lower, values[k]);
    }
  }
  mix.threshold = std::isinf(lowest_upper) ? lowest_upper : 0.5 * (lowest_upper + highest_lower);
  // With unequal variances the upper set need not be an interval of the sorted values; keep
  // the labels as the mixture gives them.
  double sum[2] = {0, 0}, sq[2] = {0, 0};
  size_t count[2] = {0, 0};
  for (size_t k = 0; k < m; ++k) {
    const int c = mix.upper[k];
    sum[c] += values[k], sq[c] += values[k] * values[k], ++count[c];
  }
  for (int c = 0; c < 2; ++c) {
    if (count[c]) mix.sse += sq[c] - sum[c] * sum[c] / count[c];
  }
  return mix;
}

const char* ClusteringName(Clustering clustering) {
  return clustering == Clustering::kTwoMeans ? "2-means" : "gmm";
}

Clustering ParseClustering(const std::string& name) {
  if (name == "2-means") return Clustering::kTwoMeans;
  if (name == "gmm") return Clustering::kGaussianMixture;
  throw std::invalid_argument("--clustering '" + name + "': unknown (2-means or gmm)");
}

double IdentifiabilityGap(const std::vector<double>& scores, const std::vector<bool>& truth) {
  if (scores.size() != truth.size()) {
    throw std::invalid_argument("identifiability gap: scores and labels differ in size");
  }
  double min_connected = std::numeric_limits<double>::infinity();
  double max_disconnected = -std::numeric_limits<double>::infinity();
  bool any_connected = false, any_disconnected = false;
  for (size_t k = 0; k < scores.size(); ++k) {
    if (truth[k]) {
      any_connected = true;
      min_connected = std::min(min_connected, scores[k]);
    } else {
      any_disconnected = true;
      max_disconnected = std::max(max_disconnected, scores[k]);
    }
  }
  if (!any_connected || !any_disconnected) return std::numeric_limits<double>::quiet_NaN();
  return min_connected - max_disconnected;
}

Classification Compare(const std::vector<bool>& predicted, const std::vector<bool>& truth) {
  if (predicted.size() != truth.size()) {
    throw std::invalid_argument("compare: predicted and true labels differ in size");
  }
  Classification c;
  for (size_t k = 0; k < truth.size(); ++k) {
    if (truth[k]) {
      predicted[k] ? ++c.true_positives : ++c.false_negatives;
    } else {
      predicted[k] ? ++c.false_positives : ++c.true_negatives;
    }
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const int64_t all = static_cast<int64_t>(truth.size());
  const int64_t positives = c.true_positives + c.false_negatives;
  const int64_t negatives = c.true_negatives + c.false_positives;
  c.accuracy = all ? static_cast<double>(c.true_positives + c.true_negatives) / all : nan;
  c.sensitivity = positives ? static_cast<double>(c.true_positives) / positives : nan;
  c.specificity = negatives ? static_cast<double>(c.true_negatives) / negatives : nan;
  return c;
}

InferenceResult Infer(Estimator estimator, const Moments& moments, Clustering clustering) {
  InferenceResult r;
  r.estimator = estimator;
  r.samples = moments.pairs;
  r.estimate = Symmetrize(Estimate(estimator, moments));
  r.scores = PairScores(r.estimate);
  r.split =
      clustering == Clustering::kTwoMeans ? TwoMeans1D(r.scores) : GaussianMixture1D(r.scores);
  return r;
}

}  // namespace starling::topology
