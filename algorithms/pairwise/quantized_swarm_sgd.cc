#include "algorithms/pairwise/quantized_swarm_sgd.h"

#include <stdexcept>

namespace starling::algorithms {

namespace {

constexpr int64_t kTagBits = 8;
constexpr int64_t kLatticeHeaderBits = 64;  // 32-bit hash + 32-bit dither seed

}  // namespace

QuantizedSwarmSgd::QuantizedSwarmSgd(const NodeSetup& setup, ScheduledStep step, int batch_size,
                                     int local_steps, LatticeQuantizer quantizer)
    : SwarmSgdBase(setup, step, batch_size, local_steps), quantizer_(quantizer) {}

uint64_t QuantizedSwarmSgd::NextDitherSeed() {
  // 32 bits, so that the seed travels exactly in a double; distinct per node and message.
  const uint64_t mixed =
      (setup_.seed * 0x9E3779B97F4A7C15ULL) ^ (++dither_counter_ * 0xBF58476D1CE4E5B9ULL);
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

std::shared_ptr<const Vec> QuantizedSwarmSgd::BeginExchange(int /*peer*/, uint64_t seq) {
  QuantizedOffer offer{seq, x_, Vec()};
  std::shared_ptr<Vec> message = messages_.Take();
  if (next_full_) {
    EncodeFull(x_, message.get());
    offer.point = x_;
    ++full_offers_;
    next_full_ = false;
  } else {
    EncodeLattice(x_, NextDitherSeed(), message.get(), &offer.point);
  }
  KeepOffer(std::move(offer));
  return message;
}

std::shared_ptr<const Vec> QuantizedSwarmSgd::Respond(int /*peer*/,
                                                      const Eigen::Ref<const Vec>& offer) {
  const Eigen::Index d = x_.size();
  if (offer.size() != d + kHeaderSize || (offer[0] != kFull && offer[0] != kLattice)) {
    throw std::invalid_argument("QuantizedSwarmSgd: malformed offer");
  }
  const Vec snapshot = x_;
  std::shared_ptr<Vec> reply = messages_.Take();
  if (offer[0] == kFull) {
    their_point_ = offer.tail(d);
    EncodeFull(snapshot, reply.get());
    point_ = snapshot;
  } else {
    LatticeQuantizer::Dither(static_cast<uint64_t>(offer[2]), d, &dither_);
    codes_.resize(d);
    for (Eigen::Index k = 0; k < d; ++k) codes_[k] = static_cast<uint32_t>(offer[3 + k]);
    const uint32_t hash = quantizer_.Decode(codes_, snapshot, dither_, &their_point_);
    EncodeLattice(snapshot, NextDitherSeed(), reply.get(), &point_);
    const double margin = (quantizer_.modulus() / 2 - 1) * quantizer_.scale();
    if (hash != static_cast<uint32_t>(offer[1]) ||
        (point_ - their_point_).lpNorm<Eigen::Infinity>() >= margin) {
      // Undo the reply's bit count: a failure answer carries only its tag.
      counters_.bits_sent -= kLatticeHeaderBits + quantizer_.bits() * d;
      reply->setZero();
      (*reply)[0] = kFailed;
      ++counters_.decode_failures;
      return reply;
    }
  }
  // X_j <- (Q_i + Q_j)/2 + (X_j - S_j), with X_j = S_j here.
  x_.noalias() += 0.5 * (their_point_ - point_) + (point_ - snapshot);
  NoteServed();
  return reply;
}

bool QuantizedSwarmSgd::CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& reply) {
  const Eigen::Index d = x_.size();
  const QuantizedOffer* offer = FindOffer(seq);
  if (offer == nullptr) return false;
  if (reply.size() != d + kHeaderSize) {
    throw std::invalid_argument("QuantizedSwarmSgd: bad reply size");
  }
  bool merged = true;
  if (reply[0] == kFailed) {
    merged = false;  // neither side merged
  } else if (reply[0] == kFull) {
    their_point_ = reply.tail(d);
  } else {
    LatticeQuantizer::Dither(static_cast<uint64_t>(reply[2]), d, &dither_);
    codes_.resize(d);
    for (Eigen::Index k = 0; k < d; ++k) codes_[k] = static_cast<uint32_t>(reply[3 + k]);
    const uint32_t hash = quantizer_.Decode(codes_, offer->snapshot, dither_, &their_point_);
    // Between correct peers the responder's margin check makes this exact; a mismatch means a
    // faulty peer. Averaging a wrong point would be worse than merging nothing, as for a
    // failure (the peer, which merged, then breaks the conservation of the sum of models).
    merged = hash == static_cast<uint32_t>(reply[1]);
  }
  if (merged) {
    // X_i <- (Q_i + Q_j)/2 + (X_i - S_i).
    x_.noalias() += 0.5 * (their_point_ + offer->point) - offer->snapshot;
  } else {
    // The node still wants an exchange: the next offer goes at full precision.
    next_full_ = true;
    ++counters_.decode_failures;
  }
  FinishOffer(seq, merged);
  return true;
}

// The layout ("swarmsgd-lattice") differs from SwarmSgd's, so that a full-precision run's
// checkpoint is refused here and the other way round, although both are named "swarmsgd".
bool QuantizedSwarmSgd::SaveState(AlgorithmState* s) const {
  SaveCommon("swarmsgd-lattice", s);
  s->ints.insert(s->ints.end(),
                 {static_cast<int64_t>(dither_counter_), full_offers_, next_full_ ? 1 : 0});
  SaveTail(s);
  return true;
}

void QuantizedSwarmSgd::LoadState(const AlgorithmState& s) {
  LoadCommon("swarmsgd-lattice", s, 3, 0);
  dither_counter_ = static_cast<uint64_t>(s.ints[kCommonInts]);
  full_offers_ = s.ints[kCommonInts + 1];
  next_full_ = s.ints[kCommonInts + 2] != 0;
}

}  // namespace starling::algorithms
