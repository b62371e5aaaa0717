// starling-bench-shm: the shared-memory ring (net/shm_channel.h) against raw ZeroMQ over TCP and
// against memcpy, measured in the same run. Two threads of one process share the rings' memory
// (a MAP_SHARED mapping, as two processes would) and a raw cppzmq DEALER/ROUTER pair over a TCP
// connection on 127.0.0.1.
//
//   round trip at d: an XCHG_REQ envelope with one float64 payload of d entries goes through
//     ShmSender -> ring -> ShmReceiver (copy out, Decode with every check), and the same envelope
//     comes back the same way; raw: the same number of bytes as one ZeroMQ message, echoed back
//     by the ROUTER without any check. No merges on either side: the transports alone.
//   copy bandwidth at d: one-way messages of d float64 entries through one ring, each decoded
//     with every check by the reader; the payload bytes per second against one memcpy of the
//     same bytes between two buffers.
// Interleaved batches, medians of single operations. One JSON line per measurement on stdout:
//   {"bench":"wire","transport":"shm","dim":d,"shm_us":..,"raw_tcp_us":..,"ratio":..}
//   {"bench":"shm-copy","dim":d,"shm_gbps":..,"memcpy_gbps":..,"ratio":..}
// ratio = raw_tcp_us / shm_us (round trip) and shm_gbps / memcpy_gbps (copy).
// Arguments (optional): [dim] one dimension for both. Every wait has a deadline: on a timeout
// the benchmark exits 1 with a message on stderr.
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "net/codec.h"
#include "net/envelope.h"
#include "net/payload.h"
#include "net/shm_channel.h"
#include "net/shm_ring.h"

namespace {

namespace net = starling::net;
using Clock = std::chrono::steady_clock;
constexpr std::chrono::seconds kDeadline{30};  // one operation on a loaded machine
constexpr int kRounds = 15;

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "starling-bench-shm: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

uint32_t RingCapacityFor(uint64_t bytes) {
  uint64_t capacity = 1 << 12;
  while (capacity < 2 * bytes + 64) capacity *= 2;
  if (capacity > (1ull << 31))
    Fail("a ring for messages of " + std::to_string(bytes) + " bytes would exceed 2 GiB");
  return static_cast<uint32_t>(capacity);
}

// A mapping shared like a segment, holding one ring.
struct Ring {
  Ring(uint32_t capacity, uint32_t max_frame) : bytes(net::ShmRingBytes(capacity)) {
    memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) Fail("cannot map " + std::to_string(bytes) + " bytes");
    net::ShmRing::Format(memory, capacity, max_frame);
    writer = std::make_unique<net::ShmRing>(memory, bytes, capacity, max_frame);
    reader = std::make_unique<net::ShmRing>(memory, bytes, capacity, max_frame);
  }
  ~Ring() { munmap(memory, bytes); }
  size_t bytes;
  void* memory;
  std::unique_ptr<net::ShmRing> writer, reader;
};

net::Envelope Request(const std::vector<double>& x) {
  net::Envelope e;
  e.type = net::MessageType::kXchgReq;
  e.exchange_seq = 1;
  e.payloads = {net::Float64Payload(x.data(), static_cast<uint32_t>(x.size()))};
  return e;
}

void RoundTrip(uint32_t dim) {
  std::vector<double> x(dim, 0.5);
  const net::Envelope request = Request(x);
  const net::DecodeLimits limits = net::LimitsForRun(dim, 1);
  const uint32_t bound = static_cast<uint32_t>(net::ShmMessageBound(limits));
  const uint32_t capacity = RingCapacityFor(bound);
  Ring there(capacity, bound), back(capacity, bound);
  std::atomic<bool> stop{false};
  std::thread echo([&] {
    net::ShmReceiver receiver(there.reader.get(), limits);
    net::ShmSender sender(back.writer.get());
    net::Envelope in;
    net::Reject reject;
    while (!stop.load()) {
      const auto status =
          receiver.Receive(&in, &reject, Clock::now() + std::chrono::milliseconds(50));
      if (status == net::ShmRing::Status::kEmpty) continue;
      if (status != net::ShmRing::Status::kOk) Fail("echo: " + reject.detail);
      if (sender.Send(in, Clock::now() + kDeadline) != net::ShmRing::Status::kOk) {
        Fail("echo: no room in the reply ring within 30 s");
      }
    }
  });
  net::ShmSender sender(there.writer.get());
  net::ShmReceiver receiver(back.reader.get(), limits);
  net::Envelope reply;
  net::Reject reject;
  auto shm = [&] {
    if (sender.Send(request, Clock::now() + kDeadline) != net::ShmRing::Status::kOk) {
      Fail("no room in the request ring within 30 s");
    }
    if (receiver.Receive(&reply, &reject, Clock::now() + kDeadline) != net::ShmRing::Status::kOk) {
      Fail("no reply from the echo thread within 30 s: " + reject.detail);
    }
  };

  const size_t message_bytes = net::Encode(request).size();
  zmq::context_t context(1);
  zmq::socket_t router(context, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.bind("tcp://127.0.0.1:*");
  const std::string endpoint = router.get(zmq::sockopt::last_endpoint);
  std::thread raw_echo([&] {
    router.set(zmq::sockopt::rcvtimeo, 50);
    zmq::message_t id, body;
    while (!stop.load()) {
      if (!router.recv(id)) continue;
      if (!router.recv(body)) Fail("raw echo: body missing");
      router.send(id, zmq::send_flags::sndmore);
      router.send(body, zmq::send_flags::none);
    }
  });
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.set(zmq::sockopt::rcvtimeo, static_cast<int>(kDeadline.count() * 1000));
  dealer.connect(endpoint);
  const std::string bytes(message_bytes, 'q');
  auto raw = [&] {
    dealer.send(zmq::buffer(bytes), zmq::send_flags::none);
    zmq::message_t got;
    if (!dealer.recv(got)) Fail("raw: no reply from " + endpoint + " within 30 s");
  };

  auto batch = [](auto& op, int n, std::vector<double>* samples) {
    for (int i = 0; i < n; ++i) {
      const auto start = Clock::now();
      op();
      if (samples != nullptr) {
        samples->push_back(std::chrono::duration<double>(Clock::now() - start).count());
      }
    }
  };
  batch(shm, 20, nullptr);
  batch(raw, 20, nullptr);
  std::vector<double> t_shm, t_raw;
  const int n = dim <= 10000 ? 200 : 10;
  for (int r = 0; r < kRounds; ++r) {
    batch(raw, n, &t_raw);
    batch(shm, n, &t_shm);
  }
  stop = true;
  echo.join();
  raw_echo.join();
  const double shm_us = Median(t_shm) * 1e6, raw_us = Median(t_raw) * 1e6;
  std::printf(
      "{\"bench\":\"wire\",\"transport\":\"shm\",\"dim\":%u,\"shm_us\":%.2f,"
      "\"raw_tcp_us\":%.2f,\"ratio\":%.2f}\n",
      dim, shm_us, raw_us, raw_us / shm_us);
  std::fflush(stdout);
}

void Copy(uint32_t dim) {
  std::vector<double> x(dim, 0.25);
  const net::Envelope message = Request(x);
  const net::DecodeLimits limits = net::LimitsForRun(dim, 1);
  const uint32_t bound = static_cast<uint32_t>(net::ShmMessageBound(limits));
  Ring ring(RingCapacityFor(bound), bound);
  constexpr int kPerBatch = 4;
  std::atomic<int> received{0};
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    net::ShmReceiver receiver(ring.reader.get(), limits);
    net::Envelope in;
    net::Reject reject;
    while (!stop.load()) {
      const auto status =
          receiver.Receive(&in, &reject, Clock::now() + std::chrono::milliseconds(50));
      if (status == net::ShmRing::Status::kEmpty) continue;
      if (status != net::ShmRing::Status::kOk) Fail("reader: " + reject.detail);
      received.fetch_add(1);
    }
  });
  net::ShmSender sender(ring.writer.get());
  int sent = 0;
  auto shm = [&] {
    for (int i = 0; i < kPerBatch; ++i) {
      if (sender.Send(message, Clock::now() + kDeadline) != net::ShmRing::Status::kOk) {
        Fail("no room in the ring within 30 s");
      }
      ++sent;
    }
    const auto end = Clock::now() + kDeadline;
    while (received.load() != sent) {
      if (Clock::now() > end) Fail("the reader did not take the messages within 30 s");
      std::this_thread::yield();
    }
  };
  std::vector<double> target(dim);
  auto copy = [&] {
    for (int i = 0; i < kPerBatch; ++i) {
      std::memcpy(target.data(), x.data(), sizeof(double) * dim);
      x[i] += 1e-300 * target[dim - 1 - i];  // keeps the copies from being elided
    }
  };
  auto time = [](auto& op) {
    const auto start = Clock::now();
    op();
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  time(shm);
  time(copy);
  std::vector<double> t_shm, t_copy;
  for (int r = 0; r < kRounds; ++r) {
    t_copy.push_back(time(copy));
    t_shm.push_back(time(shm));
  }
  stop = true;
  reader.join();
  const double payload = 8.0 * dim * kPerBatch;
  const double shm_gbps = payload / Median(t_shm) / 1e9;
  const double copy_gbps = payload / Median(t_copy) / 1e9;
  std::printf(
      "{\"bench\":\"shm-copy\",\"dim\":%u,\"shm_gbps\":%.2f,\"memcpy_gbps\":%.2f,"
      "\"ratio\":%.2f}\n",
      dim, shm_gbps, copy_gbps, shm_gbps / copy_gbps);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const uint32_t only = argc > 1 ? static_cast<uint32_t>(std::strtoul(argv[1], nullptr, 10)) : 0;
  if (argc > 2 || (argc == 2 && only == 0)) {
    std::fprintf(stderr, "usage: starling-bench-shm [dim]\n");
    return 2;
  }
  try {
    RoundTrip(only > 0 ? only : 1000);
    for (uint32_t dim :
         only > 0 ? std::vector<uint32_t>{only} : std::vector<uint32_t>{1000000, 10000000}) {
      Copy(dim);
    }
  } catch (const std::exception& e) {
    Fail(e.what());
  }
  return 0;
}
