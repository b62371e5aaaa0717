#include "algorithms/pairwise/dadao.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>

#include "algorithms/pairwise/acid_swarm_sgd.h"
#include "algorithms/pairwise/counters_state.h"
#include "algorithms/pairwise/pairwise_method.h"

namespace starling::algorithms {
namespace {

constexpr uint64_t kGradientStream = 1;
constexpr uint64_t kGossipStream = 2;
// The furthest a received time moves the node's clock in one message: a peer's clock far ahead
// (or a hostile one) cannot make the node skip more than this much of its ODE at once.
constexpr double kMaxClockJump = 1000.0;
// The kind slot of a message (after the clock): a gossip (or a reply), or a ping.
constexpr double kGossip = 0.0;
constexpr double kPing = 1.0;
// How far behind the node's time a gossip of its schedule may lie and still be taken.
constexpr double kMaxOverdueGossip = 2.0;
// Offers in a row left unanswered by a neighbour before it stops holding the node.
constexpr int kUnansweredToRelease = 3;
// Settling pings sent for one timed-out gossip before its half is left to the next reply on
// that edge (the neighbour may be gone).
constexpr int kSettleAttempts = 3;

std::unique_ptr<PairwiseAlgorithm> MakeDadao(const PairwiseOptions& options,
                                             const NodeSetup& setup) {
  if (options.compression != "none") {
    throw std::invalid_argument("--compression '" + options.compression +
                                "': dadao runs at full precision only (--compression none)");
  }
  const DadaoParams p = DadaoParamTable().Read(options.params);
  double mu = p.mu;
  if (mu == DadaoParams::kAuto) {
    mu = setup.problem->l2();
    if (!(mu > 0)) {
      throw std::invalid_argument(
          "--dadao-mu: the problem's --l2 is 0, so its strong convexity is unknown; give "
          "--dadao-mu > 0");
    }
  }
  // The network-wide bound when the run computed it (default step), else this node's own.
  const double smoothness =
      options.smoothness > 0 ? options.smoothness : setup.problem->SmoothnessBound();
  if (options.graph.empty()) {
    throw std::invalid_argument(
        "--algorithm dadao: its constants come from the graph, which this run does not give");
  }
  const DadaoGraph g = DadaoGraphOf(options.graph, p.comm_rate);
  return std::make_unique<Dadao>(setup, DadaoConstantsOf(smoothness, mu, g.chi1), g.comm_rate,
                                 p.max_skew);
}

uint64_t SplitMix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

const ParamTable<DadaoParams>& DadaoParamTable() {
  static const auto* const table = new ParamTable<DadaoParams>(
      ParamTable<DadaoParams>("DADAO (arXiv:2208.00779)")
          .Add("dadao-mu", &DadaoParams::mu,
               "DADAO: strong convexity mu of every f_i (-1 = the problem's --l2)",
               Range::AtLeast(DadaoParams::kAuto))
          .Add("dadao-comm-rate", &DadaoParams::comm_rate,
               "DADAO: gossip initiations per node per gradient event, on the node's own Poisson "
               "clock (-1 = from the graph: sqrt(2 chi1 chi2) of the unit-rate gossip Laplacian)",
               Range::AtLeast(DadaoParams::kAuto))
          .Add("dadao-max-skew", &DadaoParams::max_skew,
               "DADAO, daemons: how far a node's clock may run beyond the oldest clock it has "
               "heard from a neighbour before it waits and pings (0 = unbounded; the "
               "simulator, which has a common time, ignores it)",
               Range::AtLeast(0.0))
          .CrossCheck([](const DadaoParams& p, const ParamContext&) {
            if (!(p.mu > 0) && p.mu != DadaoParams::kAuto) {
              FailParam("dadao-mu", p.mu, "must be > 0, or -1 for the problem's l2");
            }
            if (!(p.comm_rate > 0) && p.comm_rate != DadaoParams::kAuto) {
              FailParam("dadao-comm-rate", p.comm_rate, "must be > 0, or -1 for the graph's");
            }
          }));
  return *table;
}

int DadaoMessageSize(int dim) { return Dadao::MessageSize(dim); }

const PairwiseMethod& DadaoMethod() {
  static const PairwiseMethod method{"dadao", MakeDadao, &DadaoParamTable(), DadaoMessageSize};
  return method;
}

DadaoConstants DadaoConstantsOf(double smoothness, double mu, double chi1) {
  if (!(mu > 0) || !(smoothness >= mu) || !std::isfinite(smoothness)) {
    throw std::invalid_argument("dadao: needs 0 < mu <= L (mu = " + std::to_string(mu) +
                                ", L = " + std::to_string(smoothness) + ")");
  }
  if (!(chi1 > 0) || !std::isfinite(chi1)) throw std::invalid_argument("dadao: chi1 must be > 0");
  DadaoConstants c;
  const double l = smoothness;
  c.nu = mu / 2;
  const double r = std::sqrt(c.nu / l);
  c.eta = c.eta_tilde = c.alpha_tilde = r / 8;
  c.alpha = r / 4;
  c.theta = 0.5 / r;
  c.gamma = 1 / (4 * l);
  c.gamma_tilde = 1 / (4 * std::sqrt(l * c.nu));
  c.delta = r / 4;
  c.delta_tilde = 1;
  c.beta = 0.5;
  c.beta_tilde = 2 * chi1 / r;
  return c;
}

Matrix6 DadaoOdeMatrix(const DadaoConstants& c) {
  enum { kX, kXt, kY, kYt, kZ, kZt };
  Matrix6 m = Matrix6::Zero();
  m(kX, kX) = -c.eta, m(kX, kXt) = c.eta;
  m(kXt, kX) = c.eta_tilde, m(kXt, kXt) = -c.eta_tilde;
  m(kY, kY) = -c.alpha, m(kY, kYt) = c.alpha;
  m(kYt, kXt) = -c.theta * c.nu, m(kYt, kY) = -c.theta, m(kYt, kZ) = -c.theta;
  m(kZ, kZ) = -c.alpha, m(kZ, kZt) = c.alpha;
  m(kZt, kZ) = c.alpha_tilde, m(kZt, kZt) = -c.alpha_tilde;
  return m;
}

Matrix6 ExpDadao(const Matrix6& a) {
  const double norm = a.cwiseAbs().colwise().sum().maxCoeff();  // the 1-norm
  if (!std::isfinite(norm)) throw std::invalid_argument("dadao: a non-finite ODE matrix");
  int s = 0;
  if (norm > 0.5) s = static_cast<int>(std::ceil(std::log2(norm / 0.5)));
  const Matrix6 b = a / std::ldexp(1.0, s);
  // Horner: I + b (I + b/2 (I + b/3 (... (I + b/18)))).
  Matrix6 e = Matrix6::Identity();
  for (int k = 18; k >= 1; --k) e = Matrix6::Identity() + (b * e) / k;
  for (int k = 0; k < s; ++k) e = e * e;
  return e;
}

double DadaoClockDraw(uint64_t seed, uint64_t stream, uint64_t k) {
  const uint64_t h = SplitMix64(SplitMix64(seed ^ (stream * 0xd1b54a32d192ed03ULL)) + k);
  const double u = static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1)
  return -std::log1p(-u);
}

DadaoGraph DadaoGraphOf(const std::vector<std::vector<int>>& adjacency, double comm_rate) {
  const AcidConstants unit = AcidConstantsOf(adjacency, 1);
  DadaoGraph g;
  g.chi1_unit = unit.chi1;
  g.chi2_unit = unit.chi2;
  g.comm_rate = comm_rate == DadaoParams::kAuto ? std::sqrt(2 * unit.chi1 * unit.chi2) : comm_rate;
  if (!(g.comm_rate > 0)) throw std::invalid_argument("--dadao-comm-rate must be > 0");
  g.chi1 = unit.chi1 / g.comm_rate;
  return g;
}

Dadao::Dadao(const NodeSetup& setup, const DadaoConstants& constants, double comm_rate,
             double max_skew)
    : setup_(setup),
      c_(constants),
      m_(DadaoOdeMatrix(constants)),
      comm_rate_(comm_rate),
      max_skew_(max_skew),
      dim_(static_cast<int>(setup.x0.size())),
      p_(Eigen::Matrix<double, Eigen::Dynamic, 6>::Zero(dim_, 6)) {
  if (!(comm_rate > 0) || !std::isfinite(comm_rate)) {
    throw std::invalid_argument("--dadao-comm-rate must be > 0");
  }
  p_.col(0) = setup.x0;
  SyncModel();
  const size_t n = setup.neighbors.size();
  served_.assign(n, Vec::Zero(dim_));
  mirrored_.assign(n, Vec::Zero(dim_));
  absorbed_seq_.assign(n, 0);
  heard_.assign(n, 0.0);
  unanswered_.assign(n, 0);
  next_grad_ = DadaoClockDraw(setup.seed, kGradientStream, grad_draws_++);
  next_gossip_ = DadaoClockDraw(setup.seed, kGossipStream, gossip_draws_++) / comm_rate_;
}

int Dadao::Edge(int peer) const {
  const auto& nb = setup_.neighbors;
  const auto it = std::lower_bound(nb.begin(), nb.end(), peer);
  if (it == nb.end() || *it != peer) {
    throw std::invalid_argument("dadao: node " + std::to_string(peer) +
                                " is not a neighbour of node " + std::to_string(setup_.id));
  }
  return static_cast<int>(it - nb.begin());
}

void Dadao::AdvanceTo(double t) {
  if (!(t > now_)) return;
  // Row k of P holds coordinate k of the six vectors: P <- P exp(M dt)^T.
  const Matrix6 e = ExpDadao(m_ * (t - now_));
  p_ = p_ * e.transpose();
  now_ = t;
  SyncModel();
}

std::shared_ptr<const Vec> Dadao::Message(const Vec& v, double kind) {
  std::shared_ptr<Vec> m = messages_.Take();
  m->resize(MessageSize(dim_));
  m->head(dim_) = v;
  m->tail(m->size() - dim_).setZero();
  // A node past its budget sends -1: its clock stands still and must not hold its neighbours.
  (*m)[dim_] = ended_ ? -1.0 : now_;
  (*m)[dim_ + 1] = kind;
  counters_.bits_sent += 64 * static_cast<int64_t>(m->size());
  return m;
}

void Dadao::CheckMessage(const Eigen::Ref<const Vec>& message) const {
  if (message.size() != MessageSize(dim_)) {
    throw std::invalid_argument("dadao: a message of " + std::to_string(message.size()) +
                                " values, expected " + std::to_string(MessageSize(dim_)));
  }
}

double Dadao::Bound() const {
  if (!(max_skew_ > 0) || heard_.empty()) return std::numeric_limits<double>::infinity();
  return *std::min_element(heard_.begin(), heard_.end()) + max_skew_;
}

bool Dadao::Gated() const { return !ended_ && NextEventTime() > Bound(); }

bool Dadao::GossipDue() const {
  if (ended_) return false;
  if (owed_gossips_ > 0) return true;
  return next_gossip_ <= next_grad_ && next_gossip_ <= Bound();
}

void Dadao::GradientEvent() {
  AdvanceTo(next_grad_);
  next_grad_ = now_ + DadaoClockDraw(setup_.seed, kGradientStream, grad_draws_++);
  setup_.problem->Gradient(p_.col(0), &grad_);
  grad_ += -c_.nu * p_.col(0) - p_.col(3);  // g = grad f_i(X) - nu X - Y~
  p_.col(0) -= c_.gamma * grad_;
  p_.col(1) -= c_.gamma_tilde * grad_;
  p_.col(3) += (c_.delta + c_.delta_tilde) * grad_;
  SyncModel();
  counters_.gradient_passes += 1.0;
  ++counters_.local_steps;
}

void Dadao::LocalStep() { GradientEvent(); }

void Dadao::CatchUpTo(double t) {
  if (ended_ || !(t > now_)) return;
  while (next_grad_ <= t) GradientEvent();
  AdvanceTo(t);
  // Overdue gossips stay due (taken one after another, at once), but not those of a long
  // absence (a node resumed from its checkpoint): they did not happen, and a burst of them
  // would be a gossip rate far above r.
  while (next_gossip_ < t - kMaxOverdueGossip) {
    next_gossip_ += DadaoClockDraw(setup_.seed, kGossipStream, gossip_draws_++) / comm_rate_;
    ++gossips_dropped_;
  }
}

void Dadao::Hear(const Eigen::Ref<const Vec>& message, int edge) {
  const double t = message[dim_];
  if (!std::isfinite(t)) {
    ++counters_.decode_failures;
    return;
  }
  unanswered_[edge] = 0;
  if (t < 0) {  // the neighbour has ended: its clock stands still and holds nobody
    heard_[edge] = std::numeric_limits<double>::infinity();
    return;
  }
  const double capped = std::min(t, now_ + kMaxClockJump);
  // A released neighbour (infinity) that is heard again holds the node from its clock on.
  heard_[edge] = std::isinf(heard_[edge]) ? capped : std::max(heard_[edge], capped);
  // Not beyond the skew bound: pulled further, the node would run ahead of its other
  // neighbours, and the bound would hold nobody.
  CatchUpTo(std::min(capped, Bound()));
}

bool Dadao::IsPing(const Eigen::Ref<const Vec>& message) {
  const double kind = message[dim_ + 1];
  if (kind == kGossip) return false;
  if (kind != kPing) ++counters_.decode_failures;  // unknown: changes nothing, as a ping
  return true;
}

std::shared_ptr<const Vec> Dadao::BeginExchange(int peer, uint64_t seq) {
  if (outstanding_) throw std::logic_error("dadao: an exchange is already outstanding");
  const int edge = Edge(peer);
  if (offers_.size() > kKeptOfferSnapshots) offers_.pop_front();
  offers_.push_back({seq, edge, false});
  outstanding_ = true;
  offered_edge_ = edge;
  offered_gossip_ = false;
  offered_settle_ = false;
  // In the end phase the node's clock stands still (no gradient event will follow): the gossip
  // then only averages Y + Z, and X stays where the budget left it.
  if (ended_) return Message(p_.col(2) + p_.col(4), kGossip);
  if (settle_edge_ >= 0) {
    if (edge == settle_edge_) {
      // A gossip on this edge timed out: ask for the running sum at once, the node's clock
      // standing still meanwhile (ShouldWait), so that the lost reply's half lands at about the
      // time of the responder's, or the lost request's gossip is retried at once.
      offers_.back().settle = true;
      offered_settle_ = true;
      return Message(p_.col(2) + p_.col(4), kPing);
    }
    // The driver cannot reach that neighbour (excluded after time-outs): the half waits for the
    // next reply on that edge, as without settling.
    settle_edge_ = -1;
    ++settles_given_up_;
  }
  if (GossipDue()) {
    if (owed_gossips_ > 0) {
      --owed_gossips_;  // a refused one, again at once
    } else {
      // An overdue one (the node was pulled past it) is taken now; the schedule keeps its
      // times, so that the node still makes r gossips per unit of its time.
      AdvanceTo(next_gossip_);
      next_gossip_ += DadaoClockDraw(setup_.seed, kGossipStream, gossip_draws_++) / comm_rate_;
    }
    offered_gossip_ = true;
    ++gossips_;
    return Message(p_.col(2) + p_.col(4), kGossip);
  }
  // Held by the skew bound: integrate as far as the bound allows and ask for the neighbour's
  // clock; no state changes hands.
  AdvanceTo(std::min(Bound(), NextEventTime()));
  ++pings_;
  return Message(p_.col(2) + p_.col(4), kPing);
}

bool Dadao::CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& their_message) {
  CheckMessage(their_message);
  auto it =
      std::find_if(offers_.begin(), offers_.end(), [seq](const Offer& o) { return o.seq == seq; });
  if (it == offers_.end()) return false;
  const int edge = it->edge;
  const bool settle = it->settle;
  if (outstanding_ && std::next(it) == offers_.end()) outstanding_ = false;
  offers_.erase(it);
  // A reply older than one already absorbed carries an older running sum: ignore it.
  if (seq > absorbed_seq_[edge]) {
    absorbed_seq_[edge] = seq;
    if (edge == settle_edge_) {
      // The settling ping's reply, or the timed-out gossip's own (late) one. A running sum
      // still equal to the one mirrored means the gossip's request never arrived (its d is a
      // difference of two nodes' states, never exactly 0 in practice): it is due again at once.
      // (If that request arrives after all, later, the responder serves it and the ledger
      // absorbs it: one gossip more, as after a crossing.)
      if (settle && their_message.head(dim_) == mirrored_[edge]) {
        ++owed_gossips_;
        --gossips_;
        ++retried_;
      } else {
        ++settled_;
      }
      settle_edge_ = -1;
    }
    Hear(their_message, edge);
    const Vec delta = their_message.head(dim_) - mirrored_[edge];
    p_.col(4) += c_.beta * delta;
    p_.col(5) += c_.beta_tilde * delta;
    mirrored_[edge] = their_message.head(dim_);
  }
  ++counters_.exchanges_initiated;
  return true;
}

void Dadao::AbortExchange(bool may_still_reply) { Abort(may_still_reply, /*crossed=*/false); }

void Dadao::AbortCrossedExchange() { Abort(/*may_still_reply=*/true, /*crossed=*/true); }

void Dadao::Abort(bool may_still_reply, bool crossed) {
  if (!outstanding_) return;
  outstanding_ = false;
  ++counters_.exchanges_aborted;
  if (offered_settle_) {
    // A settling ping lost (or refused): again, a few times, then give up.
    if (--settle_attempts_left_ <= 0) {
      settle_edge_ = -1;
      ++settles_given_up_;
    }
  } else if (settling_ && offered_gossip_ && may_still_reply && !crossed && !ended_) {
    // A gossip timed out: its request or its reply was lost. Settle it before the next event
    // (BeginExchange).
    settle_edge_ = offered_edge_;
    settle_attempts_left_ = kSettleAttempts;
  }
  // A neighbour that leaves kUnansweredToRelease offers in a row unanswered (gone, or SIGKILLed)
  // no longer holds the node; the next message from it does again. (A crossed offer counts too:
  // the neighbour's request, served next, is heard and resets the count.)
  if (may_still_reply && ++unanswered_[offered_edge_] >= kUnansweredToRelease) {
    heard_[offered_edge_] = std::numeric_limits<double>::infinity();
  }
  if (!may_still_reply) offers_.pop_back();  // refused: no reply will come
  // Refused (BUSY: the partner had offered to this node at the same moment), or crossed (the
  // driver, of the higher id, gave our offer up to serve the neighbour's request; the lower id
  // answers ours BUSY, which then matches no offer): nothing changed hands, so the gossip is due
  // again at once. Lost gossips slow the method down and, beyond a third or so of them, make it
  // diverge (their rate r enters beta~); without this every crossing with a neighbour's ping
  // lost a gossip. If the neighbour serves a crossed offer after all (its own had timed out),
  // the late reply is absorbed by the ledger and the node has made one gossip more. A time-out
  // is not a refusal: it is settled (above).
  if ((!may_still_reply || crossed) && offered_gossip_) {
    ++owed_gossips_;
    --gossips_;
  }
}

std::shared_ptr<const Vec> Dadao::Respond(int peer, const Eigen::Ref<const Vec>& their_message) {
  CheckMessage(their_message);
  const int edge = Edge(peer);
  Hear(their_message, edge);
  if (!IsPing(their_message)) {
    const Vec d = p_.col(2) + p_.col(4) - their_message.head(dim_);
    p_.col(4) -= c_.beta * d;
    p_.col(5) -= c_.beta_tilde * d;
    served_[edge] += d;
  }
  ++counters_.exchanges_served;
  // The running sum, also to a ping: it lets the initiator absorb a reply it lost.
  return Message(served_[edge], kGossip);
}

// Layout "dadao": ints = 6 counters and the two draw counts; reals = gradient passes, now, the
// next gradient and gossip times; vectors = the six state vectors, then per edge served and
// mirrored. The absorbed seqs are not kept (seqs belong to one life of the driver).
bool Dadao::SaveState(AlgorithmState* s) const {
  *s = AlgorithmState();
  s->algorithm = "dadao";
  AppendCounterInts(counters_, &s->ints);
  s->ints.insert(s->ints.end(),
                 {static_cast<int64_t>(grad_draws_), static_cast<int64_t>(gossip_draws_)});
  s->reals = {counters_.gradient_passes, now_, next_grad_, next_gossip_};
  for (int k = 0; k < 6; ++k) s->vectors.push_back(p_.col(k));
  for (size_t e = 0; e < served_.size(); ++e) {
    s->vectors.push_back(served_[e]);
    s->vectors.push_back(mirrored_[e]);
  }
  return true;
}

void Dadao::LoadState(const AlgorithmState& s) {
  const size_t n = served_.size();
  CheckStateShape(s, "dadao", 8, 4, 6 + 2 * n, 0);
  for (const Vec& v : s.vectors) {
    if (v.size() != dim_) throw std::invalid_argument("checkpoint: wrong dimension");
  }
  for (int64_t v : s.ints) {
    if (v < 0) throw std::invalid_argument("checkpoint: a negative dadao counter");
  }
  for (double v : s.reals) {
    if (!std::isfinite(v) || v < 0) throw std::invalid_argument("checkpoint: bad dadao clock");
  }
  ReadCounterInts(s.ints, 0, &counters_);
  grad_draws_ = static_cast<uint64_t>(s.ints[6]);
  gossip_draws_ = static_cast<uint64_t>(s.ints[7]);
  counters_.gradient_passes = s.reals[0];
  now_ = s.reals[1];
  next_grad_ = s.reals[2];
  next_gossip_ = s.reals[3];
  for (int k = 0; k < 6; ++k) p_.col(k) = s.vectors[k];
  for (size_t e = 0; e < n; ++e) {
    served_[e] = s.vectors[6 + 2 * e];
    mirrored_[e] = s.vectors[7 + 2 * e];
  }
  absorbed_seq_.assign(n, 0);
  // Refreshed by the next messages; meanwhile the node pings (a resumed node's clock is behind
  // its neighbours': it catches up when it hears them).
  heard_.assign(n, 0.0);
  unanswered_.assign(n, 0);
  offers_.clear();
  outstanding_ = false;
  settle_edge_ = -1;
  SyncModel();
}

}  // namespace starling::algorithms
