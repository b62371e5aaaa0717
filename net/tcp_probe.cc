#include "net/tcp_probe.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace starling::net {

namespace {

// HOST and PORT of tcp://HOST:PORT (HOST without the brackets of an IPv6 address); false if the
// endpoint is not of that form.
bool SplitTcpEndpoint(const std::string& endpoint, std::string* host, std::string* port) {
  if (endpoint.rfind("tcp://", 0) != 0) return false;
  const std::string address = endpoint.substr(6);
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) return false;
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  return !host->empty();
}

std::string SecondsText(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g", ms.count() / 1000.0);
  return text;
}

}  // namespace

std::string ConnectErrorText(int error) {
  std::string text = std::strerror(error);
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

TcpProbe::TcpProbe(const std::string& endpoint, std::chrono::milliseconds timeout,
                   bool numeric_only)
    : deadline_(std::chrono::steady_clock::now() + timeout), timeout_(timeout) {
  std::string host, port;
  if (!SplitTcpEndpoint(endpoint, &host, &port)) {
    Finish(false, "not a tcp://HOST:PORT endpoint");
    return;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (numeric_only ? AI_NUMERICHOST : 0);
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    Finish(false, numeric_only && rc == EAI_NONAME
                      ? "host name not resolved here"
                      : "cannot resolve '" + host + "': " + ::gai_strerror(rc));
    if (found != nullptr) ::freeaddrinfo(found);
    return;
  }
  fd_ = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    const int error = errno;
    ::freeaddrinfo(found);
    Finish(false, "cannot make a socket: " + ConnectErrorText(error));
    return;
  }
  const int connect_rc = ::connect(fd_, found->ai_addr, found->ai_addrlen);
  const int error = errno;
  ::freeaddrinfo(found);
  if (connect_rc == 0) {
    Finish(true, "");
  } else if (error != EINPROGRESS) {
    Finish(false, ConnectErrorText(error));
  }
}

TcpProbe::~TcpProbe() {
  if (fd_ >= 0) ::close(fd_);
}

void TcpProbe::Finish(bool connected, const std::string& failure) {
  done_ = true;
  connected_ = connected;
  failure_ = failure;
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

bool TcpProbe::Poll() {
  if (done_) return true;
  pollfd item{fd_, POLLOUT, 0};
  if (::poll(&item, 1, 0) > 0) {
    int error = 0;
    socklen_t length = sizeof(error);
    if (::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
    Finish(error == 0, error == 0 ? "" : ConnectErrorText(error));
  } else if (std::chrono::steady_clock::now() >= deadline_) {
    Finish(false, "no answer within " + SecondsText(timeout_) + " s");
  }
  return done_;
}

void TcpProbe::Wait() {
  while (!Poll()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline_ - std::chrono::steady_clock::now());
    pollfd item{fd_, POLLOUT, 0};
    ::poll(&item, 1, static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(left.count(), 100))));
  }
}

}  // namespace starling::net
