#include "net/security.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

#include "net/endpoint.h"

namespace starling::net {

namespace {

constexpr char kZapEndpoint[] = "inproc://zeromq.zap.01";
constexpr char kZapDomain[] = "starling";
constexpr int kHandshakeEvents = ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
                                 ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                 ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                 ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
// A client whose handshakes keep failing is told so at most this often (it retries every
// reconnect interval).
constexpr int64_t kClientLogPeriodMs = 5000;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool ShouldLog(uint64_t count) { return count <= 5 || count % 1000 == 0; }

std::atomic<uint64_t> g_monitor_serial{0};

}  // namespace

std::string UserIdForNode(int32_t id) { return RoutingIdFor(id); }

void MakeCurveServer(zmq::socket_t* socket, const CurveOptions& curve) {
  socket->set(zmq::sockopt::curve_server, 1);
  socket->set(zmq::sockopt::curve_secretkey, curve.secret_key);
  socket->set(zmq::sockopt::zap_domain, kZapDomain);
}

void MakeCurveClient(zmq::socket_t* socket, const CurveOptions& curve,
                     const std::string& server_public_key) {
  socket->set(zmq::sockopt::curve_serverkey, server_public_key);
  socket->set(zmq::sockopt::curve_publickey, curve.public_key);
  socket->set(zmq::sockopt::curve_secretkey, curve.secret_key);
}

SecurityGuard::SecurityGuard(zmq::context_t* context, std::map<std::string, std::string> allowed)
    : context_(context), zap_(*context, zmq::socket_type::rep), allowed_(std::move(allowed)) {
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

void SecurityGuard::Watch(zmq::socket_t* socket, int32_t peer, const std::string& who) {
  auto watched = std::make_unique<Watched>();
  watched->endpoint = "inproc://starling-handshakes-" + std::to_string(++g_monitor_serial);
  watched->peer = peer;
  watched->who = who;
  if (zmq_socket_monitor(socket->handle(), watched->endpoint.c_str(), kHandshakeEvents) != 0) {
    throw std::runtime_error("cannot watch the handshakes of " + who + ": " +
                             zmq_strerror(zmq_errno()));
  }
  watched_.push_back(std::move(watched));
}

void SecurityGuard::Start() { thread_ = std::thread([this] { Loop(); }); }

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

void SecurityGuard::Loop() {
  // The monitor sockets live in this thread only.
  std::vector<zmq::socket_t> monitors;
  try {
    for (const auto& w : watched_) {
      monitors.emplace_back(*context_, zmq::socket_type::pair);
      monitors.back().set(zmq::sockopt::linger, 0);
      monitors.back().connect(w->endpoint);
    }
  } catch (const zmq::error_t& e) {
    // Without the monitors the allow-list still works (ZAP); only the handshake counts and
    // explanations are lost. A thread must not throw.
    spdlog::warn("CURVE allow-list: cannot watch handshakes: {}", e.what());
    monitors.clear();
  }
  std::vector<zmq::pollitem_t> items;
  items.push_back({zap_.handle(), 0, ZMQ_POLLIN, 0});
  for (auto& m : monitors) items.push_back({m.handle(), 0, ZMQ_POLLIN, 0});
  while (!stop_.load()) {
    try {
      zmq::poll(items.data(), items.size(), std::chrono::milliseconds(100));
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      if (e.num() == ETERM) break;
      spdlog::error("CURVE allow-list: poll failed: {}", e.what());
      break;
    }
    try {
      if (items[0].revents & ZMQ_POLLIN) AnswerZap();
      for (size_t k = 0; k < monitors.size(); ++k) {
        if (!(items[k + 1].revents & ZMQ_POLLIN)) continue;
        zmq::message_t event, address;
        if (!monitors[k].recv(event, zmq::recv_flags::dontwait)) continue;
        if (event.more()) (void)monitors[k].recv(address, zmq::recv_flags::dontwait);
        if (event.size() < 6) continue;
        uint16_t id = 0;
        uint32_t value = 0;
        std::memcpy(&id, event.data(), 2);
        std::memcpy(&value, static_cast<const char*>(event.data()) + 2, 4);
        OnEvent(watched_[k].get(), id, value);
      }
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) break;
      if (e.num() != EINTR && e.num() != EAGAIN) {
        spdlog::warn("CURVE allow-list: {}", e.what());
      }
    }
  }
  for (auto& m : monitors) m.close();
  zap_.close();
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
  std::string status = "400", text = "key not in the cluster file", user_id;
  std::string key_text = "(none)";
  std::string address = frames.size() > 3 ? frames[3].to_string() : "?";
  if (frames.size() >= 7 && frames[0].to_string() == "1.0" &&
      frames[5].to_string() == "CURVE" && frames[6].size() == 32) {
    char z85[41] = {};
    zmq_z85_encode(z85, static_cast<const uint8_t*>(frames[6].data()), 32);
    key_text = z85;
    auto it = allowed_.find(key_text);
    if (it != allowed_.end()) {
      status = "200";
      text = "OK";
      user_id = it->second;
    }
  } else {
    status = "500";
    text = "malformed ZAP request";
  }
  if (status != "200") {
    const uint64_t n = ++unlisted_keys_;
    if (ShouldLog(n)) {
      spdlog::warn("refused a connection from {}: CURVE key {} is not in the cluster file ({} so "
                   "far)",
                   address, key_text, n);
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

void SecurityGuard::OnEvent(Watched* w, uint16_t event, uint32_t value) {
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
      spdlog::warn("{}: a connection failed the CURVE handshake: {} ({} so far)", w->who,
                   mismatch ? "the peer does not use CURVE (plaintext)"
                            : "the peer expects another server key or sent a corrupt handshake",
                   n);
    }
    return;
  }
  ++w->failures;
  const int64_t now = NowMs();
  if (now - w->last_logged_ms < kClientLogPeriodMs) return;
  w->last_logged_ms = now;
  std::string why;
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
    why = "it refused our key: this node's public key is not in its cluster file";
  } else if (mismatch) {
    why = "it does not use CURVE (started with --allow-plaintext?)";
  } else {
    why = "the public key listed for it in the cluster file does not belong to its secret key";
  }
  spdlog::error("CURVE handshake with {} failed ({} times): {}", w->who, w->failures.load(), why);
}

}  // namespace starling::net
