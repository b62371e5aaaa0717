// Large models (docs/results/large-models.md): a message that takes longer to cross
// than libzmq's ZMTP heartbeat time-out. libzmq decodes a message only once it is whole and
// sends its PONG only after the message it is sending, so with the former fixed 5 s time-out a
// receiver cut every connection carrying a message that took longer than about 5 s (80 MB at
// d = 1e7 between loaded daemons), the message was lost, and no exchange completed. The
// time-out now follows the largest message a neighbour may send (ZmtpHeartbeatTimeoutMs), and an
// exchange offer's time-out follows the size of its vectors (ExchangeTiming::ReplyTimeoutMs).
//
// The real-socket test slows the link instead of loading the machine: a proxy between one
// transport's DEALER and the other's ROUTER forwards the DEALER's bytes at 2 MiB/s, so that one
// 16 MiB message takes about 8 s to cross on any machine (longer under load, never shorter).
//
// HEARTBEATs queued behind a large message (net/transport.h, SlowestTransferMs): at d = 1e7 they
// filled the DEALER's queue while an 80 MB message crossed, and exchange messages were refused.
// The test holds a 16 MiB message in a paused proxy for most of the time it may take at the
// slowest assumed rate (2 s at 8 MiB/s) with 100 ms heartbeats: before the rule, a HEARTBEAT was
// queued every 100 ms behind it.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "net/codec.h"
#include "net/envelope.h"
#include "net/payload.h"
#include "net/transport.h"
#include "node/drivers/exchange_driver.h"

namespace starling {
namespace {

using Clock = std::chrono::steady_clock;

TEST(LargeMessageTimeouts, HeartbeatTimeOutCoversTheLargestMessageAtTheSlowestRate) {
  // Small models keep the 5 s of before (plus at most a rounding millisecond).
  const int small = net::ZmtpHeartbeatTimeoutMs(net::LimitsForRun(8, 4));
  EXPECT_GE(small, 5000);
  EXPECT_LE(small, 5001);
  // d = 1e7: a dense message is 80 MB; the time-out must let it cross at 2 MB/s (40 s), and
  // is bounded (a dead peer is still noticed within minutes, not never).
  const int large = net::ZmtpHeartbeatTimeoutMs(net::LimitsForRun(10000000, 4));
  EXPECT_GE(large, 5000 + 40000);
  EXPECT_LE(large, 5 * 60 * 1000);
  // Growing with the dimension.
  EXPECT_LT(net::ZmtpHeartbeatTimeoutMs(net::LimitsForRun(1000000, 4)), large);
  EXPECT_GT(net::ZmtpHeartbeatTimeoutMs(net::LimitsForRun(1000000, 4)), small);
}

TEST(LargeMessageTimeouts, HeartbeatsAreHeldForTheMessageAtTheSlowestRate) {
  // 8 MiB/s: 16 MiB take 2 s, 80 MB 9.54 s; below 1 ms (small models) nothing is held.
  EXPECT_EQ(net::SlowestTransferMs(16u << 20), 2000);
  EXPECT_EQ(net::SlowestTransferMs(80000000), 9536);
  EXPECT_EQ(net::SlowestTransferMs(8388), 0);
  EXPECT_EQ(net::SlowestTransferMs(8389), 1);
  EXPECT_EQ(net::SlowestTransferMs(0), 0);
  EXPECT_EQ(net::SlowestTransferMs(uint64_t{1} << 40), int64_t{131072} * 1000);  // 2^40 / 2^23 s
}

TEST(LargeMessageTimeouts, OfferTimeOutAddsBothMessagesAtTheSlowestRate) {
  node::ExchangeTiming timing;
  timing.reply_timeout_ms = 2000;
  timing.slowest_bytes_per_second = 1000000;  // 1 MB/s: 1 ms per KB
  EXPECT_EQ(timing.ReplyTimeoutMs(0), 2000);
  EXPECT_EQ(timing.ReplyTimeoutMs(8000), 2000 + 16);          // 2 x 8 KB
  EXPECT_EQ(timing.ReplyTimeoutMs(80000000), 2000 + 160000);  // 2 x 80 MB
  EXPECT_EQ(timing.ReplyTimeoutMs(499), 2000);                // rounded down
  node::ExchangeTiming defaults;
  EXPECT_EQ(defaults.ReplyTimeoutMs(8 * 123), defaults.reply_timeout_ms) << "a9a's d: unchanged";
  // d = 1e7: both 80 MB messages at 8 MiB/s, 2 x 9.5 s.
  EXPECT_GE(defaults.ReplyTimeoutMs(80000000), defaults.reply_timeout_ms + 19000);
  EXPECT_LE(defaults.ReplyTimeoutMs(80000000), defaults.reply_timeout_ms + 20000);
}

// A TCP proxy on 127.0.0.1 that forwards each accepted connection to `target_port`, the
// client's bytes at most `rate` bytes/s, the server's as they come. Small kernel buffers on its
// sockets, so that the client's bytes wait in the client, not in the proxy. A connection closed
// on either side is closed on the other; a new one is forwarded as the first.
class SlowProxy {
 public:
  SlowProxy(int target_port, double rate) : target_port_(target_port), rate_(rate) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    int small = 64 << 10;
    ::setsockopt(listener_, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        ::listen(listener_, 8) != 0) {
      throw std::runtime_error("proxy: cannot listen");
    }
    socklen_t len = sizeof(a);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~SlowProxy() {
    stop_.store(true);
    thread_.join();
    for (auto& c : connections_) CloseBoth(&c);
    ::close(listener_);
  }
  int port() const { return port_; }
  int accepted() const { return accepted_.load(); }
  // While paused, no byte of the client's is forwarded (the server's still are).
  void Pause(bool paused) { paused_.store(paused); }

 private:
  struct Connection {
    int client = -1, server = -1;
    Clock::time_point start;
    double forwarded = 0;  // client bytes forwarded
  };
  static void CloseBoth(Connection* c) {
    if (c->client >= 0) ::close(c->client);
    if (c->server >= 0) ::close(c->server);
    c->client = c->server = -1;
  }
  static bool WriteAll(int fd, const char* data, size_t size) {
    while (size > 0) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, 1000) <= 0) continue;  // the peer reads slowly: keep trying
      const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
      if (n <= 0) return false;
      data += n;
      size -= static_cast<size_t>(n);
    }
    return true;
  }
  void Accept() {
    const int client = ::accept(listener_, nullptr, nullptr);
    if (client < 0) return;
    const int server = ::socket(AF_INET, SOCK_STREAM, 0);
    int small = 64 << 10;
    ::setsockopt(server, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(target_port_));
    if (::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      ::close(client);
      ::close(server);
      return;
    }
    ++accepted_;
    connections_.push_back({client, server, Clock::now(), 0});
  }
  void Loop() {
    std::vector<char> buffer(64 << 10);
    while (!stop_.load()) {
      // The client's bytes are read only as far as the rate allows by now (in pieces of at most
      // the buffer); until then its descriptor is not polled for input, and the 10 ms poll
      // paces the loop.
      const Clock::time_point now = Clock::now();
      std::vector<size_t> allowed;
      std::vector<pollfd> fds{{listener_, POLLIN, 0}};
      for (Connection& c : connections_) {
        const double elapsed = std::chrono::duration<double>(now - c.start).count();
        allowed.push_back(static_cast<size_t>(
            std::clamp<double>(rate_ * elapsed - c.forwarded, 0, buffer.size())));
        const bool read = !paused_.load() && allowed.back() >= 4096;
        fds.push_back({c.client, static_cast<short>(read ? POLLIN : 0), 0});
        fds.push_back({c.server, POLLIN, 0});
      }
      ::poll(fds.data(), fds.size(), 10);
      const size_t polled = connections_.size();
      if (fds[0].revents & POLLIN) Accept();
      for (size_t k = 0; k < polled; ++k) {
        Connection& c = connections_[k];
        bool ok = true;
        if (fds[2 * k + 1].revents & (POLLIN | POLLHUP | POLLERR)) {
          const ssize_t n = ::recv(c.client, buffer.data(), std::max<size_t>(allowed[k], 1), 0);
          ok = n > 0 && WriteAll(c.server, buffer.data(), static_cast<size_t>(n));
          if (n > 0) c.forwarded += n;
        }
        if (ok && (fds[2 * k + 2].revents & (POLLIN | POLLHUP | POLLERR))) {
          const ssize_t n = ::recv(c.server, buffer.data(), buffer.size(), 0);
          ok = n > 0 && WriteAll(c.client, buffer.data(), static_cast<size_t>(n));
        }
        if (!ok) CloseBoth(&c);
      }
      connections_.erase(std::remove_if(connections_.begin(), connections_.end(),
                                        [](const Connection& c) { return c.client < 0; }),
                         connections_.end());
    }
  }

  int target_port_;
  double rate_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false}, paused_{false};
  std::atomic<int> accepted_{0};
  std::vector<Connection> connections_;  // proxy thread only
  std::thread thread_;
};

// A free TCP port on 127.0.0.1 (bound and released; the transport binds it right after).
int FreePort() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  ::close(s);
  return port;
}

net::TransportOptions OptionsFor(int32_t self, int own_port, const std::string& peer_endpoint,
                                 uint32_t dim,
                                 std::chrono::milliseconds heartbeat = std::chrono::seconds(1)) {
  net::TransportOptions o;
  o.self_id = self;
  o.bind_endpoint = "tcp://127.0.0.1:" + std::to_string(own_port);
  o.peers = {{1 - self, peer_endpoint}};
  o.run_id = net::RunIdOf("large-message-test");
  o.dim = dim;
  o.limits = net::LimitsForRun(dim, 4);
  o.heartbeat_interval = heartbeat;
  return o;
}

net::Envelope RequestOf(const std::shared_ptr<std::vector<double>>& values, uint64_t seq) {
  net::Envelope request;
  request.type = net::MessageType::kXchgReq;
  request.exchange_seq = seq;
  request.payloads = {net::Float64Payload(values->data(), values->size())};
  return request;
}

// One 16 MiB message (d = 2^21) over a link of 2 MiB/s takes about 8 s: longer than the former
// fixed 5 s heartbeat time-out (with it, the receiver cut the connection mid-message and the
// message never arrived), shorter than the time-out for this d (5 s + 96 MiB at 8 MiB/s = 17 s).
TEST(LargeMessage, ArrivesWhenCrossingTakesLongerThanFiveSeconds) {
  constexpr uint32_t kDim = 1u << 21;
  constexpr double kRate = 2.0 * (1 << 20);
  const int port0 = FreePort(), port1 = FreePort();
  zmq::context_t context0(1), context1(1);
  // Node 1's ROUTER listens on port1; node 0 reaches it only through the proxy.
  net::Transport receiver(&context1,
                          OptionsFor(1, port1, "tcp://127.0.0.1:" + std::to_string(port0), kDim));
  SlowProxy proxy(port1, kRate);
  net::Transport sender(
      &context0, OptionsFor(0, port0, "tcp://127.0.0.1:" + std::to_string(proxy.port()), kDim));

  auto values = std::make_shared<std::vector<double>>(kDim);
  for (uint32_t k = 0; k < kDim; ++k) (*values)[k] = 0.5 + k % 1000;
  net::Envelope request;
  request.type = net::MessageType::kXchgReq;
  request.exchange_seq = 7;
  request.payloads = {net::Float64Payload(values->data(), kDim)};
  ASSERT_TRUE(sender.Send(1, request, values));
  const Clock::time_point sent = Clock::now();

  bool received = false;
  double received_after_s = 0;
  std::vector<double> got;
  const Clock::time_point deadline = sent + std::chrono::seconds(60);
  while (!received && Clock::now() < deadline) {
    receiver.Poll(std::chrono::milliseconds(20), [&](int32_t peer, const net::Envelope& e) {
      if (peer != 0 || e.type != net::MessageType::kXchgReq || e.exchange_seq != 7) return;
      net::Reject reject;
      ASSERT_EQ(e.payloads.size(), 1u);
      ASSERT_TRUE(net::PayloadToDoubles(e.payloads[0], &got, &reject)) << reject.detail;
      received = true;
      received_after_s = std::chrono::duration<double>(Clock::now() - sent).count();
    });
    sender.Poll(std::chrono::milliseconds(0), [](int32_t, const net::Envelope&) {});
    receiver.Tick();
    sender.Tick();
  }
  ASSERT_TRUE(received) << "the 16 MiB message never arrived in 60 s; proxy connections "
                        << proxy.accepted() << " (more than 1: the connection was cut)";
  EXPECT_EQ(got, *values);
  // The slow link did slow it: otherwise this test would not test the time-out.
  EXPECT_GE(received_after_s, 6.0) << "crossed faster than the former 5 s time-out";
  EXPECT_EQ(proxy.accepted(), 1) << "the connection was cut and reopened";
  std::printf("16 MiB crossed in %.1f s over a 2 MiB/s link\n", received_after_s);
}

// Two 16 MiB messages sent together may take 2 s each to leave at the slowest assumed rate
// (8 MiB/s): no HEARTBEAT is queued behind them for 2 s + the interval (the later message's own
// time, not the sum), and a BUSY sent 1.8 s after them still finds room in the queue (16
// messages). Before, with 100 ms heartbeats, one was queued per Tick from 100 ms on and the queue
// was full well before 1.8 s. Once the messages have crossed the HEARTBEATs resume, and the
// receiver takes the sender for alive until 2 s + 2 intervals after the first arrived
// (heard_hold_until). The proxy is paused rather than slow, so that the test holds under load:
// the rule counts the sender's time since the send, whatever the link does.
TEST(LargeMessage, NoHeartbeatQueuesBehindItWhileItMayStillBeLeaving) {
  constexpr uint32_t kDim = 1u << 21;
  constexpr auto kHeartbeat = std::chrono::milliseconds(100);
  const auto kSlowest = std::chrono::milliseconds(2000);  // 16 MiB at 8 MiB/s
  const int port0 = FreePort(), port1 = FreePort();
  zmq::context_t context0(1), context1(1);
  net::Transport receiver(
      &context1,
      OptionsFor(1, port1, "tcp://127.0.0.1:" + std::to_string(port0), kDim, kHeartbeat));
  SlowProxy proxy(port1, 1e12);  // not throttled; paused below
  net::Transport sender(
      &context0,
      OptionsFor(0, port0, "tcp://127.0.0.1:" + std::to_string(proxy.port()), kDim, kHeartbeat));
  bool received = false;
  std::vector<uint64_t> seqs_received;
  Clock::time_point poll_began;  // before the receiver's Poll that delivered the request
  const auto turn = [&] {
    sender.Poll(std::chrono::milliseconds(5), [](int32_t, const net::Envelope&) {});
    const Clock::time_point began = Clock::now();
    receiver.Poll(std::chrono::milliseconds(5), [&](int32_t peer, const net::Envelope& e) {
      if (peer != 0 || e.type != net::MessageType::kXchgReq) return;
      if (!received) poll_began = began;
      received = true;
      seqs_received.push_back(e.exchange_seq);
    });
    sender.Tick();
    receiver.Tick();
  };
  // Both greetings answered, through the proxy and back.
  const auto met = [&] {
    return sender.peer(1).accepted_us && sender.peer(1).greeted_us &&
           receiver.peer(0).accepted_us && receiver.peer(0).greeted_us;
  };
  for (const auto until = Clock::now() + std::chrono::seconds(30);
       !met() && Clock::now() < until;) {
    turn();
  }
  ASSERT_TRUE(met()) << "the transports did not greet each other in 30 s";

  proxy.Pause(true);
  auto values = std::make_shared<std::vector<double>>(kDim, 0.25);
  const uint64_t beats_before = sender.peer(1).heartbeats_sent;
  const Clock::time_point sent = Clock::now();  // no later than the Send's own clock
  ASSERT_TRUE(sender.Send(1, RequestOf(values, 7), values));
  // A second one right behind it: the hold is the later message's own 2 s, not the sum (a sum
  // would run ahead of the clock whenever the link is faster than the assumed rate).
  ASSERT_TRUE(sender.Send(1, RequestOf(values, 8), values));
  EXPECT_LE(sender.peer(1).beat_hold_until, Clock::now() + kSlowest);
  // The receiver's HEARTBEATs keep coming (its link is not paused): the sender's loop runs.
  const Clock::time_point quiet_until = sent + kSlowest - std::chrono::milliseconds(200);
  int turns = 0;
  for (; Clock::now() < quiet_until; ++turns) turn();
  EXPECT_EQ(sender.peer(1).heartbeats_sent, beats_before)
      << "HEARTBEATs queued behind a message that may still be leaving (" << turns
      << " loop turns in 1.8 s)";
  net::Envelope busy;
  busy.type = net::MessageType::kBusy;
  busy.exchange_seq = 9;
  EXPECT_TRUE(sender.Send(1, busy))
      << "the queue is full after " << sender.peer(1).heartbeats_sent - beats_before
      << " HEARTBEATs";
  EXPECT_FALSE(received);

  // Released: the request arrives, then the HEARTBEATs resume, after the hold.
  proxy.Pause(false);
  const uint64_t messages_before = receiver.peer(0).messages_received;
  const auto resumed = [&] {
    return received && sender.peer(1).heartbeats_sent > beats_before &&
           receiver.peer(0).messages_received >= messages_before + 4;  // 2 requests, BUSY, beat
  };
  for (const auto until = Clock::now() + std::chrono::seconds(30);
       !resumed() && Clock::now() < until;) {
    turn();
  }
  ASSERT_TRUE(received) << "the request never arrived";
  EXPECT_EQ(seqs_received, (std::vector<uint64_t>{7, 8}));
  ASSERT_TRUE(resumed()) << "no HEARTBEAT after the request in 30 s";
  EXPECT_GE(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - sent).count(),
            (kSlowest + kHeartbeat).count())
      << "a HEARTBEAT left within the hold";
  EXPECT_EQ(proxy.accepted(), 1) << "the connection was cut and reopened";
  // The receiver counted the request's 2 s from its arrival (or later, after the BUSY and the
  // HEARTBEAT): a neighbour is alive while heard within 2 intervals of that (node_runtime.cc).
  EXPECT_GE(receiver.peer(0).heard_hold_until, poll_began + kSlowest);
}

}  // namespace
}  // namespace starling
