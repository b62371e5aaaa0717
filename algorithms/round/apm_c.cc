#include "algorithms/round/apm_c.h"

#include <cmath>
#include <stdexcept>

#include "algorithms/round/neighbor_mix.h"
#include "algorithms/round/round_method.h"

namespace starling::algorithms {

namespace {

double NextTheta(double theta) {
  return (std::sqrt(theta * theta * theta * theta + 4 * theta * theta) - theta * theta) / 2;
}

std::unique_ptr<RoundAlgorithm> MakeApmC(const RoundOptions& options, const NodeSetup& setup) {
  return std::make_unique<ApmC>(setup, options, ApmCParamTable().Read(options.params));
}

}  // namespace

const ParamTable<ApmCParams>& ApmCParamTable() {
  static const auto* const table = new ParamTable<ApmCParams>(
      ParamTable<ApmCParams>("APM-C")
          .Add("apmc-beta0", &ApmCParams::beta0, "APM-C: the penalty constant beta0",
               Range::Positive())
          .Add("apmc-inner-const", &ApmCParams::inner_const,
               "APM-C: c in T_k = ceil(c log(k) / sqrt(1 - lambda2(W'))) gossip rounds at "
               "iteration k",
               Range::Positive()));
  return *table;
}

// APM-C's gradient step is 1/L by construction.
const RoundMethod& ApmCMethod() {
  static const RoundMethod method = RoundMethod("apm-c", MakeApmC)
                                        .DefaultStep(1.0)
                                        .UsesSmoothness()
                                        .UsesLaplacianSpectrum()
                                        .Params(ApmCParamTable());
  return method;
}

ApmC::ApmC(const NodeSetup& setup, const RoundOptions& options, const ApmCParams& params)
    : setup_(setup),
      l_(options.smoothness),
      beta0_(params.beta0),
      inner_const_(params.inner_const),
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

// The state between two steps: the iterates and the consensus recursion of the iteration in
// progress (its gradient step is already taken, so y and the gradient are not needed again).
bool ApmC::SaveState(AlgorithmState* s) const {
  *s = AlgorithmState();
  s->algorithm = name();
  s->ints = {iteration_, rounds_, subround_, comm_rounds_, vectors_sent_};
  s->reals = {theta_, theta_next_, passes_};
  s->vectors = {x_, x_old_, z0_, z_, z_old_};
  return true;
}

void ApmC::LoadState(const AlgorithmState& s) {
  CheckStateShape(s, name(), 5, 3, 5, 0);
  for (const Vec& v : s.vectors) {
    if (v.size() != x_.size()) throw std::invalid_argument("checkpoint: wrong dimension");
  }
  const int rounds = static_cast<int>(s.ints[1]), subround = static_cast<int>(s.ints[2]);
  const bool subround_ok = rounds == 0 ? subround == 0 : (subround >= 1 && subround <= rounds);
  if (s.ints[0] < 0 || rounds != InnerRounds(s.ints[0] + 1) || !subround_ok) {
    throw std::invalid_argument("checkpoint: apm-c step out of range (another run's state?)");
  }
  iteration_ = s.ints[0];
  rounds_ = rounds;
  subround_ = subround;
  comm_rounds_ = s.ints[3];
  vectors_sent_ = s.ints[4];
  theta_ = s.reals[0];
  theta_next_ = s.reals[1];
  passes_ = s.reals[2];
  x_ = s.vectors[0];
  x_old_ = s.vectors[1];
  z0_ = s.vectors[2];
  z_ = s.vectors[3];
  z_old_ = s.vectors[4];
}

}  // namespace starling::algorithms
