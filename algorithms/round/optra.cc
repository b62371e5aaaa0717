#include "algorithms/round/optra.h"

#include <Eigen/Eigenvalues>
#include <cmath>
#include <stdexcept>
#include <string>

#include "algorithms/round/neighbor_mix.h"
#include "algorithms/round/round_method.h"

namespace starling::algorithms {
namespace {

// T_K(x), the Chebyshev polynomial of the first kind, for any real x.
double ChebyshevT(int k, double x) {
  if (std::abs(x) <= 1.0) return std::cos(k * std::acos(x));
  const double value = std::cosh(k * std::acosh(std::abs(x)));
  return (x < 0 && k % 2 == 1) ? -value : value;
}

ChebyshevCoefficients CheckedCoefficients(const RoundOptions& o, const OptraParams& p) {
  if (!(p.inner >= 2) || p.inner % 2 != 0) {
    throw std::invalid_argument("optra: inner exchanges 2K must be even and >= 2, got " +
                                std::to_string(p.inner));
  }
  return ChebyshevCoefficients(o.laplacian_lambda2, o.laplacian_lambda_max, p.inner / 2);
}

std::unique_ptr<RoundAlgorithm> MakeOptra(const RoundOptions& options, const NodeSetup& setup) {
  OptraParams params = OptraParamTable().Read(options.params, {options.iterations});
  if (params.horizon == 0) params.horizon = options.iterations;
  // No step to resolve: OPTRA derives its steps from nu, L and the horizon.
  return std::make_unique<Optra>(setup, options, params);
}

}  // namespace

ChebyshevCoefficients::ChebyshevCoefficients(double lambda2, double lambda_max, int steps)
    : steps(steps) {
  if (!(lambda2 > 0) || !(lambda_max > lambda2) || !std::isfinite(lambda_max)) {
    throw std::invalid_argument("chebyshev gossip: need 0 < lambda2 < lambda_max, got " +
                                std::to_string(lambda2) + ", " + std::to_string(lambda_max));
  }
  if (steps < 1) throw std::invalid_argument("chebyshev gossip: K must be >= 1");
  gamma = lambda2 / lambda_max;
  c1 = (1 + gamma) / (1 - gamma);
  c3 = 2 / (lambda2 + lambda_max);
  a.resize(steps + 1);
  a[0] = 1.0;
  a[1] = c1;
  for (int k = 1; k < steps; ++k) a[k + 1] = 2 * c1 * a[k] - a[k - 1];
}

void ChebyshevGossip::Start(const Vec& v) {
  v_ = v;
  z_ = v;  // z_0
  subround_ = 1;
}

void ChebyshevGossip::Advance(const Vec& w_z) {
  if (done() || subround_ < 1) throw std::logic_error("chebyshev gossip: advance when not running");
  // z_k - c3 Lap z_k with (Lap z)_i = z_i - (W z)_i.
  const double c1 = c_.c1, c3 = c_.c3;
  if (subround_ == 1) {
    z_next_ = c1 * (z_ - c3 * (z_ - w_z));
  } else {
    z_next_ = 2 * c1 * (z_ - c3 * (z_ - w_z)) - z_prev_;
  }
  z_prev_.swap(z_);
  z_.swap(z_next_);
  ++subround_;
  if (done()) result_ = v_ - z_ / c_.a[c_.steps];
}

Eigen::MatrixXd ChebyshevGossipMatrix(const ChebyshevCoefficients& c,
                                      const Eigen::MatrixXd& laplacian) {
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(laplacian);
  if (eig.info() != Eigen::Success)
    throw std::runtime_error("chebyshev gossip: eigensolver failed");
  Eigen::VectorXd p(laplacian.rows());
  const double t_c1 = ChebyshevT(c.steps, c.c1);
  for (Eigen::Index i = 0; i < p.size(); ++i) {
    p(i) = 1 - ChebyshevT(c.steps, c.c1 * (1 - c.c3 * eig.eigenvalues()(i))) / t_c1;
  }
  return eig.eigenvectors() * p.asDiagonal() * eig.eigenvectors().transpose();
}

const ParamTable<OptraParams>& OptraParamTable() {
  static const auto* const table = new ParamTable<OptraParams>(
      ParamTable<OptraParams>("OPTRA")
          .Add("optra-nu", &OptraParams::nu,
               "OPTRA: nu (its steps derive from nu, L and the horizon --iterations)",
               Range::Positive())
          .Add("optra-inner", &OptraParams::inner,
               "OPTRA: 2K, Chebyshev gossip exchanges per iteration (even)", Range::AtLeast(2))
          .Add("horizon", &OptraParams::horizon,
               "OPTRA: the horizon T its steps derive from (0 = --iterations); run a prefix of a "
               "T-iteration run with --iterations < T",
               Range::NonNegative())
          .CrossCheck([](const OptraParams& p, const ParamContext& run) {
            if (p.inner % 2 != 0) FailParam("optra-inner", int64_t{p.inner}, "must be even");
            if (p.horizon > 0 && p.horizon < run.iterations) {
              FailParam("horizon", p.horizon,
                        "is shorter than --iterations " + std::to_string(run.iterations));
            }
          }));
  return *table;
}

const RoundMethod& OptraMethod() {
  static const RoundMethod method = RoundMethod("optra", MakeOptra)
                                        .UsesSmoothness()
                                        .UsesLaplacianSpectrum()
                                        .Params(OptraParamTable());
  return method;
}

Optra::Optra(const NodeSetup& setup, const RoundOptions& options, const OptraParams& params)
    : setup_(setup), gossip_(CheckedCoefficients(options, params)), x_(setup.x0) {
  const double nu = params.nu;
  if (!(nu > 0)) throw std::invalid_argument("optra: nu must be > 0");
  if (params.horizon < 1) throw std::invalid_argument("optra: the horizon T must be >= 1");
  if (!(options.smoothness > 0)) throw std::invalid_argument("optra: smoothness L must be > 0");
  steps_ = params.inner / 2;
  const double gamma = options.laplacian_lambda2 / options.laplacian_lambda_max;
  const double c0 = (1 - std::sqrt(gamma)) / (1 + std::sqrt(gamma));
  const double c0_k = std::pow(c0, steps_);
  c2_ = 1 / (1 + 2 * c0_k / (1 + c0_k * c0_k));
  const double t = static_cast<double>(params.horizon);
  step_ = nu / (nu * options.smoothness + t + 1);
  tau_ = c2_ / (nu * (t + 1));
  h_ = x_;
  y_ = Vec::Zero(x_.size());
  gossip_.Start(x_);  // setup phase: Yhat = tau L~ X
}

StepKey Optra::key() const {
  switch (phase_) {
    case Phase::kSetup:
      return {0, 0, gossip_.subround()};
    case Phase::kPrimal:
      return {iteration_ + 1, 0, gossip_.subround()};
    case Phase::kDual:
      break;
  }
  return {iteration_ + 1, 1, gossip_.subround()};
}

void Optra::StartIteration() {
  const double theta = theta_;
  const double theta_next =
      (std::sqrt(theta * theta * theta * theta + 4 * theta * theta) - theta * theta) / 2;
  a_ = theta_next / theta - theta_next;
  sigma_ = 1 / theta_next;
  dual_step_ = tau_ / theta;
  beta_ = theta / theta_next;
  theta_ = theta_next;
  setup_.problem->Gradient(x_, &grad_);
  passes_ += 1.0;
  v_ = x_ - step_ * (grad_ + y_hat_);
  phase_ = Phase::kPrimal;
  gossip_.Start(v_);
}

void Optra::Advance(const std::vector<const Vec*>& inbox) {
  const Vec& z = gossip_.Outgoing();
  CheckInbox(setup_, inbox, z.size());
  MixSegment(setup_, z, inbox, 0, z.size(), &w_z_);
  gossip_.Advance(w_z_);
  ++exchanges_;
  if (!gossip_.done()) return;
  const Vec& result = gossip_.Result();
  switch (phase_) {
    case Phase::kSetup:
      y_hat_ = tau_ * result;
      StartIteration();
      return;
    case Phase::kPrimal:
      h_next_ = v_ - c2_ * result;
      x_next_ = h_next_ + a_ * (h_next_ - h_);
      x_hat_ = sigma_ * x_next_ + (1 - sigma_) * h_next_;
      phase_ = Phase::kDual;
      gossip_.Start(x_hat_);
      return;
    case Phase::kDual: {
      // Y' = Y + T_k L~ Xhat; Yhat = Y' + beta (Y' - Y).
      Vec y_next = y_ + dual_step_ * result;
      y_hat_ = y_next + beta_ * (y_next - y_);
      y_.swap(y_next);
      h_.swap(h_next_);
      x_.swap(x_next_);
      ++iteration_;
      StartIteration();
      return;
    }
  }
}

AlgorithmCounters Optra::counters() const { return {2 * steps_ * iteration_, exchanges_, passes_}; }

void ChebyshevGossip::Save(AlgorithmState* s) const {
  s->ints.push_back(subround_);
  for (const Vec* v : {&v_, &z_prev_, &z_, &result_}) s->vectors.push_back(*v);
}

size_t ChebyshevGossip::Load(const AlgorithmState& s, size_t int_at, size_t vector_at) {
  subround_ = static_cast<int>(s.ints[int_at]);
  for (Vec* v : {&v_, &z_prev_, &z_, &result_}) *v = s.vectors[vector_at++];
  return vector_at;
}

bool Optra::SaveState(AlgorithmState* s) const {
  *s = AlgorithmState();
  s->algorithm = name();
  s->ints = {static_cast<int64_t>(phase_), iteration_, exchanges_};
  s->reals = {theta_, a_, sigma_, dual_step_, beta_, passes_};
  s->vectors = {x_, h_, y_, y_hat_, grad_, v_, h_next_, x_next_, x_hat_};
  gossip_.Save(s);
  return true;
}

void Optra::LoadState(const AlgorithmState& s) {
  CheckStateShape(s, name(), 4, 6, 13, 0);
  if (s.vectors[0].size() != x_.size()) throw std::invalid_argument("checkpoint: wrong dimension");
  phase_ = static_cast<Phase>(s.ints[0]);
  iteration_ = s.ints[1];
  exchanges_ = s.ints[2];
  theta_ = s.reals[0];
  a_ = s.reals[1];
  sigma_ = s.reals[2];
  dual_step_ = s.reals[3];
  beta_ = s.reals[4];
  passes_ = s.reals[5];
  size_t at = 0;
  for (Vec* v : {&x_, &h_, &y_, &y_hat_, &grad_, &v_, &h_next_, &x_next_, &x_hat_}) {
    *v = s.vectors[at++];
  }
  gossip_.Load(s, 3, at);
}

}  // namespace starling::algorithms
