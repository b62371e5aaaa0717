#include "algorithms/pairwise/sparse_swarm_sgd.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <stdexcept>

namespace starling::algorithms {

namespace {

constexpr int64_t kTagBits = 8;
constexpr int64_t kHashBits = 64;        // two 32-bit hashes
constexpr int64_t kEntryBits = 32 + 64;  // index and value

}  // namespace

SparseSwarmSgd::SparseSwarmSgd(const NodeSetup& setup, ScheduledStep step, int batch_size,
                               int local_steps, TopKSpec spec)
    : SwarmSgdBase(setup, step, batch_size, local_steps), spec_(spec) {
  if (spec_.gamma == 0) {
    spec_.gamma =
        std::min(0.5, static_cast<double>(spec_.k) / std::max<Eigen::Index>(1, x_.size()));
  }
  gamma_ = spec_.gamma;
  for (int j : setup.neighbors) edges_[j];
}

SparseSwarmSgd::SparseSwarmSgd(const NodeSetup& setup, ScheduledStep step, int batch_size,
                               int local_steps, double gamma, double compressed_tag,
                               std::string layout)
    : SwarmSgdBase(setup, step, batch_size, local_steps),
      gamma_(gamma),
      compressed_tag_(compressed_tag),
      layout_(std::move(layout)) {
  for (int j : setup.neighbors) edges_[j];
}

int64_t SparseSwarmSgd::Compress(const Vec& diff, Vec* message, Vec* q) {
  const Eigen::Index d = diff.size();
  TopK(diff, q);
  message->resize(d + kHeaderSize);
  message->tail(d) = *q;
  return kEntryBits * std::min<int64_t>(spec_.k, d);
}

bool SparseSwarmSgd::Expand(const Eigen::Ref<const Vec>& message, Vec* q) {
  const Eigen::Index d = x_.size();
  if (message.size() != d + kHeaderSize) return false;
  *q = message.tail(d);
  return true;
}

double SparseSwarmSgd::HashOf(const Vec& v) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (Eigen::Index k = 0; k < v.size(); ++k) {
    uint64_t bits;
    std::memcpy(&bits, &v[k], sizeof bits);
    h = (h ^ bits) * 0x100000001b3ULL;
    h ^= h >> 29;
  }
  return static_cast<double>(static_cast<uint32_t>(h ^ (h >> 32)));
}

SparseSwarmSgd::Edge& SparseSwarmSgd::EdgeTo(int peer) {
  auto it = edges_.find(peer);
  if (it == edges_.end()) {
    throw std::logic_error("SparseSwarmSgd: node " + std::to_string(peer) + " is not a neighbour");
  }
  return it->second;
}

void SparseSwarmSgd::TopK(const Vec& v, Vec* q) {
  const Eigen::Index d = v.size();
  q->setZero(d);
  if (spec_.k >= d) {
    *q = v;
    return;
  }
  order_.resize(d);
  std::iota(order_.begin(), order_.end(), Eigen::Index{0});
  // Ties broken by index, so that the choice never depends on the sort's internals.
  std::nth_element(order_.begin(), order_.begin() + spec_.k, order_.end(),
                   [&](Eigen::Index a, Eigen::Index b) {
                     const double fa = std::abs(v[a]), fb = std::abs(v[b]);
                     return fa > fb || (fa == fb && a < b);
                   });
  for (int r = 0; r < spec_.k; ++r) (*q)[order_[r]] = v[order_[r]];
}

void SparseSwarmSgd::Merge(const Edge& e) { x_.noalias() += gamma_ * (e.peer - e.self); }

std::shared_ptr<const Vec> SparseSwarmSgd::BeginExchange(int peer, uint64_t seq) {
  Edge& e = EdgeTo(peer);
  const Eigen::Index d = x_.size();
  std::shared_ptr<Vec> message_ptr = messages_.Take();
  Vec& message = *message_ptr;
  message.resize(d + kHeaderSize);
  SparseOffer offer{seq, peer, Vec(), !e.synced};
  if (offer.full) {
    message[0] = kFull;
    message[1] = message[2] = 0;
    message.tail(d) = x_;
    offer.next_self = x_;
    counters_.bits_sent += kTagBits + 64 * d;
  } else {
    diff_ = x_ - e.self;
    counters_.bits_sent += kTagBits + kHashBits + Compress(diff_, &message, &q_);
    message[0] = compressed_tag_;
    message[1] = HashOf(e.self);
    message[2] = HashOf(e.peer);
    offer.next_self = e.self + q_;
  }
  KeepOffer(std::move(offer));
  return message_ptr;
}

void SparseSwarmSgd::Failed(Vec* reply) {
  reply->setZero(x_.size() + kHeaderSize);
  (*reply)[0] = kFailed;
  counters_.bits_sent += kTagBits;
  ++counters_.decode_failures;
}

std::shared_ptr<const Vec> SparseSwarmSgd::Respond(int peer, const Eigen::Ref<const Vec>& offer) {
  const Eigen::Index d = x_.size();
  if (offer.size() < kHeaderSize || (offer[0] != kFull && offer[0] != compressed_tag_) ||
      (offer[0] == kFull && offer.size() != d + kHeaderSize)) {
    throw std::invalid_argument("SparseSwarmSgd: malformed offer");
  }
  Edge& e = EdgeTo(peer);
  std::shared_ptr<Vec> reply_ptr = messages_.Take();
  Vec& reply = *reply_ptr;
  reply.resize(d + kHeaderSize);
  if (offer[0] == kFull) {
    // Resynchronise the edge: both copies become the two snapshots.
    e.peer = offer.tail(d);
    e.self = x_;
    e.synced = true;
    reply[0] = kFull;
    reply[1] = reply[2] = 0;
    reply.tail(d) = x_;
    counters_.bits_sent += kTagBits + 64 * d;
  } else {
    // A malformed body (never from a checked wire) is answered as a failure, like copies that
    // disagree.
    if (!e.synced || offer[1] != HashOf(e.peer) || offer[2] != HashOf(e.self) ||
        !Expand(offer, &their_q_)) {
      e.synced = false;  // our next exchange on this edge goes at full precision
      Failed(&reply);
      return reply_ptr;
    }
    e.peer += their_q_;
    diff_ = x_ - e.self;
    counters_.bits_sent += kTagBits + kHashBits + Compress(diff_, &reply, &q_);
    reply[0] = compressed_tag_;
    reply[1] = HashOf(e.self);
    reply[2] = HashOf(e.peer);
    e.self += q_;
  }
  Merge(e);
  NoteServed();
  return reply_ptr;
}

bool SparseSwarmSgd::CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& reply) {
  const Eigen::Index d = x_.size();
  const SparseOffer* offer = FindOffer(seq);
  if (offer == nullptr) return false;
  if (reply.size() < kHeaderSize ||
      (reply[0] != compressed_tag_ && reply.size() != d + kHeaderSize)) {
    throw std::invalid_argument("SparseSwarmSgd: bad reply size");
  }
  Edge& e = EdgeTo(offer->peer);
  bool merged = false;
  if (reply[0] == kFull && offer->full) {
    e.self = offer->next_self;
    e.peer = reply.tail(d);
    e.synced = true;
    merged = true;
  } else if (reply[0] == compressed_tag_ && !offer->full && reply[1] == HashOf(e.peer) &&
             reply[2] == HashOf(offer->next_self) && Expand(reply, &their_q_)) {
    e.self = offer->next_self;
    e.peer += their_q_;
    merged = true;
  }
  if (merged) {
    Merge(e);
  } else {
    // A failure answer, or copies that no longer agree (a lost reply, a restart, a faulty
    // peer): merge nothing and resynchronise at full precision.
    e.synced = false;
    ++counters_.decode_failures;
  }
  FinishOffer(seq, merged);
  return true;
}

bool SparseSwarmSgd::SaveState(AlgorithmState* s) const {
  SaveCommon(layout_, s);
  for (const auto& [peer, e] : edges_) {
    s->ints.push_back(peer);
    s->ints.push_back(e.synced ? 1 : 0);
    s->vectors.push_back(e.self.size() == x_.size() ? e.self : Vec::Zero(x_.size()));
    s->vectors.push_back(e.peer.size() == x_.size() ? e.peer : Vec::Zero(x_.size()));
  }
  for (int64_t v : SaveExtra()) s->ints.push_back(v);
  SaveTail(s);
  return true;
}

void SparseSwarmSgd::LoadState(const AlgorithmState& s) {
  const size_t n = edges_.size();
  LoadCommon(layout_, s, 2 * n + ExtraInts(), 2 * n);
  size_t r = 0;
  for (auto& [peer, e] : edges_) {
    if (s.ints[kCommonInts + 2 * r] != peer) {
      throw std::invalid_argument("checkpoint: written by a node with other neighbours");
    }
    // Exchanges the neighbours made with us after the checkpoint are lost; the copy checks
    // catch that and resynchronise the edge.
    e.synced = s.ints[kCommonInts + 2 * r + 1] != 0;
    e.self = s.vectors[1 + 2 * r];
    e.peer = s.vectors[2 + 2 * r];
    ++r;
  }
  // The variant's ints stand right after the edges (a tail average's count, if any, follows them).
  const auto extra = s.ints.begin() + kCommonInts + 2 * n;
  LoadExtra(std::vector<int64_t>(extra, extra + static_cast<std::ptrdiff_t>(ExtraInts())));
}

}  // namespace starling::algorithms
