#include "algorithms/pairwise/acid_swarm_sgd.h"

#include <Eigen/Eigenvalues>
#include <cmath>
#include <stdexcept>
#include <string>

#include "algorithms/pairwise/checked_merge.h"

namespace starling::algorithms {
namespace {

std::unique_ptr<PairwiseAlgorithm> MakeAcid(const PairwiseOptions& options,
                                            const NodeSetup& setup) {
  if (options.compression != "none") {
    throw std::invalid_argument("--compression " + options.compression +
                                ": --algorithm acid exchanges full-precision models only");
  }
  const AcidParams p = AcidParamTable().Read(options.params);
  double eta = p.eta, beta_tilde = p.beta_tilde;
  if (eta == AcidParams::kFromGraph || beta_tilde == AcidParams::kFromGraph) {
    if (options.graph.empty()) {
      throw std::invalid_argument(
          "--acid-eta / --acid-beta-tilde: the defaults come from the graph, which this run does "
          "not give (set both)");
    }
    const AcidConstants c = AcidConstantsOf(options.graph, options.local_steps);
    if (eta == AcidParams::kFromGraph) eta = c.eta;
    if (beta_tilde == AcidParams::kFromGraph) beta_tilde = c.beta_tilde;
  }
  const ScheduledStep step{ResolvePairwiseStep(options), options.step_schedule};
  return std::make_unique<AcidSwarmSgd>(setup, step, options.batch_size, options.local_steps, eta,
                                        beta_tilde);
}

}  // namespace

const ParamTable<AcidParams>& AcidParamTable() {
  static const auto* const table = new ParamTable<AcidParams>(
      ParamTable<AcidParams>("A2CiD2 (arXiv:2306.08289)")
          .Add("acid-eta", &AcidParams::eta,
               "A2CiD2: rate eta of the momentum ODE per local step (-1 = from the graph: "
               "1/(2 sqrt(chi1 chi2)); 0 = SwarmSGD exactly)",
               Range::AtLeast(AcidParams::kFromGraph))
          .Add("acid-beta-tilde", &AcidParams::beta_tilde,
               "A2CiD2: weight beta~ of an exchange on the momentum vector (-1 = from the graph: "
               "sqrt(chi1/chi2)/2)",
               Range::AtLeast(AcidParams::kFromGraph))
          .CrossCheck([](const AcidParams& p, const ParamContext&) {
            if (p.eta < 0 && p.eta != AcidParams::kFromGraph) {
              FailParam("acid-eta", p.eta, "must be >= 0, or -1 for the graph's constant");
            }
            if (p.beta_tilde < 0 && p.beta_tilde != AcidParams::kFromGraph) {
              FailParam("acid-beta-tilde", p.beta_tilde,
                        "must be >= 0, or -1 for the graph's constant");
            }
          }));
  return *table;
}

const PairwiseMethod& AcidMethod() {
  static const PairwiseMethod method{"acid", MakeAcid, &AcidParamTable()};
  return method;
}

AcidConstants AcidConstantsOf(const std::vector<std::vector<int>>& adjacency, int local_steps) {
  if (local_steps < 1) throw std::invalid_argument("--local-steps must be >= 1");
  const int n = static_cast<int>(adjacency.size());
  Eigen::MatrixXd lap = Eigen::MatrixXd::Zero(n, n);
  std::vector<std::pair<int, int>> edges;
  for (int i = 0; i < n; ++i) {
    for (int j : adjacency[i]) {
      if (j < 0 || j >= n || j == i) throw std::invalid_argument("acid: bad neighbour id");
      if (j < i) continue;
      const double rate = (1.0 / static_cast<double>(adjacency[i].size()) +
                           1.0 / static_cast<double>(adjacency[j].size())) /
                          local_steps;
      lap(i, i) += rate;
      lap(j, j) += rate;
      lap(i, j) -= rate;
      lap(j, i) -= rate;
      edges.emplace_back(i, j);
    }
  }
  if (edges.empty()) throw std::invalid_argument("acid: the graph has no edge");
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(lap);
  const Eigen::VectorXd& values = eig.eigenvalues();  // ascending
  const double lambda2 = n > 1 ? values[1] : 0.0;
  if (!(lambda2 > 1e-12 * values[n - 1])) {
    throw std::invalid_argument("acid: the graph is not connected (lambda_2 = 0)");
  }
  // L^+ from the eigenvectors of the non-zero eigenvalues.
  const Eigen::MatrixXd& u = eig.eigenvectors();
  Eigen::MatrixXd pinv = Eigen::MatrixXd::Zero(n, n);
  for (int k = 1; k < n; ++k) pinv += (1.0 / values[k]) * u.col(k) * u.col(k).transpose();
  AcidConstants c;
  c.chi1 = 1.0 / lambda2;
  for (const auto& [i, j] : edges) {
    const double r = 0.5 * (pinv(i, i) + pinv(j, j) - 2.0 * pinv(i, j));
    c.chi2 = std::max(c.chi2, r);
  }
  c.eta = 0.5 / std::sqrt(c.chi1 * c.chi2);
  c.beta_tilde = 0.5 * std::sqrt(c.chi1 / c.chi2);
  return c;
}

AcidSwarmSgd::AcidSwarmSgd(const NodeSetup& setup, ScheduledStep step, int batch_size,
                           int local_steps, double eta, double beta_tilde)
    : SwarmSgdBase(setup, step, batch_size, local_steps),
      eta_(eta),
      beta_tilde_(beta_tilde),
      x_tilde_(setup.x0) {
  if (!(eta >= 0) || !std::isfinite(eta)) {
    throw std::invalid_argument("--acid-eta " + std::to_string(eta) + ": must be finite and >= 0");
  }
  if (!(beta_tilde >= 0) || !std::isfinite(beta_tilde)) {
    throw std::invalid_argument("--acid-beta-tilde " + std::to_string(beta_tilde) +
                                ": must be finite and >= 0");
  }
}

void AcidSwarmSgd::MixTo(int64_t now) {
  const int64_t dt = now - mixed_at_;
  mixed_at_ = now;
  if (eta_ == 0.0 || dt == 0) return;  // the identity: skipped, so that eta = 0 is SwarmSGD
  // exp(s [[-1, 1], [1, -1]]) = [[a, b], [b, a]], b = (1 - exp(-2 s))/2, a = 1 - b.
  const double b = -0.5 * std::expm1(-2.0 * eta_ * static_cast<double>(dt));
  const double a = 1.0 - b;
  scratch_ = x_;
  x_ = a * x_ + b * x_tilde_;
  x_tilde_ = a * x_tilde_ + b * scratch_;
}

void AcidSwarmSgd::LocalStep() {
  // Local step t + 1 ends at time t + 1: the ODE runs up to then, the gradient is applied at
  // that time; exchanges until the next step happen at the same time (dt = 0).
  MixTo(counters_.local_steps + 1);
  const double lr = step_.At(counters_.local_steps);
  SwarmSgdBase::LocalStep();  // x -= lr g, as SwarmSGD's
  x_tilde_.noalias() -= lr * grad_;
}

std::shared_ptr<const Vec> AcidSwarmSgd::BeginExchange(int /*peer*/, uint64_t seq) {
  MixTo(counters_.local_steps);
  std::shared_ptr<Vec> snapshot = snapshots_.Take();
  *snapshot = x_;
  KeepOffer({seq, snapshot});
  counters_.bits_sent += 64 * x_.size();
  return snapshot;
}

bool AcidSwarmSgd::CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& their_snapshot) {
  const AcidOffer* offer = FindOffer(seq);
  if (offer == nullptr) return false;
  MixTo(counters_.local_steps);
  x_tilde_.noalias() += beta_tilde_ * (their_snapshot - *offer->snapshot);
  // As SwarmSgd::CompleteExchange: X_i <- X_i + (S_j - S_i)/2.
  x_.noalias() += 0.5 * (their_snapshot - *offer->snapshot);
  FinishOffer(seq, /*merged=*/true);
  return true;
}

std::shared_ptr<const Vec> AcidSwarmSgd::Respond(int /*peer*/,
                                                 const Eigen::Ref<const Vec>& their_snapshot) {
  MixTo(counters_.local_steps);
  std::shared_ptr<Vec> snapshot = snapshots_.Take();
  *snapshot = x_;
  x_tilde_.noalias() += beta_tilde_ * (their_snapshot - *snapshot);
  x_.noalias() += 0.5 * (their_snapshot - *snapshot);
  NoteServed();
  counters_.bits_sent += 64 * snapshot->size();
  return snapshot;
}

bool AcidSwarmSgd::MixedAt(int64_t now, Vec* x, Vec* x_tilde) const {
  const int64_t dt = now - mixed_at_;
  if (eta_ == 0.0 || dt == 0) return false;
  // MixTo's constants and operations.
  const double b = -0.5 * std::expm1(-2.0 * eta_ * static_cast<double>(dt));
  const double a = 1.0 - b;
  *x = a * x_ + b * x_tilde_;
  *x_tilde = a * x_tilde_ + b * x_;
  return true;
}

void AcidSwarmSgd::CheckDimension(const Eigen::Ref<const Vec>& their_snapshot) const {
  // The wire checks every received vector's dimension (exchange_wire.h): a mismatch here is a
  // local bug, and the checked merges' raw loops must not read past either vector.
  if (their_snapshot.size() != x_.size()) {
    throw std::invalid_argument("acid: a partner's vector of " +
                                std::to_string(their_snapshot.size()) + " values, the model has " +
                                std::to_string(x_.size()));
  }
}

// CompleteExchange's operations, in an order that commits nothing before S_j is known finite:
// the ODE's result (rarely needed: merges come at the time of the last local step) goes to
// merged_ and scratch_ instead of x and x~; x + (S_j - S_i)/2 goes to merged_ in the pass that
// checks S_j; x~ is updated and merged_ swapped in only then.
AcidSwarmSgd::MergeResult AcidSwarmSgd::CompleteExchangeChecked(
    uint64_t seq, const Eigen::Ref<const Vec>& their_snapshot, size_t* first_bad) {
  CheckDimension(their_snapshot);
  const AcidOffer* offer = FindOffer(seq);
  if (offer == nullptr) return MergeResult::kNoSnapshot;
  const int64_t now = counters_.local_steps;
  const bool mixed = MixedAt(now, &merged_, &scratch_);
  const Vec& x = mixed ? merged_ : x_;
  const Vec& x_tilde = mixed ? scratch_ : x_tilde_;
  const size_t n = static_cast<size_t>(x_.size());
  merged_.resize(x_.size());  // keeps the mixed x (same size)
  const double* s = their_snapshot.data();
  const double* t = offer->snapshot->data();
  if (!AddScaledDifferenceIfFinite(x.data(), s, t, 0.5, merged_.data(), n)) {
    *first_bad = FirstNonFinite(s, n);
    return MergeResult::kRefused;
  }
  AddScaledDifferenceIfFinite(x_tilde.data(), s, t, beta_tilde_, x_tilde_.data(), n);
  x_.swap(merged_);
  mixed_at_ = now;
  FinishOffer(seq, /*merged=*/true);
  return MergeResult::kMerged;
}

// Respond's operations, committed only once S_i is known finite: the reply S_j (the mixed x, or
// x's own storage without a copy when the ODE is the identity) and x~'s mix go to buffers of
// their own, x + (S_i - S_j)/2 to merged_ (or the pooled buffer) in the pass that checks S_i.
std::shared_ptr<const Vec> AcidSwarmSgd::RespondChecked(int /*peer*/,
                                                        const Eigen::Ref<const Vec>& their_snapshot,
                                                        size_t* first_bad) {
  CheckDimension(their_snapshot);
  const int64_t now = counters_.local_steps;
  std::shared_ptr<Vec> snapshot = snapshots_.Take();
  const bool mixed = MixedAt(now, snapshot.get(), &scratch_);
  Vec* out = &merged_;
  if (!mixed) {
    snapshot->swap(x_);  // S_j = X_j; the pooled buffer receives the merge
    out = &x_;
  }
  const size_t n = static_cast<size_t>(snapshot->size());
  out->resize(snapshot->size());
  const double* s = their_snapshot.data();
  if (!AddScaledDifferenceIfFinite(snapshot->data(), s, snapshot->data(), 0.5, out->data(), n)) {
    if (!mixed) x_.swap(*snapshot);  // the model as it was; the buffer goes back to the pool
    *first_bad = FirstNonFinite(s, n);
    return nullptr;
  }
  const Vec& x_tilde = mixed ? scratch_ : x_tilde_;
  AddScaledDifferenceIfFinite(x_tilde.data(), s, snapshot->data(), beta_tilde_, x_tilde_.data(), n);
  if (mixed) x_.swap(merged_);
  mixed_at_ = now;
  NoteServed();
  counters_.bits_sent += 64 * snapshot->size();
  return snapshot;
}

bool AcidSwarmSgd::SaveState(AlgorithmState* s) const {
  SaveCommon("acid", s);
  s->ints.push_back(mixed_at_);
  s->vectors.push_back(x_tilde_);
  return true;
}

void AcidSwarmSgd::LoadState(const AlgorithmState& s) {
  LoadCommon("acid", s, 1, 1);
  mixed_at_ = s.ints[kCommonInts];
  x_tilde_ = s.vectors[1];
}

}  // namespace starling::algorithms
