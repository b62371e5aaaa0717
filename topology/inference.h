// Topology inference under partial observability (docs/how-to/topology-inference.md): from a time
// series of the states of some nodes of a noisy linear diffusion y_t = A y_{t-1} + x_t, decide
// which pairs of observed nodes are linked.
//
// The pipeline is: accumulate the lag-0 and lag-1 sample moments R0, R1 over the observed set
// (MomentAccumulator, streaming, so that 1e5+ samples cost one small matrix product per block),
// turn them into a matrix estimate of A restricted to the observed set (Estimate), symmetrise,
// score every observed pair i < j, split the scores with exact 1-D 2-means (TwoMeans1D), and
// compare against a known graph (Compare, IdentifiabilityGap).
//
// Pure: Eigen and the standard library only; no randomness, no clocks.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace starling::topology {

enum class Estimator {
  kGranger,   // [R1]_SS ([R0]_SS)^-1, least squares VAR(1); exact under full observability
  kOneLag,    // [R1]_SS
  kResidual,  // [R1 - R0]_SS = E[(y_{t+1} - y_t) y_t^T] restricted to S; symmetrised, it is
              // -1/2 E[(y_{t+1} - y_t)(y_{t+1} - y_t)^T]: minus half the increments' covariance
  // log of the symmetrised Granger matrix (eigenvalues clamped at 1e-9 of the largest): for a
  // process sampled every D, D times the generator estimate, whose support is the graph when
  // A = exp(G D) (the pairwise diffusion, algorithms/pairwise/pairwise_diffusion.h).
  kLogGranger,
};

// "granger", "one-lag", "residual", "log-granger".
const char* EstimatorName(Estimator estimator);
// Comma-separated list of the names, for --help.
const char* EstimatorNames();
// Throws std::invalid_argument "--estimator 'NAME': ..." for an unknown name.
Estimator ParseEstimator(const std::string& name);
// "all" gives every estimator; otherwise a comma-separated list of names.
std::vector<Estimator> ParseEstimators(const std::string& spec);

// The fewest sample pairs with which `estimator` is defined for `observed` nodes. Granger needs
// [R0]_SS to be invertible, which takes at least `observed` pairs; we ask for twice that so that
// the inverse is not dominated by its smallest, noisiest eigenvalues. The moment estimators are
// defined from one pair, but 2-means needs scores that differ, so we ask for `observed` pairs.
int64_t MinimumSamples(Estimator estimator, int observed);

// Sample moments from n pairs (y_t, y_{t+1}) of consecutive observations:
//   R0 = (1/n) sum y_t y_t^T,   R1 = (1/n) sum y_{t+1} y_t^T.
struct Moments {
  Eigen::MatrixXd r0;
  Eigen::MatrixXd r1;
  int64_t pairs = 0;
};

// Streaming accumulation of Moments. Samples are added in time order; Break() marks that the
// next sample does not follow the previous one (a step that was not observed), so no pair is
// formed across the gap. Pairs are buffered in blocks and folded in with matrix products.
class MomentAccumulator {
 public:
  explicit MomentAccumulator(int dim, int block = 512);

  // Adds y_t; if the previous sample was y_{t-1} (no Break in between), the pair counts.
  // y.size() must equal dim (std::invalid_argument otherwise).
  void Add(const Eigen::Ref<const Eigen::VectorXd>& y);
  void Break() { have_previous_ = false; }

  int dim() const { return dim_; }
  int64_t pairs() const { return pairs_; }
  // The moments of every pair so far (pairs == 0 gives zero matrices). Does not reset.
  Moments Finish() const;

 private:
  void Flush() const;

  int dim_;
  int block_;
  bool have_previous_ = false;
  Eigen::VectorXd previous_;
  int64_t pairs_ = 0;
  // Pending pairs as columns; folded into the sums by Flush (mutable: Finish flushes).
  mutable Eigen::MatrixXd pending_x_, pending_y_;
  mutable int pending_ = 0;
  mutable Eigen::MatrixXd sum_xx_, sum_yx_;
};

// The matrix estimate of A_SS from the moments (not symmetrised). Throws std::invalid_argument
// if moments.pairs < MinimumSamples(estimator, dim), and std::runtime_error if Granger's
// [R0]_SS is numerically singular.
Eigen::MatrixXd Estimate(Estimator estimator, const Moments& moments);

// (M + M^T) / 2.
Eigen::MatrixXd Symmetrize(const Eigen::MatrixXd& m);

// The observed pairs (i, j), i < j, as indices into the observed set, in lexicographic order:
// the order of every per-pair vector below.
std::vector<std::pair<int, int>> ObservedPairs(int observed);
// Score of each pair: the symmetrised estimate's entry.
std::vector<double> PairScores(const Eigen::MatrixXd& estimate);

// Exact 2-means in one dimension: the values are sorted and the split minimising the total
// within-cluster sum of squares is chosen (O(M log M), no seeds). Values strictly above
// `threshold` form the upper cluster, which is declared "connected".
struct TwoMeansSplit {
  std::vector<bool> upper;  // per input value, in input order
  double threshold = 0.0;   // midpoint between the largest lower and the smallest upper value
  double lower_mean = 0.0, upper_mean = 0.0;
  double sse = 0.0;  // total within-cluster sum of squares at the split
};
// With fewer than two distinct values there is no split: every value is put in the lower
// cluster (no edge declared) and threshold is +infinity.
TwoMeansSplit TwoMeans1D(const std::vector<double>& values);

// A two-component Gaussian mixture in one dimension with unequal weights and variances, fitted
// by EM from the 2-means split (deterministic, no seeds; still universal: it needs no knowledge
// of rho, c or p). Values whose posterior of the component with the larger mean exceeds 1/2 form
// the upper cluster. Unlike 2-means, which splits a large cloud of non-edges near its middle
// when the edges are few and the noise is large, the mixture lets the edge cluster be small and
// tight. `threshold` is the smallest upper value's midpoint to the largest lower one (+inf if
// none); lower_mean/upper_mean are the component means; sse as for 2-means.
TwoMeansSplit GaussianMixture1D(const std::vector<double>& values);

enum class Clustering { kTwoMeans, kGaussianMixture };
// "2-means", "gmm"; Parse throws std::invalid_argument "--clustering 'NAME': ...".
const char* ClusteringName(Clustering clustering);
Clustering ParseClustering(const std::string& name);

// min over connected pairs - max over disconnected pairs of the scores (positive: a threshold
// separates them perfectly). NaN if either class is empty. truth[k] is pair k's true label.
double IdentifiabilityGap(const std::vector<double>& scores, const std::vector<bool>& truth);

struct Classification {
  int64_t true_positives = 0, false_positives = 0, true_negatives = 0, false_negatives = 0;
  double accuracy = 0.0;     // correct / all pairs (NaN if no pairs)
  double sensitivity = 0.0;  // TP / (TP + FN), NaN if no true edge
  double specificity = 0.0;  // TN / (TN + FP), NaN if no true non-edge
};
// Throws std::invalid_argument if the sizes differ.
Classification Compare(const std::vector<bool>& predicted, const std::vector<bool>& truth);

// Everything one estimator gives from one set of moments.
struct InferenceResult {
  Estimator estimator = Estimator::kGranger;
  int64_t samples = 0;         // pairs used
  Eigen::MatrixXd estimate;    // symmetrised
  std::vector<double> scores;  // per ObservedPairs entry
  TwoMeansSplit split;         // split.upper = inferred edges
};
InferenceResult Infer(Estimator estimator, const Moments& moments,
                      Clustering clustering = Clustering::kTwoMeans);

}  // namespace starling::topology
