#include "algorithms/pairwise/async_admm.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "algorithms/pairwise/checked_merge.h"

namespace starling::algorithms {
namespace {

constexpr double kArmijo = 1e-4;
// Below this relative size a predicted decrease is lost in the rounding of the value itself:
// the (full) Newton step is taken as it is.
constexpr double kValueNoise = 1e-13;

std::unique_ptr<PairwiseAlgorithm> MakeAsyncAdmm(const PairwiseOptions& options,
                                                 const NodeSetup& setup) {
  if (options.compression != "none") {
    throw std::invalid_argument("--compression " + options.compression +
                                ": --algorithm async-admm exchanges full-precision points only");
  }
  return std::make_unique<AsyncAdmm>(setup, AsyncAdmmParamTable().Read(options.params),
                                     options.local_steps);
}

// out[i] = 0.5 * (a[i] + s[i]), as Eigen computes 0.5 * (a + s), in one pass that also checks s
// (MapIfFinite). True if every s[i] was finite; out is written either way.
bool HalfSumIfFinite(const double* a, const double* s, double* out, size_t n) {
  return MapIfFinite(s, out, n, [a](double v, size_t i) { return 0.5 * (a[i] + v); });
}

}  // namespace

const ParamTable<AsyncAdmmParams>& AsyncAdmmParamTable() {
  static const auto* const table = new ParamTable<AsyncAdmmParams>(
      ParamTable<AsyncAdmmParams>("Asynchronous ADMM (arXiv:1307.8254)")
          .Add("admm-rho", &AsyncAdmmParams::rho,
               "async-admm: penalty rho of the edge constraints x_i = z_e (any rho > 0 "
               "converges; the speed depends on it)",
               Range::Positive())
          .Add("admm-newton-steps", &AsyncAdmmParams::newton_steps,
               "async-admm: at most this many Newton steps per local solve (logistic, "
               "multinomial; least squares is solved exactly)",
               Range::AtLeast(1))
          .Add("admm-tol", &AsyncAdmmParams::tol,
               "async-admm: a Newton local solve stops once the gradient norm of the local "
               "problem is at most this",
               Range::Positive()));
  return *table;
}

const PairwiseMethod& AsyncAdmmMethod() {
  static const PairwiseMethod method{"async-admm", MakeAsyncAdmm, &AsyncAdmmParamTable()};
  return method;
}

AsyncAdmm::AsyncAdmm(const NodeSetup& setup, const AsyncAdmmParams& params, int local_steps)
    : setup_(setup), params_(params), local_steps_(local_steps), x_(setup.x0) {
  const std::string problem = setup.problem->name();
  if (problem == "mlp") {
    throw std::invalid_argument(
        "--algorithm async-admm: --problem mlp is not supported (the local solve needs a convex "
        "problem: least-squares is solved exactly, logistic and multinomial by Newton's method)");
  }
  if (!(params.rho > 0) || !std::isfinite(params.rho)) {
    throw std::invalid_argument("--admm-rho " + std::to_string(params.rho) + ": must be > 0");
  }
  if (x_.size() != setup.problem->dim()) {
    throw std::invalid_argument("async-admm: starting point of the wrong dimension");
  }
  exact_ = problem == "least-squares";
  const int d = setup.problem->dim();
  z_.assign(setup.neighbors.size(), Vec::Zero(d));
  v_.assign(setup.neighbors.size(), Vec::Zero(d));
}

int AsyncAdmm::EdgeOf(int peer) const {
  const auto& n = setup_.neighbors;
  const auto it = std::lower_bound(n.begin(), n.end(), peer);
  if (it == n.end() || *it != peer) {
    throw std::invalid_argument("async-admm: node " + std::to_string(peer) +
                                " is not a neighbour of node " + std::to_string(setup_.id));
  }
  return static_cast<int>(it - n.begin());
}

void AsyncAdmm::Solve() {
  if (!dirty_) return;
  const int d = static_cast<int>(x_.size());
  const int deg = static_cast<int>(z_.size());
  // f(x) + <sum v, x> + (rho deg/2)||x - mean z||^2 = f(x) - <shift, x> + (mu/2)||x - center||^2.
  shift_ = Vec::Zero(d);
  center_ = Vec::Zero(d);
  for (int e = 0; e < deg; ++e) {
    shift_ -= v_[e];
    center_ += z_[e];
  }
  if (deg > 0) center_ /= static_cast<double>(deg);
  const double mu = params_.rho * deg;
  if (exact_) {
    if (solves_ == 0) counters_.gradient_passes += 1.0;  // forming A^T A
    if (!setup_.problem->SolveProximal(shift_, mu, center_, &x_)) {
      throw std::runtime_error("async-admm: node " + std::to_string(setup_.id) +
                               ": the local least-squares problem has no unique minimiser "
                               "(no neighbour and a rank-deficient shard with --l2 0)");
    }
  } else {
    NewtonSolve(shift_, mu, center_);
  }
  ++solves_;
  dirty_ = false;
}

void AsyncAdmm::NewtonSolve(const Vec& shift, double mu, const Vec& center) {
  const Problem& f = *setup_.problem;
  const int d = static_cast<int>(x_.size());
  const auto value = [&](const Vec& x) {
    counters_.gradient_passes += 1.0;
    return f.Value(x) - shift.dot(x) + 0.5 * mu * (x - center).squaredNorm();
  };
  const auto gradient = [&](const Vec& x, Vec* g) {
    counters_.gradient_passes += 1.0;
    f.Gradient(x, g);
    *g += mu * (x - center) - shift;
  };
  gradient(x_, &grad_);
  double phi = value(x_);
  for (int step = 0; step < params_.newton_steps; ++step) {
    const double g_norm = grad_.norm();
    if (!(g_norm > params_.tol)) break;
    // Newton direction by conjugate gradients on (H + mu I) p = -g, to the forcing tolerance
    // min(0.5, sqrt ||g||) ||g|| (superlinear near the solution), at most 2d + 20 products.
    const double cg_tol = std::max(std::min(0.5, std::sqrt(g_norm)) * g_norm, 0.1 * params_.tol);
    dir_ = Vec::Zero(d);
    r_ = -grad_;
    p_ = r_;
    double rr = r_.squaredNorm();
    for (int k = 0; k < 2 * d + 20 && std::sqrt(rr) > cg_tol; ++k) {
      f.HessianVector(x_, p_, &hp_);
      counters_.gradient_passes += 1.0;
      hp_ += mu * p_;
      const double curvature = p_.dot(hp_);
      if (!(curvature > 0.0)) break;
      const double alpha = rr / curvature;
      dir_ += alpha * p_;
      r_ -= alpha * hp_;
      const double rr_next = r_.squaredNorm();
      p_ = r_ + (rr_next / rr) * p_;
      rr = rr_next;
    }
    double slope = grad_.dot(dir_);
    if (!(slope < 0.0)) {
      dir_ = -grad_;
      slope = -g_norm * g_norm;
    }
    // Backtracking on the local objective; a step whose predicted decrease is below rounding
    // is taken whole (there Newton's unit step is the right one).
    double t = 1.0;
    bool accepted = false;
    for (int halving = 0; halving < 60 && !accepted; ++halving, t *= 0.5) {
      trial_ = x_ + t * dir_;
      if (-t * slope <= kValueNoise * std::max(1.0, std::abs(phi))) {
        accepted = true;
        phi = value(trial_);
      } else {
        const double phi_trial = value(trial_);
        if (std::isfinite(phi_trial) && phi_trial <= phi + kArmijo * t * slope) {
          accepted = true;
          phi = phi_trial;
        }
      }
    }
    if (!accepted) break;  // no decrease left at this precision
    x_ = trial_;
    gradient(x_, &grad_);
  }
}

void AsyncAdmm::LocalStep() {
  Solve();
  ++since_exchange_;
  ++since_merge_;
  ++counters_.local_steps;
}

std::shared_ptr<const Vec> AsyncAdmm::PointOf(int edge) {
  std::shared_ptr<Vec> point = points_.Take();
  *point = x_ + v_[edge] / params_.rho;
  counters_.bits_sent += 64 * point->size();
  return point;
}

void AsyncAdmm::Apply(int edge, const Vec& x, const Vec& mine,
                      const Eigen::Ref<const Vec>& theirs) {
  // Both sides add the same two vectors (addition commutes), so they hold the same z_e.
  z_[edge] = 0.5 * (mine + theirs);
  v_[edge] += params_.rho * (x - z_[edge]);
  dirty_ = true;
  since_merge_ = 0;
}

std::shared_ptr<const Vec> AsyncAdmm::BeginExchange(int peer, uint64_t seq) {
  if (outstanding_) throw std::logic_error("async-admm: an exchange is already outstanding");
  const int edge = EdgeOf(peer);
  Solve();
  std::shared_ptr<const Vec> point = PointOf(edge);
  if (offers_.size() > kKeptOfferSnapshots) offers_.pop_front();
  offers_.push_back({seq, edge, x_, point});
  outstanding_ = true;
  return point;
}

bool AsyncAdmm::CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& their_point) {
  for (auto it = offers_.begin(); it != offers_.end(); ++it) {
    if (it->seq != seq) continue;
    Apply(it->edge, it->x, *it->point, their_point);
    if (outstanding_ && std::next(it) == offers_.end()) outstanding_ = false;
    offers_.erase(it);
    ++counters_.exchanges_initiated;
    since_exchange_ = 0;
    return true;
  }
  return false;
}

void AsyncAdmm::AbortExchange(bool may_still_reply) {
  if (!outstanding_) return;
  outstanding_ = false;
  ++counters_.exchanges_aborted;
  if (!may_still_reply) offers_.pop_back();
}

std::shared_ptr<const Vec> AsyncAdmm::Respond(int peer, const Eigen::Ref<const Vec>& their_point) {
  const int edge = EdgeOf(peer);
  if (dirty_) ++respond_solves_;
  Solve();
  std::shared_ptr<const Vec> point = PointOf(edge);
  Apply(edge, x_, *point, their_point);
  ++counters_.exchanges_served;
  return point;
}

bool AsyncAdmm::ApplyIfFinite(int edge, const Vec& x, const Vec& mine,
                              const Eigen::Ref<const Vec>& theirs, size_t* first_bad) {
  // The wire checks every received vector's dimension (exchange_wire.h): a mismatch here is a
  // local bug, and the raw loop must not read past either vector.
  if (theirs.size() != mine.size()) {
    throw std::invalid_argument("async-admm: a partner's point of " +
                                std::to_string(theirs.size()) + " values, expected " +
                                std::to_string(mine.size()));
  }
  const size_t n = static_cast<size_t>(mine.size());
  z_next_.resize(mine.size());
  if (!HalfSumIfFinite(mine.data(), theirs.data(), z_next_.data(), n)) {
    *first_bad = FirstNonFinite(theirs.data(), n);
    return false;
  }
  // The rest of Apply, on the committed z_e.
  z_[edge].swap(z_next_);
  v_[edge] += params_.rho * (x - z_[edge]);
  dirty_ = true;
  since_merge_ = 0;
  return true;
}

AsyncAdmm::MergeResult AsyncAdmm::CompleteExchangeChecked(uint64_t seq,
                                                          const Eigen::Ref<const Vec>& their_point,
                                                          size_t* first_bad) {
  for (auto it = offers_.begin(); it != offers_.end(); ++it) {
    if (it->seq != seq) continue;
    if (!ApplyIfFinite(it->edge, it->x, *it->point, their_point, first_bad)) {
      return MergeResult::kRefused;  // the offer stays kept, as it was
    }
    if (outstanding_ && std::next(it) == offers_.end()) outstanding_ = false;
    offers_.erase(it);
    ++counters_.exchanges_initiated;
    since_exchange_ = 0;
    return MergeResult::kMerged;
  }
  return MergeResult::kNoSnapshot;
}

std::shared_ptr<const Vec> AsyncAdmm::RespondChecked(int peer,
                                                     const Eigen::Ref<const Vec>& their_point,
                                                     size_t* first_bad) {
  const int edge = EdgeOf(peer);
  if (dirty_) {
    // The solve comes before the first pass that reads the point (its reply u_j and z_e need
    // the new x) and changes x and the counters: the point is checked before it, in a scan of
    // its own (small beside the solve, which reads the whole shard at least once); then
    // Respond's merge as it is.
    if (!their_point.allFinite()) {
      *first_bad = FirstNonFinite(their_point.data(), static_cast<size_t>(their_point.size()));
      return nullptr;
    }
    return Respond(peer, their_point);
  }
  // x is solved: Respond's reply and merge, checked in z_e's pass and committed after it.
  std::shared_ptr<Vec> point = points_.Take();
  *point = x_ + v_[edge] / params_.rho;
  if (!ApplyIfFinite(edge, x_, *point, their_point, first_bad)) {
    return nullptr;  // the reply's buffer goes back to the pool
  }
  counters_.bits_sent += 64 * point->size();
  ++counters_.exchanges_served;
  return point;
}

PairwiseCounters AsyncAdmm::counters() const { return counters_; }

bool AsyncAdmm::SaveState(AlgorithmState* s) const {
  *s = AlgorithmState();
  s->algorithm = "async-admm";
  s->ints = {counters_.local_steps,
             counters_.exchanges_initiated,
             counters_.exchanges_served,
             counters_.exchanges_aborted,
             counters_.bits_sent,
             since_exchange_,
             since_merge_,
             solves_,
             dirty_ ? 1 : 0};
  s->reals = {counters_.gradient_passes};
  s->vectors.push_back(x_);
  for (const Vec& z : z_) s->vectors.push_back(z);
  for (const Vec& v : v_) s->vectors.push_back(v);
  return true;
}

void AsyncAdmm::LoadState(const AlgorithmState& s) {
  const size_t deg = z_.size();
  CheckStateShape(s, "async-admm", 9, 1, 1 + 2 * deg, 0);
  for (const Vec& v : s.vectors) {
    if (v.size() != x_.size()) throw std::invalid_argument("checkpoint: wrong dimension");
  }
  counters_ = PairwiseCounters();
  counters_.local_steps = s.ints[0];
  counters_.exchanges_initiated = s.ints[1];
  counters_.exchanges_served = s.ints[2];
  counters_.exchanges_aborted = s.ints[3];
  counters_.bits_sent = s.ints[4];
  since_exchange_ = static_cast<int>(s.ints[5]);
  since_merge_ = static_cast<int>(s.ints[6]);
  solves_ = s.ints[7];
  counters_.gradient_passes = s.reals[0];
  x_ = s.vectors[0];
  for (size_t e = 0; e < deg; ++e) {
    z_[e] = s.vectors[1 + e];
    v_[e] = s.vectors[1 + deg + e];
  }
  dirty_ = s.ints[8] != 0;  // x is the minimiser for z, v unless they changed since its solve
  offers_.clear();
  outstanding_ = false;
}

}  // namespace starling::algorithms
