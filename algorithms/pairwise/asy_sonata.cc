#include "algorithms/pairwise/asy_sonata.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>

#include "algorithms/pairwise/counters_state.h"
#include "algorithms/pairwise/pairwise_method.h"

namespace starling::algorithms {
namespace {

// Versions travel as doubles: exact up to 2^53.
constexpr double kMaxVersion = 9007199254740992.0;

std::unique_ptr<PairwiseAlgorithm> MakeAsySonata(const PairwiseOptions& options,
                                                 const NodeSetup& setup) {
  if (options.compression != "none") {
    throw std::invalid_argument("--compression '" + options.compression +
                                "': asy-sonata runs at full precision only (--compression none)");
  }
  const ScheduledStep step{ResolvePairwiseStep(options), options.step_schedule};
  return std::make_unique<AsySonata>(setup, step, options.local_steps);
}

int AsySonataMessageSize(int dim) { return AsySonata::MessageSize(dim); }

}  // namespace

const PairwiseMethod& AsySonataMethod() {
  static const PairwiseMethod method{"asy-sonata", MakeAsySonata, nullptr, AsySonataMessageSize};
  return method;
}

AsySonata::AsySonata(const NodeSetup& setup, ScheduledStep step, int local_steps)
    : setup_(setup),
      step_(step),
      local_steps_(local_steps),
      dim_(static_cast<int>(setup.x0.size())),
      x_(setup.x0),
      // y = g = 0 at the start: the first step adds grad f_i(x0) - 0, so the invariant holds
      // from the first call on (0 = 0 before it).
      y_(Vec::Zero(dim_)),
      g_(Vec::Zero(dim_)),
      x_at_g_(setup.x0) {
  if (local_steps < 1) throw std::invalid_argument("--local-steps must be >= 1");
  const size_t n = setup.neighbors.size();
  pushed_.assign(n, Vec::Zero(dim_));
  received_.assign(n, Vec::Zero(dim_));
  pushed_version_.assign(n, 0);
  received_version_.assign(n, 0);
}

int AsySonata::Edge(int peer) const {
  const auto& nb = setup_.neighbors;
  const auto it = std::lower_bound(nb.begin(), nb.end(), peer);
  if (it == nb.end() || *it != peer) {
    throw std::invalid_argument("asy-sonata: node " + std::to_string(peer) +
                                " is not a neighbour of node " + std::to_string(setup_.id));
  }
  return static_cast<int>(it - nb.begin());
}

void AsySonata::LocalStep() {
  setup_.problem->Gradient(x_, &grad_);
  y_ += grad_ - g_;
  g_.swap(grad_);
  x_at_g_ = x_;
  x_.noalias() -= step_.At(counters_.local_steps) * y_;
  counters_.gradient_passes += 1.0;
  ++counters_.local_steps;
  ++since_exchange_;
  ++since_merge_;
}

std::shared_ptr<const Vec> AsySonata::Push(int edge) {
  // Half the tracker leaves now, on the edge's running sum; the other half stays (a = 1/2).
  const Vec half = 0.5 * y_;
  y_ -= half;
  pushed_[edge] += half;
  ++pushed_version_[edge];
  std::shared_ptr<Vec> m = messages_.Take();
  m->resize(MessageSize(dim_));
  m->head(dim_) = x_;
  m->segment(dim_, dim_) = pushed_[edge];
  m->tail(dim_).setZero();
  (*m)[2 * dim_] = static_cast<double>(pushed_version_[edge]);
  counters_.bits_sent += 64 * m->size();
  return m;
}

void AsySonata::CheckMessage(const Eigen::Ref<const Vec>& message) const {
  if (message.size() != MessageSize(dim_)) {
    throw std::invalid_argument("asy-sonata: a message of " + std::to_string(message.size()) +
                                " values, expected " + std::to_string(MessageSize(dim_)));
  }
}

void AsySonata::Absorb(int edge, const Eigen::Ref<const Vec>& message) {
  const double v = message[2 * dim_];
  if (!(v >= 0 && v < kMaxVersion) || v != std::floor(v)) {
    ++counters_.decode_failures;
    return;
  }
  const auto version = static_cast<int64_t>(v);
  if (version <= received_version_[edge]) return;  // a duplicate or an older, reordered one
  y_ += message.segment(dim_, dim_) - received_[edge];
  received_[edge] = message.segment(dim_, dim_);
  received_version_[edge] = version;
}

std::shared_ptr<const Vec> AsySonata::BeginExchange(int peer, uint64_t seq) {
  if (outstanding_) throw std::logic_error("asy-sonata: an exchange is already outstanding");
  const int edge = Edge(peer);
  if (offers_.size() > kKeptOfferSnapshots) offers_.pop_front();
  offers_.push_back({seq, edge});
  outstanding_ = true;
  return Push(edge);
}

bool AsySonata::CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& their_message) {
  CheckMessage(their_message);
  auto it =
      std::find_if(offers_.begin(), offers_.end(), [seq](const Offer& o) { return o.seq == seq; });
  if (it == offers_.end()) return false;
  const int edge = it->edge;
  if (outstanding_ && std::next(it) == offers_.end()) outstanding_ = false;
  offers_.erase(it);
  Absorb(edge, their_message);
  x_ = 0.5 * (x_ + their_message.head(dim_));
  ++counters_.exchanges_initiated;
  since_exchange_ = 0;
  since_merge_ = 0;
  return true;
}

void AsySonata::AbortExchange(bool may_still_reply) {
  if (!outstanding_) return;
  outstanding_ = false;
  ++counters_.exchanges_aborted;
  // The mass pushed with the offer stays on the edge's running sum: the next message on that
  // edge carries it, whether or not this reply ever comes.
  if (!may_still_reply) offers_.pop_back();
}

std::shared_ptr<const Vec> AsySonata::Respond(int peer,
                                              const Eigen::Ref<const Vec>& their_message) {
  CheckMessage(their_message);
  const int edge = Edge(peer);
  // The reply carries x before the merge and half the tracker before the absorption, so a
  // lossless exchange averages both x and y over the pair.
  std::shared_ptr<const Vec> reply = Push(edge);
  Absorb(edge, their_message);
  x_ = 0.5 * (x_ + their_message.head(dim_));
  ++counters_.exchanges_served;
  since_merge_ = 0;
  return reply;
}

// Layout "asy-sonata": ints = 8 counters and cadence, then per edge the pushed and the received
// version; reals = gradient passes; vectors = x, y, g, x_at_g, then per edge pushed and received.
bool AsySonata::SaveState(AlgorithmState* s) const {
  *s = AlgorithmState();
  s->algorithm = "asy-sonata";
  s->ints = {since_exchange_, since_merge_};
  AppendCounterInts(counters_, &s->ints);
  for (size_t e = 0; e < pushed_.size(); ++e) {
    s->ints.push_back(pushed_version_[e]);
    s->ints.push_back(received_version_[e]);
  }
  s->reals = {counters_.gradient_passes};
  s->vectors = {x_, y_, g_, x_at_g_};
  for (size_t e = 0; e < pushed_.size(); ++e) {
    s->vectors.push_back(pushed_[e]);
    s->vectors.push_back(received_[e]);
  }
  return true;
}

void AsySonata::LoadState(const AlgorithmState& s) {
  const size_t n = pushed_.size();
  CheckStateShape(s, "asy-sonata", 8 + 2 * n, 1, 4 + 2 * n, 0);
  for (const Vec& v : s.vectors) {
    if (v.size() != dim_) throw std::invalid_argument("checkpoint: wrong dimension");
  }
  for (size_t k = 8; k < s.ints.size(); ++k) {
    if (s.ints[k] < 0) throw std::invalid_argument("checkpoint: negative push version");
  }
  since_exchange_ = static_cast<int>(s.ints[0]);
  since_merge_ = static_cast<int>(s.ints[1]);
  ReadCounterInts(s.ints, 2, &counters_);
  counters_.gradient_passes = s.reals[0];
  x_ = s.vectors[0];
  y_ = s.vectors[1];
  g_ = s.vectors[2];
  x_at_g_ = s.vectors[3];
  for (size_t e = 0; e < n; ++e) {
    pushed_version_[e] = s.ints[8 + 2 * e];
    received_version_[e] = s.ints[9 + 2 * e];
    pushed_[e] = s.vectors[4 + 2 * e];
    received_[e] = s.vectors[5 + 2 * e];
  }
  offers_.clear();
  outstanding_ = false;
}

}  // namespace starling::algorithms
