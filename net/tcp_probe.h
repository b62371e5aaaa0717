// One TCP connection attempt that says why it failed. ZeroMQ retries a connection that fails
// and tells no one why (its monitor events carry no errno); messages that name the cause
// ("connection refused", "no route to host", "no answer within 4 s") come from an attempt of our
// own. It never blocks after the constructor: Poll until done(). A connection made is closed at
// once, so the far side sees one connection that sent nothing: make an attempt only when
// ZeroMQ's own has just failed, where it will most likely fail too.
#pragma once

#include <chrono>
#include <string>

namespace starling::net {

class TcpProbe {
 public:
  // Starts connecting to tcp://HOST:PORT (HOST a name, an IPv4 address or [an IPv6 address]).
  // A name is resolved here, which may block for the resolver's time; with numeric_only a name
  // is not resolved and the attempt fails at once ("host name not resolved here").
  TcpProbe(const std::string& endpoint, std::chrono::milliseconds timeout,
           bool numeric_only = false);
  ~TcpProbe();
  TcpProbe(const TcpProbe&) = delete;
  TcpProbe& operator=(const TcpProbe&) = delete;

  // Checks without blocking; true once the attempt has finished.
  bool Poll();
  // Blocks until it has finished (at most the timeout).
  void Wait();
  bool done() const { return done_; }
  bool connected() const { return connected_; }
  // Why it failed, in lower case: "connection refused", "no route to host", "network is
  // unreachable", "no answer within 4 s", "cannot resolve 'name': ...". Empty if connected.
  const std::string& failure() const { return failure_; }

 private:
  void Finish(bool connected, const std::string& failure);

  int fd_ = -1;
  bool done_ = false;
  bool connected_ = false;
  std::string failure_;
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::milliseconds timeout_;
};

// "connection refused" for ECONNREFUSED, and so on: strerror in lower case.
std::string ConnectErrorText(int error);

}  // namespace starling::net
