// The ZeroMQ transport of one node (docs/reference/wire-protocol.md).
//
// Each node binds one ROUTER for peer traffic and one XPUB for telemetry, and connects one DEALER
// per neighbour. Everything a node sends to neighbour j goes out on its DEALER to j; everything
// it receives arrives on its ROUTER. Under CURVE the sender of a message is the node its
// connection's key belongs to (the ZAP user id); the DEALERs present no routing id, so that the
// ROUTER gives every connection its own and no connection can take over another's (a restarted
// neighbour simply opens a new connection with the same key). In plaintext the routing id
// "n<ID>" names the sender, with ZMQ_ROUTER_HANDOVER for restarts: nothing is authenticated.
//
// Resources: an accepted connection that has not completed its handshake within
// handshake_timeout is closed; each server socket holds at most max_connections_per_port
// accepted connections (security.h); every frame is at most limits.max_message_bytes (the XPUB
// accepts only subscriptions, frames of at most kMaxTelemetryInbound bytes). The frames of one
// multipart message that never ends, which libzmq 4.3 piles up in the receiving pipe before the
// application sees any of them, are bounded by the guard's unread measure: a connection holding
// more than unread_budget() bytes (peer port) or kTelemetryUnreadBudget (telemetry port) in
// libzmq is cut (security.h, docs/how-to/security.md).
// Incoming bytes are untrusted: every message is size-capped by ZMQ_MAXMSGSIZE, decoded with
// bounded limits, checked against the run and against the connection's identity; rejects are
// counted per reason and logged (rate-limited) with the peer's id and endpoint. Nothing that
// arrives can make this class throw.
//
// The HELLO handshake is handled here: every node greets each neighbour on start and on
// reconnection; the neighbour answers with an ack, or a refusal that names the difference
// (protocol version, the first differing run option with both values, dimension), logged on
// both sides. The BYE of a node we refused is handed to the handler although its run id is not
// ours: it says that the node left for good, and the run cannot go on without it.
//
// Shared memory (TransportOptions::shared_memory, net/shm_link.h): under CURVE, once two
// neighbours have greeted and accepted each other, the lower id offers a ring pair (kShmOffer)
// and the other accepts it when it runs on the same host (host id) as the same user and sizes
// its rings the same, or declines saying why (kShmAnswer). While a link is up, ROUND, XCHG_REQ,
// XCHG_REP, BUSY and RESEND to that neighbour go through its ring; HELLO, HEARTBEAT, BYE and
// everything else keep to ZeroMQ, which also takes a message the ring has no room for. A
// message from a ring is checked as one from the ROUTER (the codec's limits and all value
// checks, the run, the sender: the ring's peer) and refusals are counted the same way. A link
// ends when its peer's process is gone (its FIFO end closed) or breaks the ring; a neighbour that
// comes back offers again (or is offered again). A peer that never answers (a daemon without
// shared memory refuses the unknown message type) is offered kShmMaxOffers times, then left to
// ZeroMQ.
//
// Threading: one thread (the node's poll loop) owns a Transport.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "net/codec.h"
#include "net/envelope.h"
#include "net/reject.h"
#include "net/security.h"
#include "net/send_buffers.h"
#include "net/shm_link.h"
#include "net/validation.h"

namespace starling::net {

using Clock = std::chrono::steady_clock;

struct PeerAddress {
  int32_t id = 0;
  std::string endpoint;  // its ROUTER endpoint
};

struct TransportOptions {
  int32_t self_id = 0;
  std::string bind_endpoint;       // our ROUTER
  std::string telemetry_endpoint;  // our PUB; empty = no telemetry socket
  std::vector<PeerAddress> peers;  // our neighbours
  uint64_t run_id = 0;
  uint32_t dim = 0;
  // Sent with our HELLO: the run's options as a line (node/config/run_difference.h), or just
  // the method's name. Peers show its first field in their logs.
  std::string hello_text;
  // Why a peer whose HELLO carries another run id is refused, given that HELLO's text: `here`
  // for our log, `there` for the refusal the peer logs (both name the first differing option
  // with both values). Unset: the run ids are named.
  std::function<std::pair<std::string, std::string>(int32_t peer,
                                                    const std::string& their_hello_text)>
      explain_run_difference;
  DecodeLimits limits;
  // CURVE on every socket, with the ZAP allow-list (security.h); nullopt = plaintext. One CURVE
  // transport per ZeroMQ context (it owns the context's ZAP handler).
  std::optional<CurveOptions> curve;
  std::chrono::milliseconds heartbeat_interval{1000};
  // Queue limits count messages, not bytes: the queues of a socket hold at most
  // min(max_queued_messages, queue_budget_bytes / limits.max_message_bytes) messages (at least
  // 16), so that a peer that stops reading cannot make us buffer gigabytes of large payloads.
  int max_queued_messages = 10000;
  uint64_t queue_budget_bytes = 256ull << 20;
  // ZMQ_HANDSHAKE_IVL of the server sockets (libzmq's default is 30 s).
  std::chrono::milliseconds handshake_timeout{3000};
  // Accepted connections each server socket holds at once (0 = no cap).
  int max_connections_per_port = 64;
  // Shared memory with neighbours on this host (see the class comment); used under CURVE only.
  bool shared_memory = false;
  // The run-private folder's tag (ShmRunFolder, net/shm_segment.h): the run id in hex.
  std::string shm_run_tag;
};

// Offers made to a neighbour that does not answer before it is left to ZeroMQ.
inline constexpr int kShmMaxOffers = 5;
// How long an offer waits for its answer before the next one.
inline constexpr std::chrono::milliseconds kShmOfferWait{3000};

// The largest frame a telemetry PUB accepts from a subscriber: subscriptions are short, and the
// CURVE handshake's commands (the largest, INITIATE, is about 300 bytes) pass the same check.
inline constexpr int64_t kMaxTelemetryInbound = 1024;
// What libzmq may hold unread from one telemetry subscriber (a subscription, its handshake and
// heartbeats take a few kB).
inline constexpr uint64_t kTelemetryUnreadBudget = 64 << 10;

// ZMTP heartbeats on the ROUTER and on each DEALER (ZMQ_HEARTBEAT_IVL, ZMQ_HEARTBEAT_TIMEOUT): a
// PING every kZmtpHeartbeatIvlMs; a connection on which libzmq decodes nothing for the time-out
// after a PING is closed, so that a peer gone without closing (a half-open connection after a
// partition) frees its descriptor and buffers. libzmq decodes a message only once it is whole
// (decrypted, under CURVE), its PONG leaves only after the message it is sending, and one I/O
// thread per daemon encrypts and decrypts every message: the time-out must cover one message of
// the largest size a neighbour may send crossing at the slowest rate a live daemon on a loaded
// machine moves bytes. With a fixed 5 s, 80 MB messages (d = 1e7) were cut mid-message at load
// 5-20 on 2 cores and no exchange completed (docs/results/large-models.md).
inline constexpr int kZmtpHeartbeatIvlMs = 1000;
inline constexpr int64_t kZmtpHeartbeatBaseTimeoutMs = 5000;
// The slowest rate assumed for one message: 8 MiB/s of PeerMessageBound, which is 6 times a
// dense float64 payload, so a dense message is given 1.3 MiB/s; the slowest measured, 4 daemons
// at d = 1e7 at load 12-23 on 2 cores, about 11 MB/s (docs/results/large-models.md).
inline constexpr uint64_t kSlowestPeerBytesPerSecond = 8ull << 20;
// kZmtpHeartbeatBaseTimeoutMs plus PeerMessageBound(limits) at kSlowestPeerBytesPerSecond, in
// ms (at most one hour): 5 s for small models, 62 s at d = 1e7.
int ZmtpHeartbeatTimeoutMs(const DecodeLimits& limits);

// HEARTBEATs behind a large message (docs/results/large-models.md). An application HEARTBEAT
// reaches the neighbour only after everything queued before it, and every message counts as traffic
// (PeerState::last_heard), so one queued behind a message still crossing tells the neighbour
// nothing; at d = 1e7 (80 MB, about 10 s per message at load 18 on 2 cores) one a second filled
// the DEALER's queue (16 messages) and exchange messages were refused. The rule: no HEARTBEAT to
// a peer until heartbeat_interval after each message sent to it could have left at
// kSlowestPeerBytesPerSecond (PeerState::beat_hold_until, the latest of send time plus
// SlowestTransferMs over the messages sent; not summed over messages queued together, so that
// it cannot run ahead of the clock when the link is faster than assumed): 2 s + 1 s after a
// 16 MiB message, 9.5 s + 1 s after 80 MB, unchanged below 8 KiB (small models: the transfer is
// below 1 ms). HELLO re-sends are not held. The receiver keeps the same from the arrival times
// (PeerState::heard_hold_until), so that a peer whose large message crossed faster than assumed
// is not taken for silent while its HEARTBEATs are held.
// `message_bytes` at kSlowestPeerBytesPerSecond, in whole ms rounded down.
int64_t SlowestTransferMs(uint64_t message_bytes);

struct PeerState {
  PeerAddress address;
  bool greeted_us = false;   // their HELLO arrived and we accepted it
  bool accepted_us = false;  // their ack to our HELLO arrived
  std::string refusal;       // non-empty if they refused us, with their reason
  std::string refused;       // non-empty if we refused them, with our view of the difference
  Clock::time_point last_heard{};
  Clock::time_point last_sent{};
  Clock::time_point last_greeted{};
  // The latest send time plus SlowestTransferMs of the message's bytes, over the messages sent
  // to the peer (not before last_sent): Tick sends no HEARTBEAT before heartbeat_interval past it.
  Clock::time_point beat_hold_until{};
  // The same over the messages the peer sent us, from their arrival times (not before
  // last_heard): the peer may send nothing until heartbeat_interval past it.
  Clock::time_point heard_hold_until{};
  uint64_t heartbeats_sent = 0;
  uint64_t bytes_received = 0, messages_received = 0;
  uint64_t bytes_sent = 0, messages_sent = 0;
  // Shared memory: whether a link is up, how many were set up (more than one after the peer
  // came back), the messages they carried each way, and why there is none (the peer's refusal
  // or ours, or its silence); empty while one is up or being offered.
  bool shm_up = false;
  uint64_t shm_links = 0;
  uint64_t shm_messages_sent = 0, shm_messages_received = 0;
  std::string shm_status;
};

class Transport {
 public:
  // Called for each valid message other than HELLO/HEARTBEAT, with the authenticated peer id.
  // The envelope's payload bytes are valid only during the call (they view the received ZeroMQ
  // frames: no copy). In ROUND and XCHG_REQ/XCHG_REP messages, float64/float32 payload values
  // are NOT yet checked for NaN/Inf (the codec's ValueChecks::kDeferFloats, so that a vector is
  // read once; other types are fully checked): read them only with ReadDoubles (in place, one
  // read-only pass, for payloads that arrived in a frame of their own) or PayloadToDoubles
  // (payload.h), which check as they read, and pass a failure to ReportReject. Everything else
  // (shape, dimension, run, sender, frame count) is checked.
  using Handler = std::function<void(int32_t peer, const Envelope& envelope)>;

  // Binds and connects. Throws std::runtime_error naming the node and the endpoint if a bind
  // fails (address in use, no such interface) or an endpoint is malformed.
  Transport(zmq::context_t* context, TransportOptions options);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Encodes and queues `envelope` (run id and sender are filled in) to neighbour `peer`. Never
  // blocks; returns false if the peer is unknown or its queue is full. Payloads of at least
  // kOutOfLineMinBytes travel as frames of their own (codec.h, SendBuffers::EncodeFrames):
  // without a keepalive their bytes are copied once, into a pooled buffer; with one, not at all:
  // the caller promises that every payload's bytes stay alive and unchanged while `keepalive`
  // lives (e.g. a shared_ptr to an immutable snapshot), and ZeroMQ holds it until they are sent.
  bool Send(int32_t peer, Envelope envelope, std::shared_ptr<const void> keepalive = nullptr);
  // Publishes a TELEMETRY envelope (dropped silently if nobody listens or there is no socket).
  void Publish(Envelope envelope);
  // Subscriptions the telemetry socket has received so far (one per subscriber's connection:
  // the socket is an XPUB that passes every subscription up). Reads what is waiting first, at
  // most a bounded number of frames per call; anything that is not a subscription is dropped.
  uint64_t TelemetrySubscriptions();
  // Waits up to `timeout` for the telemetry socket to have something to read (a subscription);
  // returns at once without one.
  void WaitTelemetry(std::chrono::milliseconds timeout);
  // Waits up to `timeout` for incoming messages and handles every one that is ready (at most
  // `max_messages`). Returns the number of valid messages handed to `handler`.
  int Poll(std::chrono::milliseconds timeout, const Handler& handler, int max_messages = 256);
  // Sends a HEARTBEAT to each neighbour we have sent nothing to for heartbeat_interval and
  // whose messages could all have left by heartbeat_interval ago (PeerState::beat_hold_until, see
  // SlowestTransferMs); greets again every heartbeat_interval a neighbour that has not accepted
  // us, whatever we sent it. Reads the telemetry socket's subscriptions that are waiting.
  void Tick();
  // Sends BYE with `reason` to every neighbour.
  void SayGoodbye(const std::string& reason);
  // Messages of `type` must carry exactly `count` payloads (validation.h); others are counted as
  // bad_payload_count. The node loop calls it once it knows its algorithm's payload.
  void ExpectPayloads(MessageType type, int count) { expectations_.ExpectPayloads(type, count); }
  // Counts and logs (rate-limited) a reject found by the handler, e.g. a NaN that
  // PayloadToDoubles found in a payload whose values Poll deferred.
  void ReportReject(int32_t peer, const Reject& reject) { CountReject(peer, reject); }

  const PeerState& peer(int32_t id) const;
  const std::map<int32_t, PeerState>& peers() const { return peers_; }
  // Peers that refused our HELLO (their reason is in PeerState::refusal).
  std::vector<int32_t> RefusedBy() const;
  // Rejected messages, plus connections the security guard refused or counted (unlisted keys,
  // keys not admitted on the port, failed handshakes, no handshake, the connection cap).
  RejectCounters rejects() const;
  // Failed handshakes of our connection to `peer` (CURVE, or plaintext with a CURVE server).
  uint64_t handshake_failures(int32_t peer) const {
    return guard_ ? guard_->client_failures(peer) : 0;
  }
  // Completed handshakes of our connection to `peer`: > 0 once the peer has run and taken our
  // key (CURVE), or answered ZMTP's greeting (plaintext).
  uint64_t handshake_successes(int32_t peer) const {
    return guard_ ? guard_->client_successes(peer) : 0;
  }
  // Our connection to `peer` while it cannot be made (SecurityGuard::connect_trouble).
  std::optional<ConnectTrouble> connect_trouble(int32_t peer) const {
    return guard_ ? guard_->connect_trouble(peer) : std::nullopt;
  }
  // What libzmq may hold, read from one peer connection and not yet received by the node,
  // before the connection is cut as unfinished_message (security.h): (HWM + 2) whole messages
  // of the largest size a neighbour sends (PeerMessageBound plus framing), one frame of
  // limits.max_message_bytes being read, and 64 KiB.
  uint64_t unread_budget() const { return unread_budget_; }
  // Why this node uses no shared memory at all ("" when it may): off, no CURVE, no host id...
  const std::string& shm_off_reason() const { return shm_off_reason_; }
  uint64_t bytes_sent() const { return bytes_sent_; }
  uint64_t bytes_received() const { return bytes_received_; }
  const TransportOptions& options() const { return options_; }

 private:
  void Greet(int32_t peer, bool ack, const std::string& refusal);
  void HandleHello(PeerState* peer, const Envelope& envelope);
  void CountReject(int32_t peer_or_minus1, const Reject& reject);
  std::string Describe(int32_t peer) const;
  // Shared memory (see the class comment).
  struct ShmPeer {
    std::unique_ptr<ShmLink> link;     // up
    std::unique_ptr<ShmLink> pending;  // our offer, unanswered
    Clock::time_point offered_at{};
    int offers = 0;
    bool peer_gone = false;  // its FIFO end closed: drain the ring, then end the link
  };
  void SetUpShm();
  static void RemoveDeadOffers(const std::string& folder);
  static bool ShmCarries(MessageType type);
  void ShmTick(int32_t id, PeerState* state, Clock::time_point now);
  void HandleShmOffer(PeerState* state, const Envelope& envelope);
  void HandleShmAnswer(PeerState* state, const Envelope& envelope);
  void AnswerShm(int32_t peer, const std::string& text);
  void EndShm(int32_t peer, const std::string& why, bool warn);
  // Hands every waiting ring message (at most max_messages) to handler; returns how many.
  int DrainShm(const Handler& handler, int max_messages);
  std::map<int32_t, ShmPeer> shm_;
  // Links ended while one of theirs may be in use up the stack: freed at the end of Poll/Tick.
  std::vector<std::unique_ptr<ShmLink>> retired_links_;
  std::string shm_off_reason_;
  std::string shm_folder_, shm_host_;
  uint32_t shm_capacity_ = 0, shm_max_frame_ = 0;
  uint64_t shm_names_ = 0;
  std::vector<int> shm_fds_;
  std::vector<int32_t> shm_fd_peers_;
  std::vector<bool> shm_fd_ready_;

  TransportOptions options_;
  // Bytes delivered from each accepted peer connection; read by guard_, so declared before it.
  ReceiveLedger ledger_;
  // Declared before the sockets so that it outlives them: without a ZAP handler libzmq would
  // admit any CURVE key. Present in plaintext too (the connection cap and counts).
  std::unique_ptr<SecurityGuard> guard_;
  zmq::socket_t router_;
  std::unique_ptr<zmq::socket_t> pub_;
  uint64_t telemetry_subscriptions_ = 0;
  std::map<int32_t, PeerState> peers_;
  std::map<int32_t, std::unique_ptr<zmq::socket_t>> dealers_;
  // Under CURVE: the peer a message came from, by its connection's user id; -1 if none.
  int32_t AuthenticatedPeer(const zmq::message_t& frame) const;

  RunExpectations expectations_;
  RejectCounters rejects_;
  std::map<std::pair<int32_t, int>, uint64_t> reject_log_counts_;
  std::shared_ptr<SendBuffers> send_buffers_ = SendBuffers::Create();
  std::vector<zmq::message_t> send_frames_;     // reused by Send
  std::vector<zmq::message_t> receive_frames_;  // reused by Poll: a message's frames after the
                                                // routing id, at most 1 + limits.max_payloads
  std::vector<std::string_view> payload_frames_;
  uint64_t bytes_sent_ = 0, bytes_received_ = 0;
  uint64_t unread_budget_ = 0;
};

}  // namespace starling::net
