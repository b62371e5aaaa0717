#include "net/transport.h"

#include <dirent.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "net/endpoint.h"
#include "net/payload.h"
#include "net/poll.h"

namespace starling::net {

namespace {

std::string Hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

// Log the first few rejects of each (peer, reason), then one in 1000, so that a flood of garbage
// cannot flood the log while every reject is still counted.
bool ShouldLog(uint64_t count) { return count <= 5 || count % 1000 == 0; }

}  // namespace

int ZmtpHeartbeatTimeoutMs(const DecodeLimits& limits) {
  const uint64_t transfer_ms = (PeerMessageBound(limits) * 1000 + kSlowestPeerBytesPerSecond - 1) /
                               kSlowestPeerBytesPerSecond;
  const uint64_t total = static_cast<uint64_t>(kZmtpHeartbeatBaseTimeoutMs) + transfer_ms;
  return static_cast<int>(std::min<uint64_t>(total, 3600u * 1000u));
}

int64_t SlowestTransferMs(uint64_t message_bytes) {
  return static_cast<int64_t>(message_bytes / kSlowestPeerBytesPerSecond * 1000 +
                              message_bytes % kSlowestPeerBytesPerSecond * 1000 /
                                  kSlowestPeerBytesPerSecond);
}

Transport::Transport(zmq::context_t* context, TransportOptions options)
    : options_(std::move(options)), router_(*context, zmq::socket_type::router) {
  const std::string self = "node " + std::to_string(options_.self_id);
  const uint64_t per_message = std::max<uint64_t>(1, options_.limits.max_message_bytes);
  const int high_water_mark = static_cast<int>(
      std::clamp<uint64_t>(options_.queue_budget_bytes / per_message, 16,
                           static_cast<uint64_t>(std::max(16, options_.max_queued_messages))));
  const int handshake_ms = static_cast<int>(options_.handshake_timeout.count());
  const int heartbeat_timeout_ms = ZmtpHeartbeatTimeoutMs(options_.limits);
  // Everything libzmq may legitimately hold for one peer connection: the complete messages the
  // high-water mark admits (plus the one the ROUTER prefetched and the one the engine holds when
  // the pipe is full), each at most the largest message a neighbour sends, one frame being read
  // (at most ZMQ_MAXMSGSIZE) and libzmq's read batch with room to spare.
  const uint64_t framed_message = PeerMessageBound(options_.limits) +
                                  (1 + uint64_t{options_.limits.max_payloads}) * kWireBytesPerFrame;
  unread_budget_ = (static_cast<uint64_t>(high_water_mark) + 2) * framed_message +
                   options_.limits.max_message_bytes + (64u << 10);
  router_.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(options_.limits.max_message_bytes));
  // In plaintext a restarted peer takes over its routing id. Under CURVE the DEALERs present
  // none (each connection gets its own), and a takeover must not be possible.
  router_.set(zmq::sockopt::router_handover, options_.curve ? 0 : 1);
  router_.set(zmq::sockopt::linger, 0);
  router_.set(zmq::sockopt::rcvhwm, high_water_mark);
  router_.set(zmq::sockopt::handshake_ivl, handshake_ms);
  // ZMTP heartbeats from our side too: an inbound connection whose peer vanished (a half-open
  // TCP connection after a partition) is closed within the time-out instead of holding its
  // descriptor and buffers until TCP keepalive. The time-out follows the message size
  // (ZmtpHeartbeatTimeoutMs).
  router_.set(zmq::sockopt::heartbeat_ivl, kZmtpHeartbeatIvlMs);
  router_.set(zmq::sockopt::heartbeat_timeout, heartbeat_timeout_ms);
  guard_ = std::make_unique<SecurityGuard>(context, options_.curve ? &*options_.curve : nullptr);
  if (options_.curve) MakeCurveServer(&router_, *options_.curve, PortRole::kPeer);
  guard_->WatchServer(&router_, options_.bind_endpoint, options_.max_connections_per_port,
                      self + " peer endpoint " + options_.bind_endpoint, &ledger_, unread_budget_);
  try {
    router_.bind(options_.bind_endpoint);
  } catch (const zmq::error_t& e) {
    throw std::runtime_error(self + ": cannot bind " + options_.bind_endpoint + ": " + e.what());
  }
  if (!options_.telemetry_endpoint.empty()) {
    // An XPUB, so that the node can tell when a subscriber has arrived: PUB drops what it
    // publishes before then, and a node that finishes early holds its exit for its final
    // telemetry to reach the monitor (DaemonOptions::await_monitor_seconds).
    pub_ = std::make_unique<zmq::socket_t>(*context, zmq::socket_type::xpub);
    pub_->set(zmq::sockopt::xpub_verbose, 1);  // every subscriber's subscription, not the first
    pub_->set(zmq::sockopt::linger, 1000);     // let the final telemetry leave on shutdown
    pub_->set(zmq::sockopt::sndhwm, 1000);
    pub_->set(zmq::sockopt::handshake_ivl, handshake_ms);
    pub_->set(zmq::sockopt::maxmsgsize, kMaxTelemetryInbound);
    if (options_.curve) MakeCurveServer(pub_.get(), *options_.curve, PortRole::kTelemetry);
    guard_->WatchServer(pub_.get(), options_.telemetry_endpoint, options_.max_connections_per_port,
                        self + " telemetry endpoint " + options_.telemetry_endpoint,
                        /*ledger=*/nullptr, kTelemetryUnreadBudget);
    try {
      pub_->bind(options_.telemetry_endpoint);
    } catch (const zmq::error_t& e) {
      throw std::runtime_error(self + ": cannot bind telemetry endpoint " +
                               options_.telemetry_endpoint + ": " + e.what());
    }
  }
  expectations_.run_id = options_.run_id;
  expectations_.dim = options_.dim;
  for (const PeerAddress& p : options_.peers) {
    expectations_.peers.push_back(p.id);
    PeerState state;
    state.address = p;
    peers_[p.id] = state;
    auto dealer = std::make_unique<zmq::socket_t>(*context, zmq::socket_type::dealer);
    if (!options_.curve) dealer->set(zmq::sockopt::routing_id, RoutingIdFor(options_.self_id));
    dealer->set(zmq::sockopt::sndhwm, high_water_mark);
    dealer->set(zmq::sockopt::linger, 2000);  // let BYE and last payloads leave on shutdown
    dealer->set(zmq::sockopt::heartbeat_ivl, kZmtpHeartbeatIvlMs);
    dealer->set(zmq::sockopt::heartbeat_timeout, heartbeat_timeout_ms);
    // A neighbour not up yet is retried every 100 ms, backing off to 200 ms at most: daemons
    // started together come up seconds apart, and with a longer back-off a node ran for seconds
    // with one partner after the other was ready (bench/run.sh overhead at 16 nodes, two
    // alternating runs: max blocked/compute 0.32 / 0.56 with 2 s, 0.22 / 0.25 with 200 ms). A
    // retry to a closed port costs one refused connection.
    dealer->set(zmq::sockopt::reconnect_ivl, 100);
    dealer->set(zmq::sockopt::reconnect_ivl_max, 200);
    if (options_.curve) {
      auto key = options_.curve->server_keys.find(p.id);
      if (key == options_.curve->server_keys.end()) {
        throw std::runtime_error(self + ": no CURVE public key for node " + std::to_string(p.id));
      }
      MakeCurveClient(dealer.get(), *options_.curve, key->second);
    }
    guard_->WatchClient(dealer.get(), p.id,
                        "node " + std::to_string(p.id) + " (" + p.endpoint + ")", p.endpoint);
    try {
      dealer->connect(p.endpoint);
    } catch (const zmq::error_t& e) {
      throw std::runtime_error(self + ": cannot connect to node " + std::to_string(p.id) + " at " +
                               p.endpoint + ": " + e.what());
    }
    dealers_[p.id] = std::move(dealer);
  }
  std::sort(expectations_.peers.begin(), expectations_.peers.end());
  guard_->Start();
  SetUpShm();
  for (const PeerAddress& p : options_.peers) Greet(p.id, /*ack=*/false, "");
}

void Transport::SetUpShm() {
  if (!options_.shared_memory) {
    shm_off_reason_ = "shared memory is off on this node (--shm off)";
  } else if (!options_.curve) {
    shm_off_reason_ = "shared memory needs CURVE to know who the neighbour is (--allow-plaintext)";
  } else if (!ShmRingSizes(options_.limits, &shm_capacity_, &shm_max_frame_)) {
    shm_off_reason_ = "this run's messages are too large for a shared-memory ring (over " +
                      std::to_string(kShmMaxRingBytes >> 20) + " MiB per direction)";
  } else {
    std::string error;
    shm_host_ = LocalHostId(&error);
    if (!shm_host_.empty()) shm_folder_ = ShmRunFolder(options_.shm_run_tag, &error);
    if (shm_folder_.empty()) shm_off_reason_ = "no shared memory: " + error;
  }
  if (!shm_folder_.empty()) RemoveDeadOffers(shm_folder_);
  if (options_.shared_memory && !shm_off_reason_.empty()) {
    spdlog::warn("node {}: {}; every neighbour is reached over ZeroMQ", options_.self_id,
                 shm_off_reason_);
  }
  for (const PeerAddress& p : options_.peers) {
    shm_[p.id];
    if (!shm_off_reason_.empty()) peers_[p.id].shm_status = shm_off_reason_;
  }
}

// An offer's files (seg-A-B-PID-N, .a, .c) outlive a creator killed before the answer: those of
// a process that no longer exists are removed when a node of the run starts.
void Transport::RemoveDeadOffers(const std::string& folder) {
  DIR* d = opendir(folder.c_str());
  if (d == nullptr) return;
  while (const struct dirent* entry = readdir(d)) {
    const std::string name = entry->d_name;
    if (name.rfind("seg-", 0) != 0) continue;
    // The third field after "seg-" is the creator's pid.
    size_t at = 4;
    for (int field = 0; field < 2 && at != std::string::npos; ++field) {
      at = name.find('-', at);
      if (at != std::string::npos) ++at;
    }
    if (at == std::string::npos) continue;
    const long pid = std::strtol(name.c_str() + at, nullptr, 10);
    if (pid <= 0 || (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)) {
      if (pid > 0) unlink((folder + "/" + name).c_str());
    }
  }
  closedir(d);
}

bool Transport::ShmCarries(MessageType type) {
  return type == MessageType::kRound || type == MessageType::kXchgReq ||
         type == MessageType::kXchgRep || type == MessageType::kBusy ||
         type == MessageType::kResend;
}

void Transport::AnswerShm(int32_t peer, const std::string& text) {
  Envelope answer;
  answer.type = MessageType::kShmAnswer;
  answer.text = text;
  if (!Send(peer, answer))
    spdlog::warn("could not queue the shared-memory answer to {}", Describe(peer));
}

void Transport::EndShm(int32_t peer, const std::string& why, bool warn) {
  ShmPeer& shm = shm_[peer];
  if (shm.link) retired_links_.push_back(std::move(shm.link));
  shm.peer_gone = false;
  shm.offers = 0;  // a neighbour that comes back is offered again
  PeerState& state = peers_[peer];
  state.shm_up = false;
  if (warn) {
    spdlog::warn("shared memory with {} ended: {}; its messages go over ZeroMQ", Describe(peer),
                 why);
  } else {
    spdlog::info("shared memory with {} ended: {}; its messages go over ZeroMQ", Describe(peer),
                 why);
  }
}

void Transport::ShmTick(int32_t id, PeerState* state, Clock::time_point now) {
  ShmPeer& shm = shm_[id];
  if (shm.link) {
    // Poll may not be woken by a hang-up: read the FIFO here too.
    if (!shm.link->Drain()) shm.peer_gone = true;
    return;
  }
  if (!shm_off_reason_.empty() || options_.self_id > id || !state->greeted_us ||
      !state->accepted_us || !state->shm_status.empty()) {
    return;
  }
  if (shm.pending && now - shm.offered_at < kShmOfferWait) return;
  if (shm.offers >= kShmMaxOffers) {
    shm.pending.reset();
    state->shm_status = "no answer to " + std::to_string(kShmMaxOffers) +
                        " shared-memory offers (a daemon without shared memory?)";
    spdlog::info("{} did not answer: {}; its messages go over ZeroMQ", Describe(id),
                 state->shm_status);
    return;
  }
  shm.pending.reset();  // an unanswered offer: its files go before the next one's
  const std::string name = "seg-" + std::to_string(options_.self_id) + "-" + std::to_string(id) +
                           "-" + std::to_string(getpid()) + "-" + std::to_string(++shm_names_);
  std::string error;
  shm.pending =
      ShmLink::Create(shm_folder_, name, shm_capacity_, shm_max_frame_, options_.limits, &error);
  if (!shm.pending) {
    state->shm_status = error;
    spdlog::warn("cannot offer shared memory to {}: {}; its messages go over ZeroMQ", Describe(id),
                 error);
    return;
  }
  ShmOffer offer;
  offer.host = shm_host_;
  offer.uid = getuid();
  offer.name = name;
  offer.capacity = shm_capacity_;
  offer.max_frame = shm_max_frame_;
  Envelope e;
  e.type = MessageType::kShmOffer;
  e.text = FormatShmOffer(offer);
  shm.offered_at = now;
  ++shm.offers;
  if (!Send(id, e)) spdlog::debug("could not queue a shared-memory offer to {}", Describe(id));
}

void Transport::HandleShmOffer(PeerState* state, const Envelope& envelope) {
  const int32_t id = state->address.id;
  ShmOffer offer;
  std::string error;
  if (!ParseShmOffer(envelope.text, &offer, &error)) {
    CountReject(id, {RejectReason::kBadField, error});
    AnswerShm(id, ShmDeclineText("?", error));
    return;
  }
  auto decline = [&](const std::string& reason) {
    if (state->shm_status != reason) {
      spdlog::info("declined shared memory with {}: {}", Describe(id), reason);
    }
    state->shm_status = reason;
    AnswerShm(id, ShmDeclineText(offer.name, reason));
  };
  if (!shm_off_reason_.empty()) return decline(shm_off_reason_);
  if (id > options_.self_id) {
    return decline("offers come from the lower node id, and " + std::to_string(id) + " > " +
                   std::to_string(options_.self_id));
  }
  if (offer.host != shm_host_) {
    return decline("another host (host id " + offer.host + " there, " + shm_host_ + " here)");
  }
  if (offer.uid != getuid()) {
    return decline("another user (uid " + std::to_string(offer.uid) + " there, " +
                   std::to_string(getuid()) + " here)");
  }
  if (offer.capacity != shm_capacity_ || offer.max_frame != shm_max_frame_) {
    return decline("rings of " + std::to_string(offer.capacity) + " bytes with frames of " +
                   std::to_string(offer.max_frame) + " there, " + std::to_string(shm_capacity_) +
                   " and " + std::to_string(shm_max_frame_) + " here");
  }
  ShmPeer& shm = shm_[id];
  // A new offer while a link is up: the neighbour lost its side (it restarted).
  if (shm.link) EndShm(id, "it offered a new link (it restarted)", /*warn=*/false);
  std::unique_ptr<ShmLink> link = ShmLink::Accept(shm_folder_, offer, options_.limits, &error);
  if (!link) return decline(error);
  shm.link = std::move(link);
  state->shm_up = true;
  state->shm_status.clear();
  ++state->shm_links;
  spdlog::info("shared memory with {}: two rings of {} bytes", Describe(id), shm_capacity_);
  AnswerShm(id, ShmAcceptText(offer.name));
}

void Transport::HandleShmAnswer(PeerState* state, const Envelope& envelope) {
  const int32_t id = state->address.id;
  ShmPeer& shm = shm_[id];
  const std::string& text = envelope.text;
  const bool accepted = text.rfind("accept ", 0) == 0;
  if (!accepted && text.rfind("decline ", 0) != 0) {
    CountReject(id,
                {RejectReason::kBadField, "shared-memory answer is neither accept nor decline"});
    return;
  }
  const size_t name_at = accepted ? 7 : 8;
  const size_t name_end = accepted ? text.size() : text.find(": ", name_at);
  const std::string name =
      name_end == std::string::npos ? "" : text.substr(name_at, name_end - name_at);
  // An answer to an offer no longer pending (it timed out and another followed): ignored.
  if (!shm.pending || shm.pending->name() != name) return;
  if (!accepted) {
    shm.pending.reset();
    state->shm_status = text.substr(name_end + 2);
    spdlog::info("{} declined shared memory: {}; its messages go over ZeroMQ", Describe(id),
                 state->shm_status);
    return;
  }
  shm.pending->RemoveFiles();
  shm.link = std::move(shm.pending);
  shm.peer_gone = false;
  state->shm_up = true;
  state->shm_status.clear();
  ++state->shm_links;
  spdlog::info("shared memory with {}: two rings of {} bytes", Describe(id), shm_capacity_);
}

int Transport::DrainShm(const Handler& handler, int max_messages) {
  int handled = 0;
  Envelope envelope;
  Reject reject;
  for (auto& [id, shm] : shm_) {
    const int32_t peer = id;
    while (handled < max_messages && shm.link) {
      ShmLink* link = shm.link.get();
      const ShmRing::Status status = link->Receive(&envelope, &reject);
      if (status == ShmRing::Status::kEmpty) break;
      PeerState& state = peers_[peer];
      if (status == ShmRing::Status::kReject) {
        CountReject(peer, reject);
        if (!link->broken_reason().empty()) EndShm(peer, link->broken_reason(), /*warn=*/true);
        continue;
      }
      if (status != ShmRing::Status::kOk) {
        EndShm(peer,
               link->broken_reason().empty() ? ShmRingStatusName(status) : link->broken_reason(),
               /*warn=*/true);
        break;
      }
      const size_t bytes = link->last_received_bytes();
      bytes_received_ += bytes;
      state.bytes_received += bytes;
      if (!ShmCarries(envelope.type)) {
        CountReject(peer, {RejectReason::kUnknownType,
                           std::string(MessageTypeName(envelope.type)) +
                               " over shared memory, which carries round, xchg_req, xchg_rep, "
                               "busy and resend only"});
        continue;
      }
      // The ring belongs to this neighbour: a message in it speaks for no one else.
      if (envelope.sender != peer) {
        CountReject(
            peer, {RejectReason::kKeyMismatch,
                   "claims to be node " + std::to_string(envelope.sender) + " over shared memory"});
        continue;
      }
      if (!CheckAgainstRun(envelope, expectations_, &reject)) {
        CountReject(peer, reject);
        continue;
      }
      state.last_heard = Clock::now();
      state.heard_hold_until = std::max(state.heard_hold_until, state.last_heard);
      ++state.messages_received;
      ++state.shm_messages_received;
      handler(peer, envelope);
      ++handled;
    }
    if (shm.link && shm.peer_gone && !shm.link->Pending()) {
      EndShm(peer, "its process closed the link", /*warn=*/false);
    }
  }
  return handled;
}

Transport::~Transport() {
  shm_.clear();
  retired_links_.clear();
  // The run folder goes with the last of the run's nodes on this host (rmdir fails while it
  // holds another node's files).
  if (!shm_folder_.empty()) rmdir(shm_folder_.c_str());
}

RejectCounters Transport::rejects() const {
  RejectCounters all = rejects_;
  all.Add(RejectReason::kUnlistedKey, guard_->unlisted_keys());
  all.Add(RejectReason::kNotAdmitted, guard_->not_admitted());
  all.Add(RejectReason::kFailedHandshake, guard_->failed_handshakes());
  all.Add(RejectReason::kNoHandshake, guard_->no_handshakes());
  all.Add(RejectReason::kConnectionCap, guard_->over_cap());
  all.Add(RejectReason::kUnfinishedMessage, guard_->unfinished_messages());
  return all;
}

std::string Transport::Describe(int32_t peer) const {
  auto it = peers_.find(peer);
  if (it == peers_.end()) return "unknown peer " + std::to_string(peer);
  return "node " + std::to_string(peer) + " (" + it->second.address.endpoint + ")";
}

int32_t Transport::AuthenticatedPeer(const zmq::message_t& frame) const {
  const char* user = zmq_msg_gets(frame.handle(), "User-Id");
  if (user == nullptr) return -1;
  return IdFromRoutingId(user, std::strlen(user));
}

const PeerState& Transport::peer(int32_t id) const {
  auto it = peers_.find(id);
  if (it == peers_.end()) throw std::out_of_range("no peer " + std::to_string(id));
  return it->second;
}

std::vector<int32_t> Transport::RefusedBy() const {
  std::vector<int32_t> ids;
  for (const auto& [id, state] : peers_) {
    if (!state.refusal.empty()) ids.push_back(id);
  }
  return ids;
}

bool Transport::Send(int32_t peer, Envelope envelope, std::shared_ptr<const void> keepalive) {
  auto it = dealers_.find(peer);
  if (it == dealers_.end()) return false;
  envelope.run_id = options_.run_id;
  envelope.sender = options_.self_id;
  if (ShmCarries(envelope.type)) {
    auto shm = shm_.find(peer);
    if (shm != shm_.end() && shm->second.link && !shm->second.peer_gone) {
      ShmLink* link = shm->second.link.get();
      const ShmRing::Status status = link->Send(envelope);
      if (status == ShmRing::Status::kOk) {
        const size_t size = link->last_sent_bytes();
        PeerState& state = peers_[peer];
        state.last_sent = Clock::now();
        state.beat_hold_until = std::max(state.beat_hold_until, state.last_sent);
        state.bytes_sent += size;
        ++state.messages_sent;
        ++state.shm_messages_sent;
        bytes_sent_ += size;
        return true;
      }
      if (status == ShmRing::Status::kBroken) {
        EndShm(peer, link->broken_reason(), /*warn=*/true);
      }
      // kFull (the peer is behind or gone) and kTooLarge: this message takes ZeroMQ.
    }
  }
  // Large payloads as frames of their own: pooled copies, or the caller's bytes (keepalive).
  send_buffers_->EncodeFrames(envelope, keepalive, &send_frames_);
  size_t size = 0;
  for (const zmq::message_t& frame : send_frames_) size += frame.size();
  const size_t last = send_frames_.size() - 1;
  try {
    // Only the first frame can find the queue full: ZeroMQ counts whole messages against the
    // high-water mark and queues the rest of a message whose first frame it took.
    for (size_t i = 0; i <= last; ++i) {
      const zmq::send_flags flags = i < last ? zmq::send_flags::dontwait | zmq::send_flags::sndmore
                                             : zmq::send_flags::dontwait;
      if (!it->second->send(send_frames_[i], flags)) {
        send_frames_.clear();
        return false;
      }
    }
  } catch (const zmq::error_t& e) {  // EINTR and the like: the caller treats it as a full queue
    spdlog::debug("send to {} failed: {}", Describe(peer), e.what());
    send_frames_.clear();
    return false;
  }
  send_frames_.clear();  // sent frames are empty; this drops nothing but their handles
  PeerState& state = peers_[peer];
  state.last_sent = Clock::now();
  state.beat_hold_until = std::max(
      state.beat_hold_until, state.last_sent + std::chrono::milliseconds(SlowestTransferMs(size)));
  state.bytes_sent += size;
  ++state.messages_sent;
  bytes_sent_ += size;
  return true;
}

void Transport::Publish(Envelope envelope) {
  if (!pub_) return;
  envelope.type = MessageType::kTelemetry;
  envelope.run_id = options_.run_id;
  envelope.sender = options_.self_id;
  zmq::message_t message = send_buffers_->EncodeMessage(envelope);
  try {
    (void)pub_->send(message, zmq::send_flags::dontwait);
  } catch (const zmq::error_t&) {
    // Telemetry is best effort: the next period publishes again.
  }
}

uint64_t Transport::TelemetrySubscriptions() {
  if (!pub_) return telemetry_subscriptions_;
  // Bounded per call: subscribers are untrusted, and the rest waits for the next call.
  constexpr int kMaxFramesPerCall = 64;
  zmq::message_t frame;
  for (int k = 0; k < kMaxFramesPerCall; ++k) {
    zmq::recv_result_t got;
    try {
      got = pub_->recv(frame, zmq::recv_flags::dontwait);
    } catch (const zmq::error_t&) {
      break;
    }
    if (!got) break;
    // A subscription is the byte 1 followed by its topic; 0 is an unsubscription.
    if (frame.size() >= 1 && static_cast<const uint8_t*>(frame.data())[0] == 1) {
      ++telemetry_subscriptions_;
    }
  }
  return telemetry_subscriptions_;
}

void Transport::WaitTelemetry(std::chrono::milliseconds timeout) {
  if (!pub_) return;
  zmq::pollitem_t item{pub_->handle(), 0, ZMQ_POLLIN, 0};
  try {
    zmq::poll(&item, 1, timeout);
  } catch (const zmq::error_t&) {
    // EINTR (a signal): the caller checks its stop flag and calls again.
  }
}

void Transport::Greet(int32_t peer, bool ack, const std::string& refusal) {
  Envelope hello;
  hello.type = MessageType::kHello;
  hello.hello.dim = options_.dim;
  hello.hello.degree = static_cast<int32_t>(options_.peers.size());
  hello.hello.ack = ack;
  hello.text = refusal.empty() ? options_.hello_text : refusal;
  if (!ack) peers_[peer].last_greeted = Clock::now();
  if (!Send(peer, hello)) {
    spdlog::warn("could not queue HELLO to {}", Describe(peer));
  }
}

void Transport::HandleHello(PeerState* peer, const Envelope& envelope) {
  const int32_t id = peer->address.id;
  if (!envelope.hello.ack) {
    std::string difference, their_view;
    if (envelope.run_id != options_.run_id) {
      const std::string ids =
          " (run id " + Hex(envelope.run_id) + " there, " + Hex(options_.run_id) + " here)";
      if (options_.explain_run_difference) {
        std::tie(difference, their_view) = options_.explain_run_difference(id, envelope.text);
        difference += ids;
      } else {
        difference = "run id " + Hex(envelope.run_id) + " differs from ours " +
                     Hex(options_.run_id) + " (another run configuration)";
      }
    } else if (envelope.hello.dim != options_.dim) {
      difference = "dimension " + std::to_string(envelope.hello.dim) + " differs from ours " +
                   std::to_string(options_.dim);
    }
    if (!difference.empty()) {
      if (peer->refused.empty()) spdlog::error("refusing {}: {}", Describe(id), difference);
      peer->refused = difference;
      rejects_.Count(envelope.run_id != options_.run_id ? RejectReason::kWrongRun
                                                        : RejectReason::kWrongDimension);
      Greet(id, /*ack=*/true,
            "refused by node " + std::to_string(options_.self_id) + ": " +
                (their_view.empty() ? difference : their_view));
      return;
    }
    peer->refused.clear();
    if (!peer->greeted_us) {
      // The text's first field: the method's name, or "algorithm=NAME" of the run's options.
      const std::string first = envelope.text.substr(0, envelope.text.find(';'));
      spdlog::info("{} said hello ({})", Describe(id), first.substr(first.find('=') + 1));
    }
    peer->greeted_us = true;
    Greet(id, /*ack=*/true, "");
    return;
  }
  // A refusal naturally comes from a node of another run. With CURVE (the default) only a listed
  // key bound to this peer's id can send it; with --allow-plaintext a forged one can stop us.
  if (envelope.text.rfind("refused", 0) == 0) {
    if (peer->refusal.empty()) spdlog::error("{} {}", Describe(id), envelope.text);
    peer->refusal = envelope.text;
    return;
  }
  // An acceptance counts only from a node of our run.
  if (envelope.run_id != options_.run_id) {
    rejects_.Count(RejectReason::kWrongRun);
    return;
  }
  peer->accepted_us = true;
  peer->refusal.clear();
}

void Transport::CountReject(int32_t peer, const Reject& reject) {
  rejects_.Count(reject.reason);
  const uint64_t n = ++reject_log_counts_[{peer, static_cast<int>(reject.reason)}];
  if (ShouldLog(n)) {
    spdlog::warn("rejected message from {}: {}: {} ({} so far)",
                 peer >= 0 ? Describe(peer) : std::string("an unknown connection"),
                 RejectReasonName(reject.reason), reject.detail, n);
  }
}

int Transport::Poll(std::chrono::milliseconds timeout, const Handler& handler, int max_messages) {
  int handled = 0;
  bool any_link = false;
  for (const auto& [id, shm] : shm_) any_link = any_link || shm.link != nullptr;
  if (!any_link) {
    retired_links_.clear();
    if (!WaitReadable(router_, timeout)) return 0;
  } else {
    handled = DrainShm(handler, max_messages);
    // Mark every ring "about to wait", then look once more: a message published before the mark
    // is seen here, one after it comes with a wake-up on the FIFO.
    bool waiting = handled > 0;
    shm_fds_.clear();
    shm_fd_peers_.clear();
    for (auto& [id, shm] : shm_) {
      if (!shm.link) continue;
      if (shm.link->Arm()) waiting = true;
      shm_fds_.push_back(shm.link->wake_fd());
      shm_fd_peers_.push_back(id);
    }
    const bool router_ready = WaitReadable(
        router_, shm_fds_, waiting ? std::chrono::milliseconds(0) : timeout, &shm_fd_ready_);
    for (size_t i = 0; i < shm_fd_peers_.size(); ++i) {
      ShmPeer& shm = shm_[shm_fd_peers_[i]];
      if (!shm.link) continue;
      shm.link->Disarm();
      if (shm_fd_ready_[i] && !shm.link->Drain()) shm.peer_gone = true;
    }
    if (handled < max_messages) handled += DrainShm(handler, max_messages - handled);
    retired_links_.clear();
    if (!router_ready) return handled;
  }
  zmq::message_t identity, extra;
  const size_t max_frames = 1 + size_t{options_.limits.max_payloads};
  if (receive_frames_.size() < max_frames) receive_frames_.resize(max_frames);
  Envelope envelope;
  Reject reject;
  // Receives one frame without throwing: EINTR (a signal) or any other error reads as "no more".
  auto receive = [this](zmq::message_t* frame) {
    try {
      return router_.recv(*frame, zmq::recv_flags::dontwait).has_value();
    } catch (const zmq::error_t&) {
      return false;
    }
  };
  for (int n = 0; n < max_messages; ++n) {
    if (!receive(&identity)) break;
    if (!identity.more()) continue;  // cannot happen on a ROUTER; ignore defensively
    // The message's frames after the routing id: a header and up to max_payloads out-of-line
    // payloads. ZeroMQ delivers a message whole, so the loop ends at its last frame; frames
    // beyond our bound are still read (and dropped) so that the next message starts cleanly.
    size_t frame_count = 0;
    uint64_t message_bytes = 0;
    bool complete = false;
    for (bool more = true; more;) {
      zmq::message_t* frame = frame_count < max_frames ? &receive_frames_[frame_count] : &extra;
      if (!receive(frame)) break;
      ++frame_count;
      message_bytes += frame->size();
      more = frame->more();
      complete = !more;
    }
    // What the guard's unread measure subtracts: every frame taken, with its wire framing (the
    // routing id is the ROUTER's, not on the wire). The descriptor is that of the first frame
    // after the routing id: the routing id frame, made by the ROUTER, carries none (-1).
    const int source_fd =
        frame_count > 0 ? zmq_msg_get(receive_frames_[0].handle(), ZMQ_SRCFD) : -1;
    ledger_.Add(source_fd, message_bytes + frame_count * kWireBytesPerFrame);
    if (frame_count == 0) break;
    if (!complete) break;  // cannot happen (whole messages): a receive error, stop for now
    zmq::message_t& body = receive_frames_[0];
    // Under CURVE the ZAP handler named the connection after its key (only our neighbours' keys
    // are admitted on this port); in plaintext the routing id names it.
    const int32_t peer = options_.curve ? AuthenticatedPeer(body)
                                        : IdFromRoutingId(identity.data(), identity.size());
    auto it = peers_.find(peer);
    if (it == peers_.end()) {
      CountReject(-1, {options_.curve ? RejectReason::kKeyMismatch : RejectReason::kUnknownSender,
                       "connection identity is not a neighbour"});
      continue;
    }
    PeerState& state = it->second;
    ledger_.SetPeer(source_fd, peer);
    bytes_received_ += message_bytes;
    state.bytes_received += message_bytes;
    if (frame_count > max_frames) {
      CountReject(peer,
                  {RejectReason::kMalformed, "message of " + std::to_string(frame_count) +
                                                 " frames, at most " + std::to_string(max_frames)});
      continue;
    }
    payload_frames_.clear();
    for (size_t i = 1; i < frame_count; ++i) {
      payload_frames_.emplace_back(static_cast<const char*>(receive_frames_[i].data()),
                                   receive_frames_[i].size());
    }
    // Float values are checked by the handler's ReadDoubles/PayloadToDoubles as it reads them.
    if (!Decode(static_cast<const char*>(body.data()), body.size(), payload_frames_.data(),
                payload_frames_.size(), options_.limits, &envelope, &reject,
                ValueChecks::kDeferFloats)) {
      CountReject(peer, reject);
      continue;
    }
    // Only the payload-carrying protocol messages go to a handler that converts them; anything
    // else with payloads (a TELEMETRY sent to the ROUTER) is fully checked here.
    if (envelope.type != MessageType::kRound && envelope.type != MessageType::kXchgReq &&
        envelope.type != MessageType::kXchgRep) {
      bool values_ok = true;
      for (const Payload& p : envelope.payloads) {
        if (!CheckPayloadValues(p, &reject)) {
          values_ok = false;
          break;
        }
      }
      if (!values_ok) {
        CountReject(peer, reject);
        continue;
      }
    }
    if (envelope.sender != peer) {
      // Under CURVE: a listed neighbour's key speaking for another node.
      CountReject(peer, {options_.curve ? RejectReason::kKeyMismatch : RejectReason::kUnknownSender,
                         "claims to be node " + std::to_string(envelope.sender)});
      continue;
    }
    state.last_heard = Clock::now();
    state.heard_hold_until =
        std::max(state.heard_hold_until,
                 state.last_heard + std::chrono::milliseconds(SlowestTransferMs(message_bytes)));
    ++state.messages_received;
    if (envelope.type == MessageType::kHello) {
      HandleHello(&state, envelope);
      continue;
    }
    if (envelope.type == MessageType::kShmOffer || envelope.type == MessageType::kShmAnswer) {
      if (!CheckAgainstRun(envelope, expectations_, &reject)) {
        CountReject(peer, reject);
      } else if (!options_.curve) {
        // Without CURVE the sender is not proven: no shared memory, and nothing to answer.
        CountReject(peer, {RejectReason::kUnknownSender, "shared-memory offer without CURVE"});
      } else if (envelope.type == MessageType::kShmOffer) {
        HandleShmOffer(&state, envelope);
      } else {
        HandleShmAnswer(&state, envelope);
      }
      continue;
    }
    if (envelope.type == MessageType::kBye && !state.refused.empty() &&
        envelope.run_id != options_.run_id) {
      // A node we refused leaves: not a message of our run, but its departure is ours to know.
      handler(peer, envelope);
      ++handled;
      continue;
    }
    if (!CheckAgainstRun(envelope, expectations_, &reject)) {
      CountReject(peer, reject);
      continue;
    }
    if (envelope.type == MessageType::kHeartbeat) continue;
    handler(peer, envelope);
    ++handled;
    // The payload frames are the handler's only until it returns: free them now rather than when
    // the next message overwrites them, so that libzmq's I/O thread takes the same (cache-warm)
    // block for the next large frame instead of a second one. At d = 1e5 over TCP (800 KB
    // frames) holding them cost about 100 us of CPU per exchange (docs/results/wire.md).
    for (size_t i = 1; i < frame_count; ++i) receive_frames_[i].rebuild();
  }
  return handled;
}

void Transport::Tick() {
  const Clock::time_point now = Clock::now();
  TelemetrySubscriptions();
  for (auto& [id, state] : peers_) ShmTick(id, &state, now);
  for (auto& [id, state] : peers_) {
    // Until the neighbour has acknowledged us, greet again: it may have started after us, or
    // our HELLO may have reached a previous incarnation of it.
    if (!state.accepted_us && state.refusal.empty() &&
        now - state.last_greeted >= options_.heartbeat_interval) {
      Greet(id, /*ack=*/false, "");
    } else if (now - state.last_sent >= options_.heartbeat_interval &&
               now - state.beat_hold_until >= options_.heartbeat_interval) {
      // Not behind a message that may still be leaving (SlowestTransferMs): the peer would see
      // it only after that message, itself traffic, and it would take a place in the queue.
      Envelope beat;
      beat.type = MessageType::kHeartbeat;
      if (Send(id, beat)) ++state.heartbeats_sent;
    }
  }
}

void Transport::SayGoodbye(const std::string& reason) {
  for (auto& [id, state] : peers_) {
    Envelope bye;
    bye.type = MessageType::kBye;
    bye.text = reason;
    Send(id, bye);
  }
}

}  // namespace starling::net
