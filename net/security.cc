#include "net/security.h"

#include <arpa/inet.h>
#include <linux/sockios.h>
#include <linux/tcp.h>  // struct tcp_info with tcpi_bytes_received (glibc's lacks it)
#include <malloc.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "net/endpoint.h"

namespace starling::net {

namespace {

constexpr char kZapEndpoint[] = "inproc://zeromq.zap.01";
// One ZAP domain per port role, so that the handler knows which allow-list applies.
constexpr char kPeerDomain[] = "starling-peer";
constexpr char kTelemetryDomain[] = "starling-telemetry";
constexpr int kHandshakeEvents =
    ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
    ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
constexpr int kServerEvents = kHandshakeEvents | ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED;
constexpr int kClientEvents =
    kHandshakeEvents | ZMQ_EVENT_CONNECTED | ZMQ_EVENT_CONNECT_RETRIED | ZMQ_EVENT_DISCONNECTED;
// The guard's own connection attempt to a client's server that ZeroMQ cannot reach: how long it
// waits, and how often it is made while the connection keeps failing.
// A probe that connects is seen by the far side as a connection that sent nothing (counted
// there as no_handshake): the first is made only once the connection has failed for a while
// (nodes started together are up by then), and right after one of ZeroMQ's attempts failed.
constexpr std::chrono::milliseconds kProbeTimeout{4000};
constexpr int64_t kProbeEveryMs = 5000;
constexpr int64_t kFirstProbeAfterMs = 3000;
// A client whose handshakes keep failing is told so at most this often (it retries every
// reconnect interval).
constexpr int64_t kClientLogPeriodMs = 5000;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool ShouldLog(uint64_t count) { return count <= 5 || count % 1000 == 0; }

// The port of "tcp://HOST:PORT", or -1.
int TcpPort(const std::string& endpoint) {
  if (endpoint.rfind("tcp://", 0) != 0) return -1;
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon < 6) return -1;
  char* end = nullptr;
  const long port = std::strtol(endpoint.c_str() + colon + 1, &end, 10);
  return (*end == '\0' && port > 0 && port < 65536) ? static_cast<int>(port) : -1;
}

// True if `fd` is a connected TCP socket whose local port is `port`: the descriptor an ACCEPTED
// event named may have been closed and reused since (by a file, or our own DEALER's socket), and
// only a connection accepted on that listener may be shut down.
bool IsAcceptedOn(int fd, int port) {
  int type = 0;
  socklen_t len = sizeof(type);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) return false;
  sockaddr_storage local{};
  socklen_t local_len = sizeof(local);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) return false;
  int local_port = -1;
  if (local.ss_family == AF_INET) {
    local_port = ntohs(reinterpret_cast<const sockaddr_in*>(&local)->sin_port);
  } else if (local.ss_family == AF_INET6) {
    local_port = ntohs(reinterpret_cast<const sockaddr_in6*>(&local)->sin6_port);
  }
  if (local_port != port) return false;
  sockaddr_storage remote{};
  socklen_t remote_len = sizeof(remote);
  return getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &remote_len) == 0;
}

// Bytes libzmq has read from TCP socket fd: what TCP received less what still waits in the
// kernel. False if fd is not a TCP socket (any more).
bool BytesReadByZmq(int fd, uint64_t* read) {
  tcp_info info{};
  socklen_t len = sizeof(info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
      len < offsetof(tcp_info, tcpi_bytes_received) + sizeof(info.tcpi_bytes_received)) {
    return false;
  }
  int unread = 0;
  if (ioctl(fd, SIOCINQ, &unread) != 0 || unread < 0) return false;
  const uint64_t received = info.tcpi_bytes_received;
  *read = received > static_cast<uint64_t>(unread) ? received - unread : 0;
  return true;
}

// "IP:port" of the remote end of fd, or "?".
std::string RemoteAddress(int fd) {
  sockaddr_storage remote{};
  socklen_t len = sizeof(remote);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &len) != 0) return "?";
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (remote.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&remote);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    port = ntohs(a->sin_port);
  } else if (remote.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&remote);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    port = ntohs(a->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

// After a cut, libzmq frees the connection's pipe once both its threads have processed the
// termination; glibc keeps the freed heap unless asked. Trim a few times after each cut.
constexpr int64_t kTrimDelaysMs[] = {200, 1000, 3000};

std::atomic<uint64_t> g_monitor_serial{0};

}  // namespace

std::string UserIdForNode(int32_t id) { return RoutingIdFor(id); }

void MakeCurveServer(zmq::socket_t* socket, const CurveOptions& curve, PortRole role) {
  socket->set(zmq::sockopt::curve_server, 1);
  socket->set(zmq::sockopt::curve_secretkey, curve.secret_key);
  socket->set(zmq::sockopt::zap_domain, role == PortRole::kPeer ? kPeerDomain : kTelemetryDomain);
}

void MakeCurveClient(zmq::socket_t* socket, const CurveOptions& curve,
                     const std::string& server_public_key) {
  socket->set(zmq::sockopt::curve_serverkey, server_public_key);
  socket->set(zmq::sockopt::curve_publickey, curve.public_key);
  socket->set(zmq::sockopt::curve_secretkey, curve.secret_key);
}

SecurityGuard::SecurityGuard(zmq::context_t* context, const CurveOptions* curve)
    : context_(context) {
  if (curve == nullptr) return;
  allow_list_name_ = curve->allow_list_name;
  allowed_[kPeerDomain] = curve->peer_allowed;
  allowed_[kTelemetryDomain] = curve->allowed;
  zap_ = zmq::socket_t(*context, zmq::socket_type::rep);
  zap_.set(zmq::sockopt::linger, 0);
  try {
    zap_.bind(kZapEndpoint);
  } catch (const zmq::error_t& e) {
    throw std::runtime_error(std::string("cannot start the CURVE allow-list (ZAP handler): ") +
                             e.what());
  }
}

SecurityGuard::~SecurityGuard() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void SecurityGuard::WatchServer(zmq::socket_t* socket, const std::string& endpoint,
                                int max_connections, const std::string& who, ReceiveLedger* ledger,
                                uint64_t unread_budget) {
  auto watched = std::make_unique<Watched>();
  watched->listen_port = TcpPort(endpoint);
  watched->max_connections = max_connections;
  watched->ledger = ledger;
  watched->unread_budget = unread_budget;
  Watch(socket, -1, kServerEvents, who, std::move(watched));
}

void SecurityGuard::WatchClient(zmq::socket_t* socket, int32_t peer, const std::string& who,
                                const std::string& endpoint) {
  auto watched = std::make_unique<Watched>();
  watched->peer_endpoint = endpoint;
  Watch(socket, peer, kClientEvents, who, std::move(watched));
}

void SecurityGuard::Watch(zmq::socket_t* socket, int32_t peer, int events, const std::string& who,
                          std::unique_ptr<Watched> watched) {
  watched->endpoint = "inproc://starling-handshakes-" + std::to_string(++g_monitor_serial);
  watched->peer = peer;
  watched->who = who;
  if (zmq_socket_monitor(socket->handle(), watched->endpoint.c_str(), events) != 0) {
    throw std::runtime_error("cannot watch the handshakes of " + who + ": " +
                             zmq_strerror(zmq_errno()));
  }
  watched_.push_back(std::move(watched));
}

void SecurityGuard::Start() {
  // spdlog's registry is made on first use; made here, before the thread that logs beside this
  // one, so that its construction happens before both (TSan saw the guard thread make it while
  // the node thread read it).
  (void)spdlog::default_logger_raw();
  thread_ = std::thread([this] { Loop(); });
}

uint64_t SecurityGuard::client_successes(int32_t peer) const {
  for (const auto& w : watched_) {
    if (w->peer == peer) return w->successes.load();
  }
  return 0;
}

uint64_t SecurityGuard::client_failures(int32_t peer) const {
  for (const auto& w : watched_) {
    if (w->peer == peer) return w->failures.load();
  }
  return 0;
}

std::optional<ConnectTrouble> SecurityGuard::connect_trouble(int32_t peer) const {
  std::lock_guard<std::mutex> lock(trouble_mutex_);
  for (const auto& w : watched_) {
    if (w->peer != peer) continue;
    if (w->tcp_up || w->connect_failures == 0) return std::nullopt;
    ConnectTrouble trouble;
    trouble.attempts = w->connect_failures;
    trouble.seconds = static_cast<double>(NowMs() - w->failing_since_ms) / 1000.0;
    trouble.cause = w->cause;
    return trouble;
  }
  return std::nullopt;
}

bool SecurityGuard::OnClientConnection(Watched* w, uint16_t event, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(trouble_mutex_);
  if (event == ZMQ_EVENT_CONNECTED) {
    w->tcp_up = true;
    w->connect_failures = 0;
    w->failing_since_ms = 0;
    w->cause.clear();
    return true;
  }
  if (event == ZMQ_EVENT_DISCONNECTED) {
    w->tcp_up = false;  // ZeroMQ reconnects; CONNECT_RETRIED follows while that fails
    return true;
  }
  if (event != ZMQ_EVENT_CONNECT_RETRIED) return false;
  if (w->connect_failures++ == 0) w->failing_since_ms = now_ms;
  if (!w->probe && now_ms >= w->next_probe_ms && !w->peer_endpoint.empty() &&
      now_ms - w->failing_since_ms >= kFirstProbeAfterMs) {
    // Numeric addresses only: a name would be resolved on this thread, which answers ZAP.
    w->probe = std::make_unique<TcpProbe>(w->peer_endpoint, kProbeTimeout, /*numeric_only=*/true);
    w->next_probe_ms = now_ms + kProbeEveryMs;
  }
  return true;
}

void SecurityGuard::PollProbes() {
  for (const auto& w : watched_) {
    if (!w->probe || !w->probe->Poll()) continue;
    std::lock_guard<std::mutex> lock(trouble_mutex_);
    // Connected: the server is up now, and ZeroMQ's next attempt will find it.
    w->cause = w->probe->connected() ? std::string() : w->probe->failure();
    w->probe.reset();
  }
}

void SecurityGuard::Loop() {
  // The monitor sockets live in this thread only.
  std::vector<zmq::socket_t> monitors;
  try {
    for (const auto& w : watched_) {
      monitors.emplace_back(*context_, zmq::socket_type::pair);
      monitors.back().set(zmq::sockopt::linger, 0);
      // No high-water mark: under a flood of connections a dropped event would leave a
      // descriptor counted as open for ever.
      monitors.back().set(zmq::sockopt::rcvhwm, 0);
      monitors.back().connect(w->endpoint);
    }
  } catch (const zmq::error_t& e) {
    // Without the monitors the allow-list still works (ZAP); only the handshake counts and
    // explanations are lost. A thread must not throw.
    spdlog::warn("CURVE allow-list: cannot watch handshakes: {}", e.what());
    monitors.clear();
  }
  // Item 0 is the ZAP socket (none without CURVE: a null socket, never ready).
  std::vector<zmq::pollitem_t> items;
  items.push_back({zap_.handle(), zap_ ? 0 : -1, static_cast<short>(zap_ ? ZMQ_POLLIN : 0), 0});
  for (auto& m : monitors) items.push_back({m.handle(), 0, ZMQ_POLLIN, 0});
  bool measuring = false;
  for (const auto& w : watched_) measuring = measuring || w->unread_budget > 0;
  const auto poll_ms = std::chrono::milliseconds(measuring ? kUnreadCheckMs : 100);
  int64_t next_check_ms = 0;
  while (!stop_.load()) {
    const int64_t now_ms = NowMs();
    if (measuring && now_ms >= next_check_ms) {
      CheckUnread(now_ms);
      next_check_ms = now_ms + kUnreadCheckMs;
    }
    PollProbes();
    if (!trim_at_ms_.empty() && now_ms >= trim_at_ms_.front()) {
      trim_at_ms_.erase(trim_at_ms_.begin());
      malloc_trim(0);
    }
    try {
      zmq::poll(items.data(), items.size(), poll_ms);
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      if (e.num() == ETERM) break;
      spdlog::error("CURVE allow-list: poll failed: {}", e.what());
      break;
    }
    try {
      // Every pending event first, then ZAP: an ACCEPTED precedes its connection's ZAP request,
      // so that a connection cut at the cap is never admitted meanwhile.
      for (size_t k = 0; k < monitors.size(); ++k) {
        if (!(items[k + 1].revents & ZMQ_POLLIN)) continue;
        for (int n = 0; n < 1000; ++n) {
          zmq::message_t event, address;
          if (!monitors[k].recv(event, zmq::recv_flags::dontwait)) break;
          if (event.more()) (void)monitors[k].recv(address, zmq::recv_flags::dontwait);
          if (event.size() < 6) continue;
          uint16_t id = 0;
          uint32_t value = 0;
          std::memcpy(&id, event.data(), 2);
          std::memcpy(&value, static_cast<const char*>(event.data()) + 2, 4);
          OnEvent(watched_[k].get(), id, value);
        }
      }
      if (items[0].revents & ZMQ_POLLIN) AnswerZap();
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) break;
      if (e.num() != EINTR && e.num() != EAGAIN) {
        spdlog::warn("CURVE allow-list: {}", e.what());
      }
    }
  }
  for (auto& m : monitors) m.close();
  if (zap_) zap_.close();
}

void SecurityGuard::AnswerZap() {
  // Request (RFC 27): version, request id, domain, address, identity, mechanism, credentials.
  std::vector<zmq::message_t> frames;
  for (bool more = true; more && frames.size() < 16;) {
    zmq::message_t frame;
    if (!zap_.recv(frame, zmq::recv_flags::dontwait)) return;
    more = frame.more();
    frames.push_back(std::move(frame));
  }
  std::string status = "400", text = "key not in the allow-list", user_id;
  std::string key_text = "(none)";
  const std::string domain = frames.size() > 2 ? frames[2].to_string() : "";
  std::string address = frames.size() > 3 ? frames[3].to_string() : "?";
  bool listed_elsewhere = false;
  if (frames.size() >= 7 && frames[0].to_string() == "1.0" && frames[5].to_string() == "CURVE" &&
      frames[6].size() == 32) {
    char z85[41] = {};
    zmq_z85_encode(z85, static_cast<const uint8_t*>(frames[6].data()), 32);
    key_text = z85;
    auto list = allowed_.find(domain);
    if (list != allowed_.end() && list->second.count(key_text) != 0) {
      status = "200";
      text = "OK";
      user_id = list->second.at(key_text);
    } else {
      for (const auto& [other_domain, other] : allowed_) {
        auto it = other.find(key_text);
        if (it != other.end()) {
          listed_elsewhere = true;
          user_id = it->second;  // for the log only: not sent
        }
      }
    }
  } else {
    status = "500";
    text = "malformed ZAP request";
  }
  if (status != "200" && listed_elsewhere) {
    text = "key not admitted on this port";
    const uint64_t n = ++not_admitted_;
    if (ShouldLog(n)) {
      spdlog::warn(
          "refused a connection from {} on the {} port: key {} ({}) is listed but not "
          "admitted there: {} ({} so far)",
          address, domain == kPeerDomain ? "peer" : "telemetry", key_text, user_id,
          domain == kPeerDomain ? "only this node's neighbours may connect to it"
                                : "not a role of this port",
          n);
    }
    user_id.clear();
  } else if (status != "200") {
    const uint64_t n = ++unlisted_keys_;
    if (ShouldLog(n)) {
      spdlog::warn("refused a connection from {}: CURVE key {} is not in {} ({} so far)", address,
                   key_text, allow_list_name_, n);
    }
  }
  const std::string request_id = frames.size() > 1 ? frames[1].to_string() : "";
  zap_.send(zmq::str_buffer("1.0"), zmq::send_flags::sndmore);
  zap_.send(zmq::buffer(request_id), zmq::send_flags::sndmore);
  zap_.send(zmq::buffer(status), zmq::send_flags::sndmore);
  zap_.send(zmq::buffer(text), zmq::send_flags::sndmore);
  zap_.send(zmq::buffer(user_id), zmq::send_flags::sndmore);
  zap_.send(zmq::str_buffer(""), zmq::send_flags::none);
}

void SecurityGuard::GiveResult(Watched* w) {
  Accepted* oldest = nullptr;
  for (auto& [fd, a] : w->accepted) {
    if (!a.has_result && !a.cut && (oldest == nullptr || a.order < oldest->order)) oldest = &a;
  }
  if (oldest != nullptr) oldest->has_result = true;
}

void SecurityGuard::OnServerEvent(Watched* w, uint16_t event, uint32_t value) {
  const int fd = static_cast<int>(value);
  if (event == ZMQ_EVENT_ACCEPTED) {
    // A descriptor seen again without its DISCONNECTED (an event lost): the old entry is stale.
    if (w->accepted.erase(fd) != 0) --open_connections_;
    Accepted& a = w->accepted[fd];
    a.order = ++w->accept_serial;
    ++open_connections_;
    if (w->max_connections > 0 && static_cast<int>(w->accepted.size()) > w->max_connections &&
        w->listen_port > 0 && IsAcceptedOn(fd, w->listen_port)) {
      // libzmq owns the descriptor and closes it; shutting it down makes its engine fail now.
      ::shutdown(fd, SHUT_RDWR);
      a.cut = true;
      const uint64_t n = ++over_cap_;
      if (ShouldLog(n)) {
        spdlog::warn("{}: {} connections open, at most {}: shut the newest down ({} so far)",
                     w->who, w->accepted.size() - 1, w->max_connections, n);
      }
      return;
    }
    if (w->unread_budget > 0 && w->listen_port > 0 && IsAcceptedOn(fd, w->listen_port)) {
      StartMeasure(w, fd, &a);
    }
    return;
  }
  if (event == ZMQ_EVENT_DISCONNECTED) {
    auto it = w->accepted.find(fd);
    if (it == w->accepted.end()) return;
    const Accepted a = it->second;
    w->accepted.erase(it);
    --open_connections_;
    if (a.cut || a.has_result) return;
    const uint64_t n = ++no_handshakes_;
    if (ShouldLog(n)) {
      spdlog::warn(
          "{}: a connection ended without a handshake (closed early, idle until the "
          "handshake time-out, or not ZeroMQ) ({} so far)",
          w->who, n);
    }
    return;
  }
  // A handshake result, without a descriptor: it belongs to the oldest connection still waiting
  // for one. NO_DETAIL (closed or timed out during the handshake) is not a result: that
  // connection is counted as no_handshake when it closes.
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) return;
  GiveResult(w);
  if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) ++w->successes;
}

void SecurityGuard::StartMeasure(Watched* w, int fd, Accepted* a) {
  // Deliveries first, then reads: a frame read and delivered between the two samples then
  // counts in neither baseline, never in one only (which would count it as held for ever).
  if (w->ledger != nullptr) w->ledger->SetPeer(fd, -1);  // a new connection: no node seen yet
  const uint64_t delivered = w->ledger != nullptr ? w->ledger->Get(fd).bytes : 0;
  uint64_t read = 0;
  if (!BytesReadByZmq(fd, &read)) return;
  a->measured = true;
  a->base_read = read;
  a->base_delivered = delivered;
  a->base_ms = NowMs();
}

void SecurityGuard::CheckUnread(int64_t now_ms) {
  for (const auto& w : watched_) {
    if (w->unread_budget == 0) continue;
    for (auto& [fd, a] : w->accepted) {
      if (!a.measured || a.cut) continue;
      // The node thread delivers while we sample. Deliveries before and after the reads: the
      // measure uses the later one (it can only under-state what is held), the baselines the
      // earlier one (so that a frame delivered between the samples is never counted as held).
      const uint64_t delivered_before = w->ledger != nullptr ? w->ledger->Get(fd).bytes : 0;
      uint64_t read = 0;
      if (!BytesReadByZmq(fd, &read)) continue;  // closed meanwhile: DISCONNECTED follows
      const ReceiveLedger::Entry delivered =
          w->ledger != nullptr ? w->ledger->Get(fd) : ReceiveLedger::Entry{};
      // Signed: frames of a previous connection on this descriptor, or read before the baseline,
      // can make deliveries overtake reads.
      const int64_t allowance = static_cast<int64_t>(
          kUnreadAllowanceBytes + kUnreadAllowancePerSecond * (now_ms - a.base_ms) / 1000);
      const int64_t unread = static_cast<int64_t>(read - a.base_read) -
                             static_cast<int64_t>(delivered.bytes - a.base_delivered) - allowance;
      if (unread < 0) {
        // Nothing held beyond the allowances: move the baselines up, so that no credit builds.
        a.base_read = read;
        a.base_delivered = delivered_before;
        a.base_ms = now_ms;
        continue;
      }
      if (static_cast<uint64_t>(unread) <= w->unread_budget) continue;
      if (!IsAcceptedOn(fd, w->listen_port)) continue;
      const std::string address = RemoteAddress(fd);
      ::shutdown(fd, SHUT_RDWR);
      a.cut = true;
      const uint64_t n = ++unfinished_;
      if (ShouldLog(n)) {
        spdlog::warn(
            "{}: cut the connection from {}{}: libzmq holds {} bytes read from it that the node "
            "has not received (a multipart message that does not end?), more than the budget of "
            "{} bytes (unfinished_message, {} so far)",
            w->who, address,
            delivered.peer >= 0 ? " (node " + std::to_string(delivered.peer) + ")" : "", unread,
            w->unread_budget, n);
      }
      trim_at_ms_.clear();
      for (int64_t delay : kTrimDelaysMs) trim_at_ms_.push_back(now_ms + delay);
    }
  }
}

void SecurityGuard::OnEvent(Watched* w, uint16_t event, uint32_t value) {
  if (w->peer >= 0 && OnClientConnection(w, event, NowMs())) return;
  if (w->peer < 0) {
    OnServerEvent(w, event, value);
    if (event == ZMQ_EVENT_ACCEPTED || event == ZMQ_EVENT_DISCONNECTED ||
        event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED || event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) {
      return;
    }
  }
  if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
    if (w->peer >= 0 && w->failures.load() > 0 && w->successes.load() == 0) {
      spdlog::info("CURVE handshake with {} succeeded", w->who);
    }
    ++w->successes;
    return;
  }
  const bool mismatch = event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL &&
                        value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH;
  if (w->peer < 0) {
    // Server side. Refused keys were counted by the ZAP handler.
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) return;
    const uint64_t n = ++failed_handshakes_;
    if (ShouldLog(n)) {
      const char* why =
          !zap_      ? "the peer uses another security mechanism or sent a corrupt handshake"
          : mismatch ? "the peer does not use CURVE (plaintext)"
                     : "the peer expects another server key or sent a corrupt handshake";
      spdlog::warn("{}: a connection failed the {} handshake: {} ({} so far)", w->who,
                   zap_ ? "CURVE" : "ZeroMQ", why, n);
    }
    return;
  }
  ++w->failures;
  const int64_t now = NowMs();
  if (now - w->last_logged_ms < kClientLogPeriodMs) return;
  w->last_logged_ms = now;
  std::string why;
  if (!zap_) {
    why = mismatch ? "it uses CURVE (this node runs with --allow-plaintext)"
                   : "it sent a corrupt handshake";
  } else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
    // "the cluster file" -> "its cluster file".
    const bool the = allow_list_name_.rfind("the ", 0) == 0;
    why = "it refused our key: this node's public key is not in " +
          (the ? "its " + allow_list_name_.substr(4) : allow_list_name_);
  } else if (mismatch) {
    why = "it does not use CURVE (started with --allow-plaintext?)";
  } else {
    why = "the public key listed for it in " + allow_list_name_ +
          " does not belong to its secret key";
  }
  spdlog::error("{} handshake with {} failed ({} times): {}", zap_ ? "CURVE" : "ZeroMQ", w->who,
                w->failures.load(), why);
}

}  // namespace starling::net
