#include "net/faulty_transport.h"

#include <spdlog/spdlog.h>

namespace starling::net {

namespace {

// A held (reordered) message is released after the next message on its edge, or after this long
// if none follows, so that holding never turns into a loss.
constexpr std::chrono::milliseconds kMaxHold{50};

}  // namespace

FaultyTransport::FaultyTransport(Transport* transport, FaultPlan plan, int32_t self_id)
    : transport_(transport),
      injector_(std::move(plan), static_cast<uint64_t>(self_id)),
      self_id_(self_id),
      active_(injector_.plan().any()),
      start_(Clock::now()) {}

double FaultyTransport::Seconds(Clock::time_point t) const {
  return std::chrono::duration<double>(t - start_).count();
}

std::unique_ptr<FaultyTransport::Owned> FaultyTransport::Copy(
    const Envelope& envelope, const std::shared_ptr<const void>& keepalive,
    Clock::time_point due) const {
  auto owned = std::make_unique<Owned>();
  owned->envelope = envelope;
  owned->due = due;
  if (keepalive) {
    // The bytes the payloads view live as long as the keepalive does.
    owned->keepalive = keepalive;
    return owned;
  }
  owned->bytes.reserve(envelope.payloads.size());
  for (const Payload& p : envelope.payloads) owned->bytes.emplace_back(p.bytes);
  return owned;
}

bool FaultyTransport::SendOwned(int32_t peer, Owned* message) {
  // Re-point the payload views at the owned bytes (their addresses are stable from here on);
  // none with a keepalive.
  for (size_t k = 0; k < message->bytes.size(); ++k) {
    message->envelope.payloads[k].bytes = message->bytes[k];
  }
  return transport_->Send(peer, message->envelope, message->keepalive);
}

bool FaultyTransport::Send(int32_t peer, const Envelope& envelope,
                           const std::shared_ptr<const void>& keepalive) {
  if (!active_) return transport_->Send(peer, envelope, keepalive);
  const Clock::time_point now = Clock::now();
  const FaultDecision d = injector_.Decide(self_id_, peer, Seconds(now));
  if (d.drop) return true;
  const auto due = now + std::chrono::microseconds(static_cast<int64_t>(d.delay * 1000.0));
  bool ok = true;
  for (int copy = 0; copy < d.copies; ++copy) {
    if (d.hold && copy == 0) {
      // Hold this one back; a message already held on the edge is released first.
      auto it = held_.find(peer);
      if (it != held_.end()) {
        SendOwned(peer, it->second.get());
        held_.erase(it);
      }
      held_[peer] = Copy(envelope, keepalive, std::max(due, now + kMaxHold));
      continue;
    }
    if (d.delay > 0) {
      delayed_.emplace(due, std::make_pair(peer, Copy(envelope, keepalive, due)));
    } else {
      ok = transport_->Send(peer, envelope, keepalive) && ok;
    }
  }
  // A message that overtakes a held one releases it: that is the reordering.
  if (!d.hold) {
    auto it = held_.find(peer);
    if (it != held_.end()) {
      if (d.delay > 0) {
        it->second->due = due;
        delayed_.emplace(due, std::make_pair(peer, std::move(it->second)));
      } else {
        SendOwned(peer, it->second.get());
      }
      held_.erase(it);
    }
  }
  return ok;
}

void FaultyTransport::Flush() {
  if (!active_) return;
  const Clock::time_point now = Clock::now();
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    auto node = delayed_.extract(delayed_.begin());
    if (!SendOwned(node.mapped().first, node.mapped().second.get())) {
      spdlog::debug("delayed message to node {} refused by the transport", node.mapped().first);
    }
  }
  for (auto it = held_.begin(); it != held_.end();) {
    if (it->second->due <= now) {
      SendOwned(it->first, it->second.get());
      it = held_.erase(it);
    } else {
      ++it;
    }
  }
}

size_t FaultyTransport::pending() const { return delayed_.size() + held_.size(); }

}  // namespace starling::net
