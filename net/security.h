// CURVE on the node's sockets and the ZAP allow-list (DESIGN.md "Sockets").
//
// With CurveOptions every socket a Transport binds (ROUTER, telemetry PUB) is a CURVE server and
// every DEALER a CURVE client that expects its neighbour's listed public key. A SecurityGuard
// answers ZAP requests (RFC 27, inproc://zeromq.zap.01) for its context: a client key in the
// allow-list is admitted with the user id listed for it ("n<ID>" for node ID, "probe" for a
// probe), any other key is refused and counted. The transport binds a connection's routing id
// to that user id, so that a listed key cannot speak for another node.
//
// The guard also watches the handshakes of the sockets it is given (zmq_socket_monitor), so that
// a connection refused for a plaintext peer, a wrong server key or an unlisted key is counted on
// the server side and explained on the client side ("node 3 (tcp://...) refused our key").
//
// Threading: the guard runs one thread that owns the ZAP socket and the monitor sockets; it
// polls with a 100 ms deadline and stops when the guard is destroyed. Counters are atomics and
// may be read from any thread. There can be one guard per ZeroMQ context (one ZAP endpoint), and
// it must be constructed before any CURVE server socket of the context binds and outlive them:
// without a ZAP handler libzmq admits every CURVE client.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

namespace starling::net {

struct CurveOptions {
  std::string secret_key;  // ours, Z85
  std::string public_key;  // ours, Z85 (derived from the secret)
  // Public keys (Z85) of the neighbours we connect to, by node id.
  std::map<int32_t, std::string> server_keys;
  // The allow-list: public key (Z85) -> the user id a connection with that key gets.
  std::map<std::string, std::string> allowed;
};

// The user id (and routing id) of node `id` under CURVE: "n<ID>", as RoutingIdFor.
std::string UserIdForNode(int32_t id);
inline constexpr char kProbeUserId[] = "probe";

// Socket set-up; call before bind/connect.
void MakeCurveServer(zmq::socket_t* socket, const CurveOptions& curve);
void MakeCurveClient(zmq::socket_t* socket, const CurveOptions& curve,
                     const std::string& server_public_key);

class SecurityGuard {
 public:
  // Binds the ZAP endpoint in `context`. Throws std::runtime_error if another guard holds it.
  SecurityGuard(zmq::context_t* context, std::map<std::string, std::string> allowed);
  ~SecurityGuard();
  SecurityGuard(const SecurityGuard&) = delete;
  SecurityGuard& operator=(const SecurityGuard&) = delete;

  // Watches the handshakes of a server socket (peer = -1) or of a client socket connected to
  // node `peer`, described as `who` in the log. Call before Start, from the socket's thread.
  void Watch(zmq::socket_t* socket, int32_t peer, const std::string& who);
  void Start();

  // Connections refused because their key is not in the allow-list (ZAP said 400).
  uint64_t unlisted_keys() const { return unlisted_keys_.load(); }
  // Connections to our server sockets that failed the handshake otherwise: plaintext or another
  // mechanism, a client that expects another server key, malformed handshakes.
  uint64_t failed_handshakes() const { return failed_handshakes_.load(); }
  // Handshakes of our client connection to `peer`: completed and failed.
  uint64_t client_successes(int32_t peer) const;
  uint64_t client_failures(int32_t peer) const;

 private:
  struct Watched {
    std::string endpoint;  // inproc monitor endpoint
    int32_t peer = -1;
    std::string who;
    std::atomic<uint64_t> successes{0}, failures{0};
    int64_t last_logged_ms = -1000000;
  };
  void Loop();
  void AnswerZap();
  void OnEvent(Watched* watched, uint16_t event, uint32_t value);

  zmq::context_t* context_;
  zmq::socket_t zap_;
  std::map<std::string, std::string> allowed_;  // Z85 key -> user id
  std::vector<std::unique_ptr<Watched>> watched_;
  std::atomic<uint64_t> unlisted_keys_{0}, failed_handshakes_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace starling::net
