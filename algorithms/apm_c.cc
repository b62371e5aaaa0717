#include "algorithms/apm_c.h"

#include <cmath>
#include <stdexcept>

#include "algorithms/neighbor_mix.h"

namespace starling::algorithms {

namespace {

double NextTheta(double theta) {
  return (std::sqrt(theta * theta * theta * theta + 4 * theta * theta) - theta * theta) / 2;
}

}  // namespace

ApmC::ApmC(const NodeSetup& setup, const RoundOptions& options)
    : setup_(setup),
      l_(options.smoothness),
      beta0_(options.apmc_beta0),
      inner_const_(options.apmc_inner_const),
      lambda_max_(options.laplacian_lambda_max),
      x_(setup.x0),
      x_old_(setup.x0) {
  if (!(l_ > 0) || !std::isfinite(l_)) {
    throw std::invalid_argument("apm-c: the smoothness bound L must be positive");
  }
  if (!(beta0_ > 0)) throw std::invalid_argument("--apmc-beta0 must be > 0");
  if (!(inner_const_ > 0)) throw std::invalid_argument("--apmc-inner-const must be > 0");
  const double lambda2 = options.laplacian_lambda2;
  if (!(lambda2 > 0) || !(lambda_max_ > lambda2)) {
    throw std::invalid_argument(
        "apm-c: needs the Laplacian's extreme non-zero eigenvalues 0 < lambda2 < lambda_max");
  }
  const double second = 1.0 - lambda2 / lambda_max_;  // second largest eigenvalue of W'
  const double root = std::sqrt(1.0 - second * second);
  eta_ = (1.0 - root) / (1.0 + root);
  root_gap_ = std::sqrt(1.0 - second);
  BeginIteration();
}

int ApmC::InnerRounds(int64_t k) const {
  return static_cast<int>(std::ceil(inner_const_ * std::log(static_cast<double>(k)) / root_gap_));
}

void ApmC::BeginIteration() {
  const int64_t k = iteration_ + 1;
  theta_next_ = NextTheta(theta_);
  y_ = x_ + (theta_next_ * (1.0 - theta_) / theta_) * (x_ - x_old_);
  setup_.problem->Gradient(y_, &grad_);
  passes_ += 1.0;
  z0_ = y_ - grad_ / l_;
  z_ = z0_;
  z_old_ = z0_;
  rounds_ = InnerRounds(k);
  subround_ = rounds_ > 0 ? 1 : 0;
}

void ApmC::Advance(const std::vector<const Vec*>& inbox) {
  CheckInbox(setup_, inbox, z_.size());
  ++vectors_sent_;
  if (subround_ > 0) {
    MixSegment(setup_, z_, inbox, 0, z_.size(), &mixed_);
    // (W'Z)_i = Z_i - (Z_i - (W Z)_i) / lambda_max, then the Chebyshev-type recursion.
    next_ = (1.0 + eta_) * (z_ - (z_ - mixed_) / lambda_max_) - eta_ * z_old_;
    z_old_.swap(z_);
    z_.swap(next_);
    ++comm_rounds_;
  }
  if (subround_ < rounds_) {
    ++subround_;
    return;
  }
  FinishIteration();
  BeginIteration();
}

void ApmC::FinishIteration() {
  const double vartheta = theta_next_ * theta_next_;
  x_old_ = x_;
  x_ = (l_ * vartheta * z0_ + beta0_ * z_) / (l_ * vartheta + beta0_);
  theta_ = theta_next_;
  ++iteration_;
}

AlgorithmCounters ApmC::counters() const { return {comm_rounds_, vectors_sent_, passes_}; }

}  // namespace starling::algorithms
