// A small HTTP/1.0 server that answers `GET /metrics` with the network's figures in the
// Prometheus text format (node/probe/prometheus_text.h), for `starling-probe monitor
// --prometheus-port PORT`.
//
// Every byte from the network is untrusted, and the server is bounded:
//  - at most `max_connections` connections at a time; one more is accepted and closed at once;
//  - a request (request line and headers) of at most `max_request_bytes`; a longer one is
//    answered 431 and closed, without reading it further;
//  - each connection lives at most `connection_deadline_ms` from its accept, reply included;
//  - a request line that is not "METHOD TARGET HTTP/1.x" of printable ASCII is answered 400, a
//    method other than GET 405, a target other than /metrics (a query string allowed) 404.
// It serves from one thread of its own (poll), never blocks on a client, and closes its listening
// socket and every connection in Stop() (and the destructor): the port is closed once that
// returns.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "node/probe/prometheus_text.h"

namespace starling::node {

struct PrometheusExporterOptions {
  std::string bind_address = "127.0.0.1";  // a numeric IPv4 or IPv6 address
  int port = 0;                            // 0: any free port (see port())
  size_t max_request_bytes = 8192;
  int64_t connection_deadline_ms = 5000;
  int max_connections = 4;
};

// What the server did, for tests and the monitor's last line.
struct PrometheusExporterStats {
  int64_t served = 0;     // 200 answers
  int64_t refused = 0;    // 400, 404, 405 and 431 answers
  int64_t busy = 0;       // closed at accept: max_connections were open
  int64_t timed_out = 0;  // closed at the deadline
  // Accepts that failed for want of a descriptor or memory; after each the server stops
  // accepting for kPrometheusAcceptPauseMs rather than spinning on the readable socket.
  int64_t accept_shortages = 0;
};

inline constexpr int kPrometheusAcceptPauseMs = 200;

class PrometheusExporter {
 public:
  // Binds bind_address:port and starts serving (an empty NetworkFigures until Update). Throws
  // std::invalid_argument for an address that is not numeric or a port outside 0..65535, and
  // std::runtime_error "cannot listen on ADDRESS:PORT: reason" if the socket cannot be bound.
  explicit PrometheusExporter(const PrometheusExporterOptions& options);
  ~PrometheusExporter();
  PrometheusExporter(const PrometheusExporter&) = delete;
  PrometheusExporter& operator=(const PrometheusExporter&) = delete;

  // The figures served from now on (thread-safe).
  void Update(const NetworkFigures& figures);
  // The bound port (the chosen one when options.port was 0).
  int port() const { return port_; }
  // "ADDRESS:PORT" ("[ADDRESS]:PORT" for IPv6).
  std::string endpoint() const;
  // Closes every connection and the listening socket, and joins the thread. Idempotent.
  void Stop();
  PrometheusExporterStats stats() const;

 private:
  struct Connection;
  void Serve();
  // Accepts what is pending; false if accept failed for want of resources (the caller pauses).
  bool Accept(std::vector<Connection>* connections);
  // Reads what is there; once the request is whole (or too long), prepares the answer.
  void ReadRequest(Connection* c);
  std::string Answer(const std::string& request);

  const PrometheusExporterOptions options_;
  int listen_fd_ = -1;
  int wake_read_ = -1, wake_write_ = -1;  // Stop() writes a byte to wake the poll
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;  // guards figures_ and stats_
  NetworkFigures figures_;
  PrometheusExporterStats stats_;
};

}  // namespace starling::node
