// CURVE on the node's sockets and the ZAP allow-list (docs/how-to/security.md).
//
// With CurveOptions every socket a Transport binds (ROUTER, telemetry PUB) is a CURVE server and
// every DEALER a CURVE client that expects its neighbour's listed public key. A SecurityGuard
// answers ZAP requests (RFC 27, inproc://zeromq.zap.01) for its context. Each server socket has
// a role, told to the handler by its ZAP domain (MakeCurveServer), and each role its own
// allow-list: the peer port admits only the keys of this node's neighbours, the telemetry port
// every listed key (probes and nodes). A key admitted gets the user id listed for it ("n<ID>"
// for node ID, "probe" for a probe); a key listed in the cluster file but not admitted on this
// port is refused and counted as not_admitted, any other key as unlisted_key. The transport
// takes a peer connection's identity from that user id, never from the routing id the client
// presents (transport.h), so that no connection can speak for, or take over, another node.
//
// The guard also watches the sockets it is given (zmq_socket_monitor): a connection refused for
// a plaintext peer, a wrong server key or an unlisted key is counted on the server side and
// explained on the client side ("node 3 (tcp://...) refused our key"); a client connection that
// cannot be made is followed (connect_trouble: since when, how many attempts) and its cause found
// by an attempt of the guard's own (TcpProbe, numeric addresses only) once ZeroMQ's has failed,
// so that the node can say "cannot connect to node 3 at tcp://... (connection refused)"; a
// connection accepted
// that ends without a handshake (closed early, idle until ZMQ_HANDSHAKE_IVL, bytes that are not
// ZMTP) is counted as no_handshake; and a server socket holds at most `max_connections` accepted
// connections: one more is shut down as soon as it is accepted and counted as connection_cap
// (libzmq has no such option: the monitor's ACCEPTED event names the descriptor, which the guard
// shuts down after checking that it is still a TCP socket on the listener's port).
//
// Unfinished messages: libzmq 4.3 keeps the frames of a multipart message in the connection's
// pipe until its last frame, unseen by the application, and neither ZMQ_MAXMSGSIZE (one frame)
// nor the high-water mark (whole messages) bounds them. So the guard measures, about every
// kUnreadCheckMs, what libzmq holds for each accepted connection of a socket watched with a budget:
// bytes it read from the descriptor (TCP_INFO's tcpi_bytes_received less the unread bytes still
// in the kernel, SIOCINQ) less the bytes the application received from it (ReceiveLedger: the
// transport adds each delivered frame with its ZMTP/CURVE framing allowance), less a small
// allowance for handshake and heartbeat commands. Above the budget, the connection is shut down
// like one over the cap, counted as unfinished_message and logged with its address (and its
// node, if it delivered anything), and the process's free heap is given back to the system
// (malloc_trim) once libzmq has freed the pipe. The difference never goes below zero: when
// deliveries and allowances overtake what was read, the baselines move up, so that no
// connection can bank credit with many small complete messages.
//
// Counting without a descriptor in libzmq's handshake events: ACCEPTED and DISCONNECTED carry
// the descriptor, handshake results do not. Each result is given to the oldest accepted
// connection still without one; a connection that closes without a result is a no_handshake.
// Since every connection has at most one result, emitted between its ACCEPTED and DISCONNECTED,
// the counts are exact once the connections involved have closed (a single count can be late).
//
// Threading: the guard runs one thread that owns the ZAP socket and the monitor sockets; it
// polls with a 100 ms deadline and stops when the guard is destroyed. Counters are atomics and
// may be read from any thread. There can be one guard per ZeroMQ context (one ZAP endpoint), and
// it must be constructed before any CURVE server socket of the context binds and outlive them:
// without a ZAP handler libzmq admits every CURVE client. Without CURVE a guard only watches
// (connection cap, no_handshake counts).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "net/receive_ledger.h"
#include "net/tcp_probe.h"

namespace starling::net {

struct CurveOptions {
  std::string secret_key;  // ours, Z85
  std::string public_key;  // ours, Z85 (derived from the secret)
  // Public keys (Z85) of the neighbours we connect to, by node id.
  std::map<int32_t, std::string> server_keys;
  // The telemetry port's allow-list, every key the cluster file lists: public key (Z85) -> the
  // user id a connection with that key gets.
  std::map<std::string, std::string> allowed;
  // The peer port's allow-list: the keys of our neighbours only (a subset of `allowed`).
  std::map<std::string, std::string> peer_allowed;
  // Where the allowed keys are listed, for the messages about keys refused.
  std::string allow_list_name = "the cluster file";
};

// A client connection that cannot be made (SecurityGuard::connect_trouble).
struct ConnectTrouble {
  uint64_t attempts = 0;  // ZeroMQ's failed attempts since the connection was last up
  double seconds = 0;     // since the first of them
  std::string cause;      // from the guard's own attempt ("connection refused", ...); may be empty
};

// The unfinished-message guard (above): how often it measures, and the allowance for commands
// that are read but never delivered (greeting, handshake, ZMTP PING/PONG every second).
inline constexpr int kUnreadCheckMs = 20;
inline constexpr uint64_t kUnreadAllowanceBytes = 16 << 10;
inline constexpr uint64_t kUnreadAllowancePerSecond = 1 << 10;

// The roles of a node's server sockets (their ZAP domains).
enum class PortRole { kPeer, kTelemetry };

// The user id (and routing id) of node `id` under CURVE: "n<ID>", as RoutingIdFor.
std::string UserIdForNode(int32_t id);
inline constexpr char kProbeUserId[] = "probe";

// Socket set-up; call before bind/connect. A server socket's role selects its allow-list.
void MakeCurveServer(zmq::socket_t* socket, const CurveOptions& curve, PortRole role);
void MakeCurveClient(zmq::socket_t* socket, const CurveOptions& curve,
                     const std::string& server_public_key);

class SecurityGuard {
 public:
  // With `curve`: binds the ZAP endpoint in `context`, with curve->peer_allowed for the peer port
  // and curve->allowed for the telemetry port; throws std::runtime_error if another guard holds
  // it. Without (plaintext): no ZAP handler, only the watching below.
  SecurityGuard(zmq::context_t* context, const CurveOptions* curve);
  ~SecurityGuard();
  SecurityGuard(const SecurityGuard&) = delete;
  SecurityGuard& operator=(const SecurityGuard&) = delete;

  // Watches a server socket bound (to be bound) at `endpoint`, holding at most max_connections
  // accepted connections (0 = no cap). With unread_budget > 0, a connection for which libzmq
  // holds more than unread_budget bytes the application has not received is cut (above);
  // `ledger` has the bytes received per descriptor (nullptr: the socket delivers nothing, as a
  // PUB). Both must outlive the guard. Call before Start, from the socket's thread.
  void WatchServer(zmq::socket_t* socket, const std::string& endpoint, int max_connections,
                   const std::string& who, ReceiveLedger* ledger = nullptr,
                   uint64_t unread_budget = 0);
  // Watches the handshakes and the connection of a client socket connected to node `peer` at
  // `endpoint`, described as `who`.
  void WatchClient(zmq::socket_t* socket, int32_t peer, const std::string& who,
                   const std::string& endpoint);
  void Start();

  // Connections refused because their key is in no allow-list (ZAP said 400).
  uint64_t unlisted_keys() const { return unlisted_keys_.load(); }
  // Connections refused because their key, listed, is not admitted on that port (a probe or a
  // non-neighbour on the peer port).
  uint64_t not_admitted() const { return not_admitted_.load(); }
  // Connections to our server sockets that failed the handshake with a protocol error:
  // plaintext or another mechanism, a client that expects another server key, malformed
  // handshakes.
  uint64_t failed_handshakes() const { return failed_handshakes_.load(); }
  // Accepted connections that ended without any handshake result: closed early, idle until the
  // handshake time-out, or bytes that are not ZMTP.
  uint64_t no_handshakes() const { return no_handshakes_.load(); }
  // Accepted connections shut down because their socket held max_connections already.
  uint64_t over_cap() const { return over_cap_.load(); }
  // Connections cut because libzmq held more of their bytes than the budget (an unfinished
  // multipart message, or a peer that sends faster than the node reads, beyond the queues).
  uint64_t unfinished_messages() const { return unfinished_.load(); }
  // Connections currently open on the server sockets (all of them together).
  int64_t open_connections() const { return open_connections_.load(); }
  // Handshakes of our client connection to `peer`: completed and failed.
  uint64_t client_successes(int32_t peer) const;
  uint64_t client_failures(int32_t peer) const;
  // Our connection to `peer` while ZeroMQ fails to make it (its TCP connection is not up and an
  // attempt failed since it last was); nullopt while it is up or has not failed yet.
  std::optional<ConnectTrouble> connect_trouble(int32_t peer) const;

 private:
  // An accepted connection of a server socket, by descriptor (guard thread only).
  struct Accepted {
    bool has_result = false;  // a handshake result was given to it
    bool cut = false;         // shut down at the cap
    uint64_t order = 0;       // acceptance order, for giving results to the oldest
    // The unread measure's baselines (valid if `measured`): bytes libzmq had read, bytes
    // delivered (ledger), and when.
    bool measured = false;
    uint64_t base_read = 0, base_delivered = 0;
    int64_t base_ms = 0;
  };
  struct Watched {
    std::string endpoint;  // inproc monitor endpoint
    int32_t peer = -1;     // -1: a server socket
    std::string who;
    int listen_port = -1;  // a TCP server socket's port (-1: not TCP, never cut)
    int max_connections = 0;
    std::atomic<uint64_t> successes{0}, failures{0};
    int64_t last_logged_ms = -1000000;
    std::map<int, Accepted> accepted;  // open connections by descriptor
    uint64_t accept_serial = 0;
    ReceiveLedger* ledger = nullptr;
    uint64_t unread_budget = 0;
    // A client's connection (guard thread writes, any thread reads under trouble_mutex_).
    std::string peer_endpoint;
    bool tcp_up = false;
    uint64_t connect_failures = 0;  // since tcp_up was last true
    int64_t failing_since_ms = 0;
    std::string cause;
    std::unique_ptr<TcpProbe> probe;  // guard thread only
    int64_t next_probe_ms = 0;
  };
  void Watch(zmq::socket_t* socket, int32_t peer, int events, const std::string& who,
             std::unique_ptr<Watched> watched);
  void Loop();
  void AnswerZap();
  void OnEvent(Watched* watched, uint16_t event, uint32_t value);
  void OnServerEvent(Watched* watched, uint16_t event, uint32_t value);
  void GiveResult(Watched* watched);
  // Takes the unread measure's baselines for a newly accepted connection.
  void StartMeasure(Watched* watched, int fd, Accepted* accepted);
  // Checks every measured connection against its socket's budget; cuts those above it.
  void CheckUnread(int64_t now_ms);
  // A client's connection events; true if `event` was one.
  bool OnClientConnection(Watched* watched, uint16_t event, int64_t now_ms);
  // Finishes the client probes that are done (their causes into their Watched).
  void PollProbes();

  zmq::context_t* context_;
  zmq::socket_t zap_;
  std::map<std::string, std::map<std::string, std::string>> allowed_;  // domain -> key -> user
  std::vector<std::unique_ptr<Watched>> watched_;
  std::atomic<uint64_t> unlisted_keys_{0}, not_admitted_{0}, failed_handshakes_{0},
      no_handshakes_{0}, over_cap_{0}, unfinished_{0};
  std::atomic<int64_t> open_connections_{0};
  std::vector<int64_t> trim_at_ms_;  // when to return freed heap after a cut (guard thread)
  std::string allow_list_name_ = "the cluster file";
  mutable std::mutex trouble_mutex_;  // Watched's connection fields
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace starling::net
