#include "node/probe/prometheus_exporter.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace starling::node {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxAcceptsPerWake = 64;  // so that a flood of connects cannot starve the others
constexpr int kMaxPollWaitMs = 1000;
// After accept fails for want of a descriptor (EMFILE, ENFILE, ENOBUFS, ENOMEM), the listening
// socket stays readable: without a pause, poll would return at once and the thread spin.
constexpr int kAcceptPauseMs = kPrometheusAcceptPauseMs;
constexpr size_t kReadChunk = 4096;

std::string ErrnoText(int err) { return std::strerror(err); }

void CloseFd(int* fd) {
  if (*fd >= 0) ::close(*fd);
  *fd = -1;
}

std::string Response(int code, const char* reason, const std::string& content_type,
                     const std::string& body, const char* extra_headers = "") {
  return "HTTP/1.0 " + std::to_string(code) + " " + reason + "\r\nContent-Type: " + content_type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra_headers +
         "Connection: close\r\n\r\n" + body;
}

std::string Plain(int code, const char* reason, const char* extra_headers = "") {
  return Response(code, reason, "text/plain; charset=utf-8", std::string(reason) + "\n",
                  extra_headers);
}

bool IsPrintableAscii(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char ch) { return ch >= 0x20 && ch <= 0x7e; });
}

// The end of the headers ("\r\n\r\n", or "\n\n" from lenient clients), searched from `from`.
bool HasHeaderEnd(const std::string& in, size_t from) {
  return in.find("\r\n\r\n", from) != std::string::npos ||
         in.find("\n\n", from) != std::string::npos;
}

}  // namespace

struct PrometheusExporter::Connection {
  enum class State { kReading, kWriting, kDraining };
  int fd = -1;
  Clock::time_point deadline;
  State state = State::kReading;
  std::string in, out;
  size_t sent = 0;
};

PrometheusExporter::PrometheusExporter(const PrometheusExporterOptions& options)
    : options_(options) {
  if (options_.port < 0 || options_.port > 65535) {
    throw std::invalid_argument("--prometheus-port " + std::to_string(options_.port) +
                                ": must be in 1..65535");
  }
  sockaddr_storage address{};
  socklen_t address_size = 0;
  const bool v6 = options_.bind_address.find(':') != std::string::npos;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&address);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(options_.port));
    if (::inet_pton(AF_INET6, options_.bind_address.c_str(), &a->sin6_addr) == 1) {
      address_size = sizeof(sockaddr_in6);
    }
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&address);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(options_.port));
    if (::inet_pton(AF_INET, options_.bind_address.c_str(), &a->sin_addr) == 1) {
      address_size = sizeof(sockaddr_in);
    }
  }
  if (address_size == 0) {
    throw std::invalid_argument("--prometheus-bind '" + options_.bind_address +
                                "': not a numeric IPv4 or IPv6 address");
  }
  const std::string where =
      "cannot listen on " + endpoint() + " (--prometheus-bind, " + "--prometheus-port): ";
  listen_fd_ = ::socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error(where + ErrnoText(errno));
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (v6) ::setsockopt(listen_fd_, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), address_size) != 0 ||
      ::listen(listen_fd_, 16) != 0) {
    const int err = errno;
    CloseFd(&listen_fd_);
    throw std::runtime_error(where + ErrnoText(err));
  }
  sockaddr_storage bound{};
  socklen_t bound_size = sizeof bound;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &bound_size);
  port_ = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                   : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  int wake[2];
  if (::pipe2(wake, O_NONBLOCK | O_CLOEXEC) != 0) {
    const int err = errno;
    CloseFd(&listen_fd_);
    throw std::runtime_error("prometheus exporter: pipe: " + ErrnoText(err));
  }
  wake_read_ = wake[0];
  wake_write_ = wake[1];
  thread_ = std::thread([this] { Serve(); });
}

PrometheusExporter::~PrometheusExporter() { Stop(); }

std::string PrometheusExporter::endpoint() const {
  const std::string port = std::to_string(port_ ? port_ : options_.port);
  return options_.bind_address.find(':') != std::string::npos
             ? "[" + options_.bind_address + "]:" + port
             : options_.bind_address + ":" + port;
}

void PrometheusExporter::Update(const NetworkFigures& figures) {
  std::lock_guard<std::mutex> lock(mutex_);
  figures_ = figures;
}

PrometheusExporterStats PrometheusExporter::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void PrometheusExporter::Stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  const char byte = 1;
  (void)!::write(wake_write_, &byte, 1);
  thread_.join();
  CloseFd(&listen_fd_);
  CloseFd(&wake_read_);
  CloseFd(&wake_write_);
}

void PrometheusExporter::Serve() {
  std::vector<Connection> connections;
  std::vector<pollfd> fds;
  Clock::time_point accept_paused_until;
  while (!stopping_) {
    const bool paused = Clock::now() < accept_paused_until;
    fds.assign({{wake_read_, POLLIN, 0}, {listen_fd_, static_cast<short>(paused ? 0 : POLLIN), 0}});
    Clock::time_point next = Clock::now() + std::chrono::milliseconds(kMaxPollWaitMs);
    if (paused) next = std::min(next, accept_paused_until);
    for (const Connection& c : connections) {
      fds.push_back(
          {c.fd, static_cast<short>(c.state == Connection::State::kWriting ? POLLOUT : POLLIN), 0});
      next = std::min(next, c.deadline);
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now());
    const int ready =
        ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(0, wait.count() + 1)));
    if (ready < 0 && errno != EINTR) break;
    if (stopping_ || (fds[0].revents & POLLIN)) break;
    const Clock::time_point now = Clock::now();
    for (size_t i = 0; i < connections.size(); ++i) {
      Connection& c = connections[i];
      const short revents = fds[i + 2].revents;
      if (c.state == Connection::State::kReading && revents) {
        ReadRequest(&c);
      } else if (c.state == Connection::State::kWriting && revents) {
        const ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
        if (n > 0) c.sent += static_cast<size_t>(n);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          CloseFd(&c.fd);
        } else if (c.sent == c.out.size()) {
          // Half-close and read what the client still sends until it closes: closing with
          // unread input would reset the connection and could destroy the answer in flight.
          ::shutdown(c.fd, SHUT_WR);
          c.state = Connection::State::kDraining;
        }
      } else if (c.state == Connection::State::kDraining && revents) {
        char sink[kReadChunk];
        const ssize_t n = ::recv(c.fd, sink, sizeof sink, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          CloseFd(&c.fd);
        }
      }
      if (c.fd >= 0 && now >= c.deadline) {
        if (c.state != Connection::State::kDraining) {
          std::lock_guard<std::mutex> lock(mutex_);
          ++stats_.timed_out;
        }
        CloseFd(&c.fd);
      }
    }
    connections.erase(std::remove_if(connections.begin(), connections.end(),
                                     [](const Connection& c) { return c.fd < 0; }),
                      connections.end());
    if ((fds[1].revents & POLLIN) && !Accept(&connections)) {
      accept_paused_until = Clock::now() + std::chrono::milliseconds(kAcceptPauseMs);
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.accept_shortages;
    }
  }
  for (Connection& c : connections) CloseFd(&c.fd);
}

bool PrometheusExporter::Accept(std::vector<Connection>* connections) {
  for (int k = 0; k < kMaxAcceptsPerWake; ++k) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // None left, or one that went away before its accept; anything else is a shortage.
      return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED ||
             errno == EPROTO;
    }
    if (static_cast<int>(connections->size()) >= options_.max_connections) {
      {
        // Counted before the close, so that a client that sees its connection closed also sees
        // it counted (a test read 0 once, between the close and the count).
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.busy;
      }
      ::close(fd);
      continue;
    }
    Connection c;
    c.fd = fd;
    c.deadline = Clock::now() + std::chrono::milliseconds(options_.connection_deadline_ms);
    connections->push_back(std::move(c));
  }
  return true;
}

void PrometheusExporter::ReadRequest(Connection* c) {
  char buf[kReadChunk];
  // One byte more than the cap may hold, to tell "exactly full" from "too long".
  const size_t room = options_.max_request_bytes + 1 - c->in.size();
  const ssize_t n = ::recv(c->fd, buf, std::min(room, sizeof buf), 0);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    CloseFd(&c->fd);  // the client left before its request was whole
    return;
  }
  if (n < 0) return;
  const size_t from = c->in.size() < 3 ? 0 : c->in.size() - 3;
  c->in.append(buf, static_cast<size_t>(n));
  if (c->in.size() > options_.max_request_bytes) {
    c->out = Plain(431, "Request Header Fields Too Large");
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.refused;
  } else if (HasHeaderEnd(c->in, from)) {
    c->out = Answer(c->in);
  } else {
    return;
  }
  c->in.clear();
  c->state = Connection::State::kWriting;
}

std::string PrometheusExporter::Answer(const std::string& request) {
  std::string line = request.substr(0, request.find('\n'));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::string method, target, version;
  bool well_formed = IsPrintableAscii(line);
  if (well_formed) {
    const size_t a = line.find(' '), b = a == std::string::npos ? a : line.find(' ', a + 1);
    well_formed = a != std::string::npos && b != std::string::npos &&
                  line.find(' ', b + 1) == std::string::npos && a > 0 && b > a + 1 &&
                  b + 1 < line.size();
    if (well_formed) {
      method = line.substr(0, a);
      target = line.substr(a + 1, b - a - 1);
      version = line.substr(b + 1);
    }
  }
  well_formed =
      well_formed && (version == "HTTP/1.0" || version == "HTTP/1.1") &&
      std::all_of(method.begin(), method.end(), [](char ch) { return ch >= 'A' && ch <= 'Z'; });
  int code = 200;
  std::string answer;
  if (!well_formed) {
    code = 400;
    answer = Plain(400, "Bad Request");
  } else if (method != "GET") {
    code = 405;
    answer = Plain(405, "Method Not Allowed", "Allow: GET\r\n");
  } else if (target.substr(0, target.find('?')) != "/metrics") {
    code = 404;
    answer = Plain(404, "Not Found");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (code != 200) {
    ++stats_.refused;
    return answer;
  }
  ++stats_.served;
  return Response(200, "OK", kPrometheusContentType, RenderPrometheusText(figures_));
}

}  // namespace starling::node
