#include "algorithms/quantized_swarm_sgd.h"

#include <iterator>
#include <stdexcept>

namespace starling::algorithms {

namespace {

constexpr int64_t kTagBits = 8;
constexpr int64_t kLatticeHeaderBits = 64;  // 32-bit hash + 32-bit dither seed

}  // namespace

QuantizedSwarmSgd::QuantizedSwarmSgd(const NodeSetup& setup, double step, int batch_size,
                                     int local_steps, LatticeQuantizer quantizer)
    : setup_(setup),
      step_(step),
      local_steps_(local_steps),
      oracle_(setup.problem, batch_size, setup.seed),
      quantizer_(quantizer),
      x_(setup.x0) {}

void QuantizedSwarmSgd::LocalStep() {
  oracle_.Compute(x_, &grad_);
  x_.noalias() -= step_ * grad_;
  ++since_exchange_;
  ++since_merge_;
  ++counters_.local_steps;
}

uint64_t QuantizedSwarmSgd::NextDitherSeed() {
  // 32 bits, so that the seed travels exactly in a double; distinct per node and message.
  const uint64_t mixed = (setup_.seed * 0x9E3779B97F4A7C15ULL) ^ (++dither_counter_ * 0xBF58476D1CE4E5B9ULL);
  return (mixed ^ (mixed >> 31)) & 0xffffffffULL;
}

void QuantizedSwarmSgd::EncodeLattice(const Vec& x, uint64_t dither_seed, Vec* message,
                                      Vec* point) {
  const Eigen::Index d = x.size();
  LatticeQuantizer::Dither(dither_seed, d, &dither_);
  const uint32_t hash = quantizer_.Encode(x, dither_, &ints_, &codes_, point);
  message->resize(d + 3);
  (*message)[0] = kLattice;
  (*message)[1] = hash;
  (*message)[2] = static_cast<double>(dither_seed);
  for (Eigen::Index k = 0; k < d; ++k) (*message)[3 + k] = codes_[k];
  counters_.bits_sent += kTagBits + kLatticeHeaderBits + quantizer_.bits() * d;
}

void QuantizedSwarmSgd::EncodeFull(const Vec& x, Vec* message) {
  message->resize(x.size() + 3);
  (*message)[0] = kFull;
  (*message)[1] = 0;
  (*message)[2] = 0;
  message->tail(x.size()) = x;
  counters_.bits_sent += kTagBits + 64 * x.size();
}

const Vec& QuantizedSwarmSgd::BeginExchange(int /*peer*/, uint64_t seq) {
  if (outstanding_) throw std::logic_error("QuantizedSwarmSgd: an exchange is already outstanding");
  if (offers_.size() > kKeptOfferSnapshots) offers_.pop_front();
  Offer offer{seq, x_, Vec(), next_full_};
  if (next_full_) {
    EncodeFull(x_, &message_);
    offer.point = x_;
    ++full_offers_;
    next_full_ = false;
  } else {
    EncodeLattice(x_, NextDitherSeed(), &message_, &offer.point);
  }
  offers_.push_back(std::move(offer));
  outstanding_ = true;
  return message_;
}

const Vec& QuantizedSwarmSgd::Respond(int /*peer*/, const Vec& offer) {
  const Eigen::Index d = x_.size();
  if (offer.size() != d + kHeaderSize || (offer[0] != kFull && offer[0] != kLattice)) {
    throw std::invalid_argument("QuantizedSwarmSgd: malformed offer");
  }
  const Vec snapshot = x_;
  if (offer[0] == kFull) {
    their_point_ = offer.tail(d);
    EncodeFull(snapshot, &reply_);
    point_ = snapshot;
  } else {
    LatticeQuantizer::Dither(static_cast<uint64_t>(offer[2]), d, &dither_);
    codes_.resize(d);
    for (Eigen::Index k = 0; k < d; ++k) codes_[k] = static_cast<uint32_t>(offer[3 + k]);
    const uint32_t hash = quantizer_.Decode(codes_, snapshot, dither_, &their_point_);
    EncodeLattice(snapshot, NextDitherSeed(), &reply_, &point_);
    const double margin = (quantizer_.modulus() / 2 - 1) * quantizer_.scale();
    if (hash != static_cast<uint32_t>(offer[1]) ||
        (point_ - their_point_).lpNorm<Eigen::Infinity>() >= margin) {
      // Undo the reply's bit count: a failure answer carries only its tag.
      counters_.bits_sent -= kLatticeHeaderBits + quantizer_.bits() * d;
      reply_.setZero();
      reply_[0] = kFailed;
      ++decode_failures_;
      return reply_;
    }
  }
  // X_j <- (Q_i + Q_j)/2 + (X_j - S_j), with X_j = S_j here.
  x_.noalias() += 0.5 * (their_point_ - point_) + (point_ - snapshot);
  ++counters_.exchanges_served;
  since_merge_ = 0;
  return reply_;
}

bool QuantizedSwarmSgd::CompleteExchange(uint64_t seq, const Vec& reply) {
  const Eigen::Index d = x_.size();
  for (auto it = offers_.begin(); it != offers_.end(); ++it) {
    if (it->seq != seq) continue;
    if (reply.size() != d + kHeaderSize) {
      throw std::invalid_argument("QuantizedSwarmSgd: bad reply size");
    }
    bool merged = true;
    if (reply[0] == kFailed) {
      // Neither side merged; the next offer goes at full precision.
      next_full_ = true;
      ++decode_failures_;
      merged = false;
    } else if (reply[0] == kFull) {
      their_point_ = reply.tail(d);
    } else {
      LatticeQuantizer::Dither(static_cast<uint64_t>(reply[2]), d, &dither_);
      codes_.resize(d);
      for (Eigen::Index k = 0; k < d; ++k) codes_[k] = static_cast<uint32_t>(reply[3 + k]);
      const uint32_t hash = quantizer_.Decode(codes_, it->snapshot, dither_, &their_point_);
      // Between correct peers the responder's margin check makes this exact; a mismatch means a
      // faulty peer. Averaging a wrong point would be worse than merging nothing, as for a
      // failure (the peer, which merged, then breaks the conservation of the sum of models).
      if (hash != static_cast<uint32_t>(reply[1])) {
        next_full_ = true;
        ++decode_failures_;
        merged = false;
      }
    }
    if (merged) {
      // X_i <- (Q_i + Q_j)/2 + (X_i - S_i).
      x_.noalias() += 0.5 * (their_point_ + it->point) - it->snapshot;
      since_merge_ = 0;
      ++counters_.exchanges_initiated;
    }
    const bool was_outstanding = outstanding_ && std::next(it) == offers_.end();
    offers_.erase(it);
    if (was_outstanding) outstanding_ = false;
    // After a failure the node still wants an exchange: the full-precision retry comes next.
    if (merged) since_exchange_ = 0;
    return true;
  }
  return false;
}

void QuantizedSwarmSgd::AbortExchange(bool may_still_reply) {
  if (!outstanding_) return;
  outstanding_ = false;
  ++counters_.exchanges_aborted;
  if (!may_still_reply) offers_.pop_back();
}

PairwiseCounters QuantizedSwarmSgd::counters() const {
  PairwiseCounters c = counters_;
  c.gradient_passes = oracle_.passes();
  c.decode_failures = decode_failures_;
  return c;
}

// The layout differs from SwarmSgd's (11 integers, not 7), so that a full-precision run's
// checkpoint is refused here and the other way round, although both are named "swarmsgd".
bool QuantizedSwarmSgd::SaveState(AlgorithmState* s) const {
  *s = AlgorithmState();
  s->algorithm = name();
  s->ints = {since_exchange_,
             since_merge_,
             counters_.local_steps,
             counters_.exchanges_initiated,
             counters_.exchanges_served,
             counters_.exchanges_aborted,
             counters_.bits_sent,
             static_cast<int64_t>(dither_counter_),
             decode_failures_,
             full_offers_,
             next_full_ ? 1 : 0};
  s->reals = {oracle_.passes()};
  s->vectors = {x_};
  s->texts = {oracle_.SaveEngine()};
  return true;
}

void QuantizedSwarmSgd::LoadState(const AlgorithmState& s) {
  CheckStateShape(s, name(), 11, 1, 1, 1);
  if (s.vectors[0].size() != x_.size()) throw std::invalid_argument("checkpoint: wrong dimension");
  oracle_.LoadEngine(s.texts[0], s.reals[0]);
  since_exchange_ = static_cast<int>(s.ints[0]);
  since_merge_ = static_cast<int>(s.ints[1]);
  counters_.local_steps = s.ints[2];
  counters_.exchanges_initiated = s.ints[3];
  counters_.exchanges_served = s.ints[4];
  counters_.exchanges_aborted = s.ints[5];
  counters_.bits_sent = s.ints[6];
  dither_counter_ = static_cast<uint64_t>(s.ints[7]);
  decode_failures_ = s.ints[8];
  full_offers_ = s.ints[9];
  next_full_ = s.ints[10] != 0;
  x_ = s.vectors[0];
  offers_.clear();
  outstanding_ = false;
}

}  // namespace starling::algorithms
