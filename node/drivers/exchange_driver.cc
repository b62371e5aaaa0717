#include "node/drivers/exchange_driver.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace starling::node {

ExchangeDriver::ExchangeDriver(algorithms::PairwiseAlgorithm* algorithm, int self_id,
                               std::vector<int> neighbors, uint64_t seed, ExchangeTiming timing)
    : algorithm_(algorithm),
      self_id_(self_id),
      neighbors_(std::move(neighbors)),
      available_(neighbors_),
      rng_(seed),
      timing_(timing),
      // Sequence numbers start at a per-node offset so that logs tell exchanges apart.
      next_seq_((static_cast<uint64_t>(self_id) << 40) + timing.sequence_offset + 1),
      last_reply_timeout_ms_(timing.reply_timeout_ms) {
  if (algorithm_ == nullptr) throw std::invalid_argument("ExchangeDriver needs an algorithm");
}

void ExchangeDriver::SetAvailable(int peer, bool available) {
  if (!std::binary_search(neighbors_.begin(), neighbors_.end(), peer)) return;
  auto it = std::lower_bound(available_.begin(), available_.end(), peer);
  const bool present = it != available_.end() && *it == peer;
  if (available && !present) available_.insert(it, peer);
  if (!available && present) available_.erase(it);
}

std::optional<int> ExchangeDriver::pending_peer() const {
  if (offer_) return offer_->peer;
  return std::nullopt;
}

void ExchangeDriver::Abandon(bool crossed) {
  if (crossed) {
    algorithm_->AbortCrossedExchange();
  } else {
    algorithm_->AbortExchange(/*may_still_reply=*/true);
  }
  if (abandoned_.size() >= algorithms::kKeptOfferSnapshots) abandoned_.pop_front();
  abandoned_.emplace_back(offer_->seq, offer_->peer);
  offer_.reset();
}

void ExchangeDriver::BackOff(int64_t now_ms) {
  const int64_t span = timing_.backoff_max_ms - timing_.backoff_min_ms;
  const int64_t wait =
      timing_.backoff_min_ms + (span > 0 ? static_cast<int64_t>(rng_() % (span + 1)) : 0);
  backoff_until_ms_ = now_ms + wait;
}

std::optional<ExchangeMessage> ExchangeDriver::Tick(int64_t now_ms, bool paced) {
  if (offer_ && now_ms >= offer_->deadline_ms) {
    // Abandon, but keep the snapshot: the partner may still answer (see the header).
    const int peer = offer_->peer;
    Abandon(/*crossed=*/false);
    ++timeouts_;
    if (++consecutive_timeouts_[peer] >= timing_.timeouts_to_exclude) SetAvailable(peer, false);
    BackOff(now_ms);
  }
  if (available_.empty() || algorithm_->exchange_outstanding()) return std::nullopt;
  if (now_ms < backoff_until_ms_) return std::nullopt;
  int peer;
  if (algorithm_->WantsExchange()) {
    const int preferred = algorithm_->PreferredPeer();
    if (preferred >= 0 && std::binary_search(available_.begin(), available_.end(), preferred)) {
      peer = preferred;
    } else {
      peer = available_[rng_() % available_.size()];
    }
  } else {
    if (!paced) return std::nullopt;
    const std::vector<int> fresh = FreshPartners();
    if (fresh.empty()) return std::nullopt;
    peer = fresh[rng_() % fresh.size()];
  }
  const uint64_t seq = next_seq_++;
  std::shared_ptr<const Vec> payload = algorithm_->BeginExchange(peer, seq);
  last_reply_timeout_ms_ =
      timing_.ReplyTimeoutMs(payload ? static_cast<uint64_t>(payload->size()) * sizeof(double) : 0);
  offer_ = Offer{peer, seq, now_ms + last_reply_timeout_ms_};
  return ExchangeMessage{ExchangeMessage::Kind::kRequest, peer, seq, std::move(payload)};
}

std::optional<int64_t> ExchangeDriver::MsUntilNextTimer(int64_t now_ms, bool paced) const {
  // As Tick: the deadline first, then an offer once the back-off is over.
  if (offer_) return std::max<int64_t>(0, offer_->deadline_ms - now_ms);
  if (available_.empty() || algorithm_->exchange_outstanding()) return std::nullopt;
  if (!algorithm_->WantsExchange() && !(paced && !FreshPartners().empty())) {
    return std::nullopt;
  }
  return std::max<int64_t>(0, backoff_until_ms_ - now_ms);
}

std::vector<int> ExchangeDriver::FreshPartners() const {
  const int64_t steps = algorithm_->counters().local_steps;
  std::vector<int> fresh;
  for (int peer : available_) {
    auto it = merged_at_step_.find(peer);
    if (it == merged_at_step_.end() || it->second < steps) fresh.push_back(peer);
  }
  return fresh;
}

void ExchangeDriver::NoteMerge(int peer) {
  merged_at_step_[peer] = algorithm_->counters().local_steps;
}

ExchangeMessage ExchangeDriver::OnRequest(int peer, uint64_t seq,
                                          const Eigen::Ref<const Vec>& their_snapshot,
                                          int64_t now_ms) {
  // A node with an offer outstanding to someone else still serves: merges are additive
  // (X += (S_other - S_own)/2 on each side), so the sum of models is conserved in any
  // interleaving, and answering BUSY here made nodes with H = 1 block on almost every exchange
  // (bench/run.sh overhead).
  if (algorithm_->exchange_outstanding() && offer_ && offer_->peer == peer) {
    // Crossed requests: the lower id is the initiator. A higher-id node gives up its own offer
    // and serves; a lower-id node answers BUSY and waits for its own reply.
    if (self_id_ < peer) return ExchangeMessage{ExchangeMessage::Kind::kBusy, peer, seq, nullptr};
    // We are the higher id. The lower id answers our offer BUSY as a rule, but if its own
    // offer has meanwhile timed out it serves ours instead: keep the snapshot so that such a
    // reply is still merged. The algorithm learns it was a crossing, not a time-out.
    Abandon(/*crossed=*/true);
    BackOff(now_ms);
  }
  size_t first_bad = 0;
  std::shared_ptr<const Vec> reply =
      vectors_checked_ ? algorithm_->Respond(peer, their_snapshot)
                       : algorithm_->RespondChecked(peer, their_snapshot, &first_bad);
  if (!reply) {
    ReportRefused(peer, "XCHG_REQ", first_bad);
    return ExchangeMessage{ExchangeMessage::Kind::kRefused, peer, seq, nullptr};
  }
  NoteMerge(peer);
  return ExchangeMessage{ExchangeMessage::Kind::kReply, peer, seq, std::move(reply)};
}

void ExchangeDriver::ReportRefused(int peer, const char* kind, size_t first_bad) {
  ++merge_rejects_;
  if (!reject_sink_) return;
  net::Reject reject;
  reject.reason = net::RejectReason::kNonFinite;
  reject.detail = std::string(kind) + " from " + std::to_string(peer) + ": entry " +
                  std::to_string(first_bad) + " is not finite (refused by " + algorithm_->name() +
                  "'s merge)";
  reject_sink_(peer, reject);
}

bool ExchangeDriver::DuplicateRequest(int peer, uint64_t seq) {
  // Sequence numbers of one sender only grow, so a short window catches every duplicate that
  // the network can still deliver after the original.
  constexpr size_t kRemembered = 256;
  for (const auto& r : recent_requests_) {
    if (r.first == peer && r.second == seq) return true;
  }
  if (recent_requests_.size() >= kRemembered) recent_requests_.pop_front();
  recent_requests_.emplace_back(peer, seq);
  return false;
}

bool ExchangeDriver::OnReply(int peer, uint64_t seq, const Eigen::Ref<const Vec>& their_snapshot) {
  consecutive_timeouts_[peer] = 0;
  using Merge = algorithms::PairwiseAlgorithm::MergeResult;
  size_t first_bad = 0;
  const auto complete = [&] {
    if (!vectors_checked_)
      return algorithm_->CompleteExchangeChecked(seq, their_snapshot, &first_bad);
    return algorithm_->CompleteExchange(seq, their_snapshot) ? Merge::kMerged : Merge::kNoSnapshot;
  };
  if (offer_ && offer_->peer == peer && offer_->seq == seq) {
    if (complete() == Merge::kRefused) {
      // Nothing merged: the offer is over all the same (its snapshot dropped), so that the node
      // goes on to its next exchange.
      algorithm_->AbortExchange(/*may_still_reply=*/false);
      offer_.reset();
      ReportRefused(peer, "XCHG_REP", first_bad);
      return false;
    }
    offer_.reset();
    NoteMerge(peer);
    return true;
  }
  // A late reply to an abandoned offer is merged if its snapshot is still kept.
  for (auto it = abandoned_.begin(); it != abandoned_.end(); ++it) {
    if (it->first != seq || it->second != peer) continue;
    abandoned_.erase(it);
    const Merge result = complete();
    if (result == Merge::kRefused) {
      ReportRefused(peer, "XCHG_REP", first_bad);
      return false;
    }
    if (result == Merge::kNoSnapshot) break;
    ++late_merged_;
    NoteMerge(peer);
    return true;
  }
  ++stale_dropped_;
  return false;
}

bool ExchangeDriver::OnBusy(int peer, uint64_t seq, int64_t now_ms) {
  consecutive_timeouts_[peer] = 0;
  if (!offer_ || offer_->peer != peer || offer_->seq != seq) return false;
  algorithm_->AbortExchange(/*may_still_reply=*/false);
  offer_.reset();
  ++busy_received_;
  BackOff(now_ms);
  return true;
}

}  // namespace starling::node
