#include "algorithms/round/network_dane.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "algorithms/round/neighbor_mix.h"
#include "algorithms/round/round_method.h"

namespace starling::algorithms {

namespace {

constexpr int kDefaultNesterovIterations = 100;  // the reference code's local_n_iters

std::unique_ptr<RoundAlgorithm> MakeNetworkDane(const RoundOptions& options,
                                                const NodeSetup& setup) {
  return std::make_unique<NetworkDane>(setup, options, NetworkDaneParamTable().Read(options.params),
                                       NetworkDane::Variant::kDane, 0.0);
}

template <NetworkDane::Variant kVariant>
std::unique_ptr<RoundAlgorithm> MakeVarianceReduced(const RoundOptions& options,
                                                    const NodeSetup& setup) {
  return std::make_unique<NetworkDane>(setup, options, NetworkDaneParamTable().Read(options.params),
                                       kVariant, ResolveStep(options));
}

std::vector<std::string> NetworkDaneWarnings(const RoundOptions& options);

// SVRG/SARAH's inner step eta is the reference experiments' 0.1/L (the authors' code).
RoundMethod VarianceReducedMethod(const char* name, RoundMethod::Factory make) {
  return RoundMethod(name, make)
      .DefaultStep(0.1)
      .UsesLazyFactor()
      .Params(NetworkDaneParamTable())
      .Warnings(NetworkDaneWarnings);
}

}  // namespace

const ParamTable<NetworkDaneParams>& NetworkDaneParamTable() {
  static const auto* const table = new ParamTable<NetworkDaneParams>(
      ParamTable<NetworkDaneParams>("Network-DANE/SVRG/SARAH")
          .Add("dane-mu", &NetworkDaneParams::mu,
               "Network-DANE/SVRG/SARAH: the proximal weight mu of the local problem (-1 = "
               "automatic: 0.3 L min(1, sqrt(d N / M)) for Network-DANE, 0 for SVRG/SARAH)",
               Range::AtLeast(NetworkDaneParams::kAutomatic))
          .Add("mix-rounds", &NetworkDaneParams::mix_rounds,
               "Network-DANE/SVRG/SARAH: n_mix, exchanges of (x, s) per iteration (mixing with "
               "W^n_mix)",
               Range::AtLeast(1))
          .Add("inner-steps", &NetworkDaneParams::inner_steps,
               "Network-SVRG/SARAH: K_in inner steps per iteration (0 = automatic: 5% of the "
               "mean shard size, at least 50); Network-DANE: Nesterov iterations of the local "
               "solve where it has no exact solve (0 = 100)",
               Range::NonNegative())
          .CrossCheck([](const NetworkDaneParams& p, const ParamContext&) {
            if (p.mu < 0 && p.mu != NetworkDaneParams::kAutomatic) {
              FailParam("dane-mu", p.mu, "must be >= 0, or -1 for automatic");
            }
          }));
  return *table;
}

double ResolveDaneMu(const RoundOptions& options, const NetworkDaneParams& params,
                     bool dane_variant, int dim) {
  if (params.mu != NetworkDaneParams::kAutomatic) return params.mu;
  if (!dane_variant) return 0.0;
  if (!(options.smoothness > 0)) {
    throw std::invalid_argument("--dane-mu: automatic needs the smoothness bound L");
  }
  const double rows = options.mean_shard_samples;
  const double spread = rows > 0 ? std::min(1.0, std::sqrt(dim / rows)) : 1.0;
  return kDaneMuFactor * options.smoothness * spread;
}

int ResolveInnerSteps(const RoundOptions& options, const NetworkDaneParams& params,
                      bool dane_variant, int local_samples) {
  if (params.inner_steps > 0) return params.inner_steps;
  if (dane_variant) return kDefaultNesterovIterations;
  const double rows = options.mean_shard_samples > 0 ? options.mean_shard_samples : local_samples;
  return std::max(kMinInnerSteps, static_cast<int>(std::ceil(0.05 * rows)));
}

namespace {

// What is known to be out of range: mu = 0 in Network-DANE on a non-quadratic problem (measured:
// relative gap 59 on a9a logistic regression, above f(0)), and so few SVRG/SARAH inner steps
// that an iteration moves less than one gradient step of 1/L.
std::vector<std::string> NetworkDaneWarnings(const RoundOptions& options) {
  std::vector<std::string> out;
  NetworkDaneParams params;
  try {
    params = NetworkDaneParamTable().Read(options.params);
  } catch (const std::invalid_argument&) {
    return out;  // the factory says what is wrong
  }
  const bool dane = options.algorithm == "network-dane";
  if (dane && params.mu == 0 && !options.quadratic) {
    out.push_back(
        "--dane-mu 0 on a non-quadratic problem: Network-DANE's local problem then has only the "
        "data's curvature, and on logistic regression the run settled far from the optimum "
        "(relative gap 59); the automatic mu (-1, the default) is 0.3 L min(1, sqrt(d N / M))");
  }
  if (dane && params.mu == NetworkDaneParams::kAutomatic && options.smoothness > 0 &&
      options.dim > 0 && options.mean_shard_samples > 0 &&
      options.mean_shard_samples <= kDaneSmallShardRatio * options.dim) {
    const double automatic = ResolveDaneMu(options, params, true, options.dim);
    std::ostringstream s;
    s << std::setprecision(3) << "small local problems: " << options.mean_shard_samples
      << " rows a node on average for d = " << options.dim << " unknowns (at most "
      << kDaneSmallShardRatio << " d): the automatic --dane-mu " << automatic
      << " (0.3 L) is likely far too large and the run slow (logistic regression with 28 rows a "
      << "node: no relative gap of 1e-6 in 3000 rounds, 380 rounds with a 20x smaller mu); try "
      << "--dane-mu " << automatic / kDaneSmallShardDivisor;
    out.push_back(s.str());
  }
  if (!dane && options.smoothness > 0) {
    double step = options.step;
    if (!(step > 0)) step = 0.1 / options.smoothness;
    const int k = ResolveInnerSteps(options, params, false, 1);
    const double reach = step * k * options.smoothness;
    if (reach < 1.0) {
      std::ostringstream s;
      s << "--inner-steps " << k << " with step " << step << ": eta K_in L = " << reach
        << " < 1, so an iteration moves less than one gradient step of 1/L and "
        << options.algorithm << " crawls or stalls (the reference experiments had eta K_in L = "
        << "5; the automatic K_in, 0, is at least " << kMinInnerSteps << ")";
      out.push_back(s.str());
    }
  }
  return out;
}

}  // namespace

// Network-DANE takes no step (its default factor only serves ResolveStep's callers).
const RoundMethod& NetworkDaneMethod() {
  static const RoundMethod method = RoundMethod("network-dane", MakeNetworkDane)
                                        .DefaultStep(1.0)
                                        .UsesSmoothness()
                                        .UsesLazyFactor()
                                        .Params(NetworkDaneParamTable())
                                        .Warnings(NetworkDaneWarnings);
  return method;
}

const RoundMethod& NetworkSvrgMethod() {
  static const RoundMethod method =
      VarianceReducedMethod("network-svrg", MakeVarianceReduced<NetworkDane::Variant::kSvrg>);
  return method;
}

const RoundMethod& NetworkSarahMethod() {
  static const RoundMethod method =
      VarianceReducedMethod("network-sarah", MakeVarianceReduced<NetworkDane::Variant::kSarah>);
  return method;
}

NetworkDane::NetworkDane(const NodeSetup& setup, const RoundOptions& options,
                         const NetworkDaneParams& params, Variant variant, double step)
    : setup_(setup),
      variant_(variant),
      step_(step),
      mu_(ResolveDaneMu(options, params, variant == Variant::kDane,
                        static_cast<int>(setup.x0.size()))),
      smoothness_(options.smoothness),
      sigma_(options.strong_convexity),
      lazy_c_(options.tracker_lazy_c),
      mix_rounds_(params.mix_rounds),
      inner_steps_(ResolveInnerSteps(options, params, variant == Variant::kDane,
                                     setup.problem->num_samples())),
      batch_(options.batch_size > 0 ? options.batch_size : 1),
      rng_(setup.seed),
      x_(setup.x0) {
  if (mix_rounds_ < 1) throw std::invalid_argument("--mix-rounds must be >= 1");
  if (!(mu_ >= 0) || !std::isfinite(mu_)) throw std::invalid_argument("--dane-mu must be >= 0");
  if (!(lazy_c_ > 0) || lazy_c_ > 1) {
    throw std::invalid_argument("network-dane: the lazy tracker factor must be in (0, 1]");
  }
  if (inner_steps_ < 1) throw std::invalid_argument("--inner-steps must be >= 0");
  if (variant_ != Variant::kDane && !(step_ > 0)) {
    throw std::invalid_argument("network-svrg/sarah: the step must be > 0");
  }
  y_ = x_;
  setup_.problem->Gradient(y_, &g_prev_);
  passes_ = 1.0;
  s_ = g_prev_;
  outgoing_.resize(2 * x_.size());
  outgoing_ << x_, s_;
}

std::string NetworkDane::name() const {
  switch (variant_) {
    case Variant::kDane:
      return "network-dane";
    case Variant::kSvrg:
      return "network-svrg";
    case Variant::kSarah:
      return "network-sarah";
  }
  return "network-dane";
}

void NetworkDane::Advance(const std::vector<const Vec*>& inbox) {
  const Eigen::Index d = x_.size();
  CheckInbox(setup_, inbox, 2 * d);
  // x with W; s with W_s = c W + (1 - c) I.
  MixSegment(setup_, outgoing_, inbox, 0, d, &mixed_);
  outgoing_.head(d) = mixed_;
  MixSegment(setup_, outgoing_, inbox, d, d, &mixed_);
  outgoing_.tail(d) = lazy_c_ * mixed_ + (1.0 - lazy_c_) * outgoing_.tail(d);
  if (++subround_ < mix_rounds_) return;

  subround_ = 0;
  y_ = outgoing_.head(d);
  setup_.problem->Gradient(y_, &g_a_);
  passes_ += 1.0;
  s_ = outgoing_.tail(d) + g_a_ - g_prev_;
  g_prev_.swap(g_a_);
  LocalUpdate();
  ++iteration_;
  outgoing_ << x_, s_;
}

void NetworkDane::LocalUpdate() {
  if (variant_ != Variant::kDane) {
    VarianceReducedSteps();
    return;
  }
  // argmin_z f_i(z) - <grad f_i(y) - s, z> + (mu/2)||z - y||^2.
  shift_ = g_prev_ - s_;
  if (setup_.problem->SolveProximal(shift_, mu_, y_, &x_)) return;
  SolveDaneByNesterov();
}

void NetworkDane::SolveDaneByNesterov() {
  if (!(smoothness_ > 0)) {
    throw std::invalid_argument("network-dane: Nesterov's local solver needs the smoothness bound");
  }
  const double l = smoothness_ + mu_;
  const double sigma = sigma_ + mu_;
  // Constant momentum for the strongly convex case; without strong convexity the surrogate is
  // only convex and the momentum follows the k/(k+3) schedule.
  const double r = sigma > 0 ? (std::sqrt(l / sigma) - 1) / (std::sqrt(l / sigma) + 1) : 0.0;
  Vec& z = u_;
  z = y_;
  nag_y_prev_ = y_;
  for (int k = 0; k < inner_steps_; ++k) {
    // Gradient of the surrogate: grad f_i(z) - grad f_i(y) + s + mu (z - y).
    setup_.problem->Gradient(z, &g_b_);
    g_b_ += s_ - g_prev_ + mu_ * (z - y_);
    nag_y_ = z - g_b_ / l;
    const double momentum = sigma > 0 ? r : static_cast<double>(k) / (k + 3);
    z = (1 + momentum) * nag_y_ - momentum * nag_y_prev_;
    nag_y_prev_.swap(nag_y_);
  }
  passes_ += inner_steps_;
  x_ = nag_y_prev_;
}

void NetworkDane::VarianceReducedSteps() {
  const int m = setup_.problem->num_samples();
  samples_.resize(batch_);
  u_ = y_;
  v_ = s_;
  for (int k = 0; k < inner_steps_; ++k) {
    u_prev_ = u_;
    u_ -= step_ * v_;
    // Drawn from the raw generator so that every build draws the same rows (as GradientOracle).
    for (int& b : samples_) b = static_cast<int>(rng_() % static_cast<uint64_t>(m));
    setup_.problem->BatchGradient(u_, samples_, &g_a_);
    if (variant_ == Variant::kSvrg) {
      setup_.problem->BatchGradient(y_, samples_, &g_b_);
      v_ = g_a_ - g_b_ + s_ + mu_ * (u_ - y_);
    } else {
      setup_.problem->BatchGradient(u_prev_, samples_, &g_b_);
      v_ += g_a_ - g_b_ + mu_ * (u_ - y_);
    }
  }
  passes_ += 2.0 * batch_ * inner_steps_ / m;
  x_ = u_;
}

AlgorithmCounters NetworkDane::counters() const {
  return {iteration_ * mix_rounds_, 2 * (iteration_ * mix_rounds_ + subround_), passes_};
}

bool NetworkDane::SaveState(AlgorithmState* s) const {
  *s = AlgorithmState();
  s->algorithm = name();
  s->ints = {iteration_, subround_};
  s->reals = {passes_};
  s->vectors = {x_, y_, s_, g_prev_, outgoing_};
  std::ostringstream engine;
  engine << rng_;
  s->texts = {engine.str()};
  return true;
}

void NetworkDane::LoadState(const AlgorithmState& s) {
  CheckStateShape(s, name(), 2, 1, 5, 1);
  const Eigen::Index d = x_.size();
  for (int k = 0; k < 4; ++k) {
    if (s.vectors[k].size() != d) throw std::invalid_argument("checkpoint: wrong dimension");
  }
  if (s.vectors[4].size() != 2 * d) throw std::invalid_argument("checkpoint: wrong dimension");
  if (s.ints[0] < 0 || s.ints[1] < 0 || s.ints[1] >= mix_rounds_) {
    throw std::invalid_argument("checkpoint: " + name() +
                                " step out of range (another --mix-rounds?)");
  }
  std::istringstream engine_text(s.texts[0]);
  std::mt19937_64 engine;
  engine_text >> engine;
  if (!engine_text) throw std::invalid_argument("checkpoint: malformed random engine state");
  iteration_ = s.ints[0];
  subround_ = static_cast<int>(s.ints[1]);
  passes_ = s.reals[0];
  x_ = s.vectors[0];
  y_ = s.vectors[1];
  s_ = s.vectors[2];
  g_prev_ = s.vectors[3];
  outgoing_ = s.vectors[4];
  rng_ = engine;
}

}  // namespace starling::algorithms
