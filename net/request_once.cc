#include "net/request_once.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "net/tcp_probe.h"

namespace starling::net {

namespace {

std::atomic<uint64_t> g_request_serial{0};

// The connection attempt that tells the cause, once ZeroMQ's own has failed.
constexpr std::chrono::milliseconds kProbeTimeout{4000};
constexpr std::chrono::milliseconds kFirstProbeAfter{1000};

// True (and *outcome filled with the cause) if an attempt of our own cannot connect either.
bool NoConnection(const std::string& endpoint, RequestOutcome* outcome) {
  TcpProbe probe(endpoint, kProbeTimeout);
  probe.Wait();
  if (probe.connected()) return false;
  outcome->kind = RequestOutcome::Kind::kNoConnection;
  outcome->detail = probe.failure();
  return true;
}

}  // namespace

RequestOutcome RequestOnce(zmq::context_t* context, const RequestOnceOptions& options,
                           const Envelope& request) {
  RequestOutcome outcome;
  zmq::socket_t dealer(*context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(options.limits.max_message_bytes));
  dealer.set(zmq::sockopt::reconnect_ivl, 100);
  dealer.set(zmq::sockopt::reconnect_ivl_max, 1000);
  if (options.curve) MakeCurveClient(&dealer, *options.curve, options.server_key);
  const std::string monitor_endpoint =
      "inproc://starling-request-" + std::to_string(++g_request_serial);
  const int events = ZMQ_EVENT_CONNECTED | ZMQ_EVENT_CONNECT_RETRIED |
                     ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                     ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL;
  if (zmq_socket_monitor(dealer.handle(), monitor_endpoint.c_str(), events) != 0) {
    throw std::runtime_error(std::string("cannot watch a connection to ") + options.endpoint +
                             ": " + zmq_strerror(zmq_errno()));
  }
  zmq::socket_t monitor(*context, zmq::socket_type::pair);
  monitor.set(zmq::sockopt::linger, 0);
  monitor.connect(monitor_endpoint);
  // libzmq sends monitor events without a time-out, from its I/O thread: an event for a monitor
  // whose reading end is gone would block that thread, and every later handshake of the
  // context with it. So the monitor stops before either socket closes, on every way out.
  struct StopMonitor {
    zmq::socket_t* dealer;
    ~StopMonitor() { zmq_socket_monitor(dealer->handle(), nullptr, 0); }
  } stop_monitor{&dealer};
  try {
    dealer.connect(options.endpoint);
  } catch (const zmq::error_t& e) {
    outcome.kind = RequestOutcome::Kind::kNoConnection;
    outcome.detail = e.what();
    return outcome;
  }
  // Queued until the connection is up (a DEALER holds outgoing messages meanwhile).
  const std::string bytes = Encode(request);
  dealer.send(zmq::buffer(bytes), zmq::send_flags::dontwait);

  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + options.timeout;
  bool connected = false, connect_failed = false, handshaken = false;
  std::string last_reject;
  while (true) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    zmq::pollitem_t items[] = {{dealer.handle(), 0, ZMQ_POLLIN, 0},
                               {monitor.handle(), 0, ZMQ_POLLIN, 0}};
    zmq::poll(items, 2, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now));
    if (items[1].revents & ZMQ_POLLIN) {
      zmq::message_t event, address;
      if (monitor.recv(event, zmq::recv_flags::dontwait)) {
        if (event.more()) (void)monitor.recv(address, zmq::recv_flags::dontwait);
        uint16_t id = 0;
        if (event.size() >= 6) std::memcpy(&id, event.data(), 2);
        if (id == ZMQ_EVENT_CONNECTED) connected = true;
        if (id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) handshaken = true;
        // A failed attempt right at the start is often a server not up yet, whose next attempt
        // succeeds: the probe, which the server would see as a connection that sent nothing, is
        // kept for attempts that still fail a second later.
        if (id == ZMQ_EVENT_CONNECT_RETRIED && !connected &&
            std::chrono::steady_clock::now() - start >= kFirstProbeAfter) {
          connect_failed = true;
        }
        if (id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
          outcome.kind = RequestOutcome::Kind::kKeyRefused;
          outcome.detail = "the server's allow-list refused our key";
          return outcome;
        }
        if (id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ||
            (id == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL && options.curve)) {
          outcome.kind = RequestOutcome::Kind::kHandshakeFailed;
          outcome.detail = options.curve
                               ? "the CURVE handshake failed: the server does not hold the key " +
                                     options.server_key
                               : "the ZeroMQ handshake failed: the server uses another mechanism";
          return outcome;
        }
      }
    }
    // ZeroMQ's attempt failed: one of our own says why (and that the server is still down).
    if (connect_failed && NoConnection(options.endpoint, &outcome)) return outcome;
    connect_failed = false;  // up now: ZeroMQ's next attempt will connect
    if (items[0].revents & ZMQ_POLLIN) {
      zmq::message_t frame;
      if (!dealer.recv(frame, zmq::recv_flags::dontwait)) continue;
      if (frame.more()) {
        // Every answer is one frame; drain the rest of this one and wait for a proper one.
        while (frame.more() && dealer.recv(frame, zmq::recv_flags::dontwait)) {
        }
        last_reject = "an answer of several frames";
        continue;
      }
      Reject reject;
      if (!Decode(static_cast<const char*>(frame.data()), frame.size(), options.limits,
                  &outcome.answer, &reject)) {
        last_reject = std::string(RejectReasonName(reject.reason)) + ": " + reject.detail;
        continue;
      }
      if (outcome.answer.type != options.answer_type) {
        last_reject = std::string("a ") + MessageTypeName(outcome.answer.type) + " message";
        continue;
      }
      outcome.kind = RequestOutcome::Kind::kAnswered;
      return outcome;
    }
  }
  if (!connected && NoConnection(options.endpoint, &outcome)) return outcome;
  outcome.kind = RequestOutcome::Kind::kNoAnswer;
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.3g", options.timeout.count() / 1000.0);
  outcome.detail = std::string("no answer within ") + seconds + " s" +
                   (!last_reject.empty() ? " (refused what came: " + last_reject + ")"
                    : !handshaken        ? " (connected, but the ZeroMQ handshake did not finish)"
                                         : "");
  return outcome;
}

}  // namespace starling::net
