// starling-bench-wire: round-trip time of one Starling exchange between two nodes in one process,
// merges included, relative to a raw cppzmq ping-pong of the same bytes followed by the same
// merges without any check, measured in the same run.
//
// Starling: node 0 and node 1 each own a net::Transport (a ROUTER bound, a DEALER to the other),
// node 1 on its own thread, and a SwarmSGD (--compression none) with a node::ExchangeWire, as the
// daemon's data path has them. One exchange: node 0 takes its offer (BeginExchange) and sends
// XCHG_REQ with it as the payload (zero copy: the snapshot is the send's keepalive); node 1's
// handler reads it (ExchangeWire::Collect: every check but NaN/Inf, the vector viewed in place),
// merges it with the checked merge (RespondChecked: the NaN/Inf check in the merge's own pass)
// and replies XCHG_REP with its snapshot the same way; node 0 polls until the reply with the same
// exchange_seq arrives, reads it and merges it (CompleteExchangeChecked).
// Raw reference: a cppzmq DEALER (main thread) and ROUTER (echo thread) over one connection of
// the same transport kind, each with its own SwarmSGD: the client takes its offer, sends the same
// two frames Starling sends (a frame of the encoded envelope's size, then the vector zero copy,
// released when ZeroMQ is done with it), the server merges the vector with the plain merge
// (Respond: no check, as the simulator's) and sends its snapshot back the same way, and the
// client merges the reply (CompleteExchange). So both sides do the same algorithm work; the
// difference is the transport's framing and checks, the driver-side reads, and the finiteness
// check fused into the merge.
//
// Starling and raw batches are interleaved (the machine is shared and noisy) and the medians of
// the single exchanges' times over all batches are reported, one JSON line per (transport, dim) on
// stdout:
//   {"bench":"wire","transport":"tcp"|"ipc","dim":d,"starling_us":..,"raw_us":..,"ratio":..,
//    "starling_best_us":..,"raw_best_us":..,"ratio_best":..}
// with ratio = raw_us / starling_us (1.0 means Starling costs nothing over raw ZeroMQ) and
// ratio_best the same for the fastest single exchange of each.
// "check":"fused" is that path; with STARLING_WIRE_SEPARATE_CHECK=1 the Starling side scans each
// received vector in a pass of its own before a plain merge ("check":"separate"), for the A/B.
// Arguments (optional): [tcp|ipc|all] [dim] run one transport kind and/or one dimension.
// Every wait has a deadline: on a timeout the benchmark exits 1 with a message on stderr.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/problems/problem.h"
#include "net/codec.h"
#include "net/envelope.h"
#include "net/payload.h"
#include "net/reject.h"
#include "net/transport.h"
#include "node/drivers/exchange_wire.h"

namespace {

using BenchClock = std::chrono::steady_clock;
using std::chrono::milliseconds;
namespace net = starling::net;
using starling::Vec;

// Interleaved rounds (a batch of each side per round); STARLING_WIRE_ROUNDS overrides, for more
// samples on a loaded machine.
int Rounds() {
  const char* v = std::getenv("STARLING_WIRE_ROUNDS");
  const int rounds = v != nullptr ? std::atoi(v) : 0;
  return rounds > 0 ? rounds : 21;
}
constexpr double kBatchSeconds = 0.04;             // target length of one timed batch
// HELLO both ways, connections up: generous, since on this shared 2-core machine at a load of
// 40 the handshake took more than 10 s.
constexpr milliseconds kHandshakeDeadline{60000};
constexpr milliseconds kExchangeDeadline{10000};   // one round trip
constexpr milliseconds kServerPoll{20};            // how often server threads check for stop

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "starling-bench-wire: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(1);  // threads may be blocked in ZeroMQ; do not try to join them
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// STARLING_WIRE_SEPARATE_CHECK=1: the A/B of the fused check in one binary. Starling's side scans
// each received vector for NaN/Inf in a pass of its own (net::CheckPayloadValues) and then merges
// with the plain merge, instead of the checked merge's fused pass. The raw reference is unchanged.
bool SeparateCheck() {
  static const bool separate = [] {
    const char* v = std::getenv("STARLING_WIRE_SEPARATE_CHECK");
    return v != nullptr && std::string(v) == "1";
  }();
  return separate;
}

// A problem with zero gradients: the benchmark takes no local steps, it only needs SwarmSGD's
// exchanges and merges.
class FlatProblem : public starling::algorithms::Problem {
 public:
  explicit FlatProblem(int dim) : dim_(dim) {}
  std::string name() const override { return "flat"; }
  int dim() const override { return dim_; }
  int num_samples() const override { return 1; }
  double l2() const override { return 0.0; }
  double loss_scale() const override { return 1.0; }
  double Value(const Vec&) const override { return 0.0; }
  void Gradient(const Vec&, Vec* g) const override { *g = Vec::Zero(dim_); }
  void BatchGradient(const Vec&, const std::vector<int>&, Vec* g) const override {
    *g = Vec::Zero(dim_);
  }
  void HessianVector(const Vec&, const Vec&, Vec* out) const override { *out = Vec::Zero(dim_); }
  double SmoothnessBound() const override { return 1.0; }
  std::optional<double> Accuracy(const Vec&) const override { return std::nullopt; }

 private:
  int dim_;
};

starling::algorithms::PairwiseOptions SwarmOptions() {
  starling::algorithms::PairwiseOptions o;
  o.algorithm = "swarmsgd";
  o.step = 0.1;
  return o;
}

// Node `id` of two, starting from a random model (seeded by id).
std::unique_ptr<starling::algorithms::PairwiseAlgorithm> MakeSwarm(int id, const FlatProblem* p) {
  starling::algorithms::NodeSetup s;
  s.id = id;
  s.neighbors = {1 - id};
  s.neighbor_weights = {0.5};
  s.self_weight = 0.5;
  s.problem = p;
  s.x0 = Vec(p->dim());
  std::mt19937_64 rng(id);
  std::normal_distribution<double> normal;
  for (Eigen::Index k = 0; k < s.x0.size(); ++k) s.x0[k] = normal(rng);
  s.seed = 1 + id;
  return starling::algorithms::MakePairwiseAlgorithm(SwarmOptions(), s);
}

// A ZeroMQ message viewing `v` without a copy, holding it until ZeroMQ is done with it (the raw
// counterpart of Transport::Send's keepalive).
zmq::message_t ZeroCopyMessage(const std::shared_ptr<const Vec>& v) {
  auto* hold = new std::shared_ptr<const Vec>(v);
  return zmq::message_t(
      const_cast<double*>(v->data()), sizeof(double) * v->size(),
      [](void*, void* hint) { delete static_cast<std::shared_ptr<const Vec>*>(hint); }, hold);
}

// A TCP port on `address` that was free a moment ago (bind to port 0, read it, close).
int FreePort(const char* address) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) Fail("socket() failed");
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = 0;
  if (::inet_pton(AF_INET, address, &sa.sin_addr) != 1) Fail(std::string("bad address ") + address);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ::close(fd);
    Fail(std::string("cannot bind a port on ") + address);
  }
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  ::close(fd);
  return ntohs(sa.sin_port);
}

struct Endpoints {
  std::string node0, node1, raw;
};

Endpoints MakeEndpoints(const std::string& kind, int serial) {
  Endpoints e;
  if (kind == "tcp") {
    e.node0 = "tcp://127.0.0.1:" + std::to_string(FreePort("127.0.0.1"));
    e.node1 = "tcp://127.0.0.2:" + std::to_string(FreePort("127.0.0.2"));
    e.raw = "tcp://127.0.0.2:" + std::to_string(FreePort("127.0.0.2"));
  } else {
    const std::string base = "ipc:///tmp/starling-bench-" + std::to_string(::getpid()) + "-";
    e.node0 = base + std::to_string(3 * serial);
    e.node1 = base + std::to_string(3 * serial + 1);
    e.raw = base + std::to_string(3 * serial + 2);
  }
  return e;
}

void RemoveIpcFile(const std::string& endpoint) {
  const std::string prefix = "ipc://";
  if (endpoint.rfind(prefix, 0) == 0) std::remove(endpoint.substr(prefix.size()).c_str());
}

net::TransportOptions OptionsFor(int32_t self, const std::string& bind, int32_t peer,
                                 const std::string& peer_endpoint, uint32_t dim) {
  net::TransportOptions o;
  o.self_id = self;
  o.bind_endpoint = bind;
  o.peers = {{peer, peer_endpoint}};
  o.run_id = net::RunIdOf("starling-bench-wire");
  o.dim = dim;
  o.hello_text = "bench";
  o.limits = net::LimitsForRun(dim, 4);
  return o;
}

// Node 1 on its own thread: merges every XCHG_REQ and answers XCHG_REP with its snapshot.
class StarlingServer {
 public:
  StarlingServer(zmq::context_t* context, net::TransportOptions options)
      : thread_([this, context, options]() mutable { Run(context, std::move(options)); }) {}
  ~StarlingServer() {
    stop_ = true;
    thread_.join();
  }
  bool ready() const { return ready_; }
  std::string error() {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }

 private:
  void Run(zmq::context_t* context, net::TransportOptions options) {
    const uint32_t dim = options.dim;
    std::unique_ptr<net::Transport> transport;
    try {
      transport = std::make_unique<net::Transport>(context, std::move(options));
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = e.what();
      return;
    }
    const FlatProblem problem(static_cast<int>(dim));
    const auto algorithm = MakeSwarm(1, &problem);
    starling::node::ExchangeWire wire(SwarmOptions(), static_cast<int>(dim));
    net::Envelope reply;
    auto handler = [&](int32_t peer, const net::Envelope& in) {
      if (in.type != net::MessageType::kXchgReq) return;
      net::Reject reject;
      const auto incoming = wire.Collect(in, /*request=*/true, &reject);
      size_t first_bad = 0;
      std::shared_ptr<const Vec> snapshot;
      if (SeparateCheck()) {
        if (incoming && net::CheckPayloadValues(in.payloads[0], &reject)) {
          snapshot = algorithm->Respond(peer, *incoming);
        }
      } else if (incoming) {
        snapshot = algorithm->RespondChecked(peer, *incoming, &first_bad);
      }
      if (snapshot == nullptr) {
        std::lock_guard<std::mutex> lock(mutex_);
        error_ = "node 1 cannot read or merge the request: " + reject.detail;
        return;
      }
      reply.type = net::MessageType::kXchgRep;
      reply.exchange_seq = in.exchange_seq;
      const std::shared_ptr<const void> keepalive = wire.Attach(snapshot, &reply);
      if (!transport->Send(peer, reply, keepalive)) {
        std::lock_guard<std::mutex> lock(mutex_);
        error_ = "node 1 could not queue XCHG_REP";
      }
    };
    while (!stop_) {
      transport->Poll(kServerPoll, handler);
      if (!ready_) {
        transport->Tick();  // greets again until node 0 has acknowledged us
        if (transport->peer(0).accepted_us) ready_ = true;
      }
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<bool> ready_{false};
  std::mutex mutex_;
  std::string error_;
  std::thread thread_;  // last: starts after the members above exist
};

// Raw reference server: a ROUTER answering each request (a header frame, then the vector) with
// the plain SwarmSGD merge and its snapshot, framed the same way.
class RawServer {
 public:
  RawServer(zmq::context_t* context, const std::string& endpoint, uint32_t dim,
            size_t header_bytes)
      : socket_(*context, zmq::socket_type::router),
        problem_(static_cast<int>(dim)),
        algorithm_(MakeSwarm(1, &problem_)),
        header_(header_bytes, 'r') {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.set(zmq::sockopt::rcvtimeo, static_cast<int>(kServerPoll.count()));
    socket_.bind(endpoint);
    thread_ = std::thread([this] { Run(); });
  }
  ~RawServer() {
    stop_ = true;
    thread_.join();
  }

 private:
  void Run() {
    zmq::message_t identity, header, body;
    while (!stop_) {
      if (!socket_.recv(identity)) continue;  // timeout: check stop_
      if (!socket_.recv(header) || !header.more() || !socket_.recv(body)) continue;
      const Eigen::Map<const Vec> theirs(body.data<double>(),
                                         static_cast<Eigen::Index>(body.size() / sizeof(double)));
      const std::shared_ptr<const Vec> snapshot = algorithm_->Respond(0, theirs);
      zmq::message_t head(header_.data(), header_.size());
      socket_.send(identity, zmq::send_flags::sndmore);
      socket_.send(head, zmq::send_flags::sndmore);
      socket_.send(ZeroCopyMessage(snapshot), zmq::send_flags::none);
    }
  }

  zmq::socket_t socket_;
  FlatProblem problem_;
  std::unique_ptr<starling::algorithms::PairwiseAlgorithm> algorithm_;
  std::string header_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Times one (transport kind, dim) case and prints its JSON line.
//
// Node 0 and the raw client use client_context, node 1 and the raw server server_context: two
// ZeroMQ I/O threads, as two nodes in separate processes would have.
void BenchCase(zmq::context_t* client_context, zmq::context_t* server_context,
               const std::string& kind, uint32_t dim, int serial) {
  const Endpoints ep = MakeEndpoints(kind, serial);

  // --- Starling pair.
  StarlingServer server(server_context, OptionsFor(1, ep.node1, 0, ep.node0, dim));
  net::Transport node0(client_context, OptionsFor(0, ep.node0, 1, ep.node1, dim));
  const FlatProblem problem(static_cast<int>(dim));
  const auto algorithm = MakeSwarm(0, &problem);
  starling::node::ExchangeWire wire(SwarmOptions(), static_cast<int>(dim));
  uint64_t seq = 0;
  bool got_reply = false;
  net::Reject reject;
  auto handler = [&](int32_t peer, const net::Envelope& in) {
    if (in.type != net::MessageType::kXchgRep || in.exchange_seq != seq) return;
    const auto incoming = wire.Collect(in, /*request=*/false, &reject);
    if (!incoming) Fail("node 0 cannot read the reply: " + reject.detail);
    size_t first_bad = 0;
    const bool merged =
        SeparateCheck()
            ? net::CheckPayloadValues(in.payloads[0], &reject) &&
                  algorithm->CompleteExchange(seq, *incoming)
            : algorithm->CompleteExchangeChecked(seq, *incoming, &first_bad) ==
                  starling::algorithms::PairwiseAlgorithm::MergeResult::kMerged;
    if (!merged) {
      Fail("node 0 did not merge the reply of peer " + std::to_string(peer));
    }
    got_reply = true;
  };
  const auto handshake_end = BenchClock::now() + kHandshakeDeadline;
  while (!(node0.peer(1).accepted_us && server.ready())) {
    if (!server.error().empty()) Fail(kind + " dim " + std::to_string(dim) + ": " + server.error());
    if (BenchClock::now() > handshake_end) {
      Fail(kind + " dim " + std::to_string(dim) + ": no HELLO handshake between " + ep.node0 +
           " and " + ep.node1 + " within " + std::to_string(kHandshakeDeadline.count()) + " ms");
    }
    node0.Poll(milliseconds(10), handler);
    node0.Tick();
  }
  auto starling_exchange = [&] {
    ++seq;
    got_reply = false;
    net::Envelope request;
    request.type = net::MessageType::kXchgReq;
    request.exchange_seq = seq;
    const std::shared_ptr<const void> keepalive =
        wire.Attach(algorithm->BeginExchange(1, seq), &request);
    if (!node0.Send(1, std::move(request), keepalive)) Fail("node 0 could not queue XCHG_REQ");
    const auto end = BenchClock::now() + kExchangeDeadline;
    while (!got_reply) {
      const auto now = BenchClock::now();
      if (now > end) {
        const std::string e = server.error();
        Fail(kind + " dim " + std::to_string(dim) + ": no XCHG_REP within " +
             std::to_string(kExchangeDeadline.count()) + " ms" + (e.empty() ? "" : ": " + e));
      }
      node0.Poll(std::chrono::duration_cast<milliseconds>(end - now) + milliseconds(1), handler);
    }
  };

  // --- Raw pair, with the same frames as Starling's: the envelope's bytes without the payload,
  // then the vector.
  net::Envelope probe;
  probe.type = net::MessageType::kXchgReq;
  probe.exchange_seq = 1;
  const Vec zeros = Vec::Zero(dim);
  probe.payloads.push_back(net::Float64Payload(zeros.data(), dim));
  const size_t message_bytes = net::Encode(probe).size();
  const size_t header_bytes = message_bytes - sizeof(double) * dim;
  RawServer raw_server(server_context, ep.raw, dim, header_bytes);
  const auto raw_algorithm = MakeSwarm(0, &problem);
  zmq::socket_t client(*client_context, zmq::socket_type::dealer);
  client.set(zmq::sockopt::linger, 0);
  client.set(zmq::sockopt::rcvtimeo, static_cast<int>(kExchangeDeadline.count()));
  client.connect(ep.raw);
  const std::string header(header_bytes, 'q');
  zmq::message_t reply_header, reply_body;
  uint64_t raw_seq = 0;
  auto raw_exchange = [&] {
    ++raw_seq;
    zmq::message_t head(header.data(), header.size());
    client.send(head, zmq::send_flags::sndmore);
    client.send(ZeroCopyMessage(raw_algorithm->BeginExchange(1, raw_seq)), zmq::send_flags::none);
    if (!client.recv(reply_header) || !reply_header.more() || !client.recv(reply_body)) {
      Fail(kind + " dim " + std::to_string(dim) + ": raw reply missing after " +
           std::to_string(kExchangeDeadline.count()) + " ms");
    }
    if (reply_header.size() + reply_body.size() != message_bytes) {
      Fail("raw reply has the wrong size");
    }
    const Eigen::Map<const Vec> theirs(reply_body.data<double>(), static_cast<Eigen::Index>(dim));
    if (!raw_algorithm->CompleteExchange(raw_seq, theirs)) Fail("raw reply not merged");
  };

  // Runs n exchanges; appends each one's seconds to *samples (if any) and returns their mean.
  auto time_batch = [](int n, auto& exchange, std::vector<double>* samples) {
    const auto start = BenchClock::now();
    auto last = start;
    for (int i = 0; i < n; ++i) {
      exchange();
      const auto now = BenchClock::now();
      if (samples != nullptr) samples->push_back(std::chrono::duration<double>(now - last).count());
      last = now;
    }
    return std::chrono::duration<double>(last - start).count() / n;
  };
  // Warm up both (connections, buffers), then size the batches.
  time_batch(3, starling_exchange, nullptr);
  time_batch(3, raw_exchange, nullptr);
  auto batch_size = [&](auto& exchange) {
    const double per = time_batch(5, exchange, nullptr);
    return std::max(2, static_cast<int>(kBatchSeconds / std::max(per, 1e-7)));
  };
  const int n_starling = batch_size(starling_exchange);
  const int n_raw = batch_size(raw_exchange);

  // Profiling aid (STARLING_WIRE_PROFILE=starling|raw): only that side's exchanges for about 3 s,
  // so that `perf record` / `perf stat` see one side's costs alone; prints the mean time and, from
  // getrusage over the loop (every thread of the process), CPU time, context switches and minor
  // page faults per exchange: steadier than wall time on a loaded machine.
  if (const char* only = std::getenv("STARLING_WIRE_PROFILE"); only != nullptr) {
    const bool starling = std::string(only) == "starling";
    rusage before{};
    ::getrusage(RUSAGE_SELF, &before);
    const auto end = BenchClock::now() + std::chrono::seconds(3);
    int n = 0;
    double total = 0.0;
    while (BenchClock::now() < end) {
      total += starling ? time_batch(10, starling_exchange, nullptr)
                        : time_batch(10, raw_exchange, nullptr);
      n += 10;
    }
    const double mean = total * 10 / n;
    rusage after{};
    ::getrusage(RUSAGE_SELF, &after);
    auto seconds = [](const timeval& t) { return t.tv_sec + 1e-6 * t.tv_usec; };
    const double cpu = seconds(after.ru_utime) - seconds(before.ru_utime) +
                       seconds(after.ru_stime) - seconds(before.ru_stime);
    const double switches = static_cast<double>(after.ru_nvcsw - before.ru_nvcsw +
                                                after.ru_nivcsw - before.ru_nivcsw);
    std::printf(
        "{\"bench\":\"wire-profile\",\"side\":\"%s\",\"transport\":\"%s\",\"dim\":%u,"
        "\"exchanges\":%d,\"mean_us\":%.1f,\"cpu_us_per_exchange\":%.1f,"
        "\"switches_per_exchange\":%.2f,\"faults_per_exchange\":%.2f}\n",
        starling ? "starling" : "raw", kind.c_str(), dim, n, mean * 1e6, cpu * 1e6 / n,
        switches / n, static_cast<double>(after.ru_minflt - before.ru_minflt) / n);
    std::fflush(stdout);
    return;
  }
  // Medians over single exchanges rather than batch means: a scheduling stall of another process
  // on this 2-core machine then costs one sample instead of a whole batch.
  std::vector<double> t_starling, t_raw;
  for (int r = 0, rounds = Rounds(); r < rounds; ++r) {
    time_batch(n_raw, raw_exchange, &t_raw);
    time_batch(n_starling, starling_exchange, &t_starling);
  }
  if (const std::string e = server.error(); !e.empty()) Fail(e);
  const double starling_us = Median(t_starling) * 1e6;
  const double raw_us = Median(t_raw) * 1e6;
  // The fastest single exchange of each: the least disturbed by other processes on a loaded
  // machine, where medians of both drift by 2x between runs.
  const double starling_best_us = *std::min_element(t_starling.begin(), t_starling.end()) * 1e6;
  const double raw_best_us = *std::min_element(t_raw.begin(), t_raw.end()) * 1e6;
  std::printf(
      "{\"bench\":\"wire\",\"transport\":\"%s\",\"dim\":%u,\"starling_us\":%.1f,\"raw_us\":%.1f,"
      "\"ratio\":%.3f,\"starling_best_us\":%.1f,\"raw_best_us\":%.1f,\"ratio_best\":%.3f,"
      "\"check\":\"%s\"}\n",
      kind.c_str(), dim, starling_us, raw_us, raw_us / starling_us, starling_best_us, raw_best_us,
      raw_best_us / starling_best_us, SeparateCheck() ? "separate" : "fused");
  std::fflush(stdout);

  RemoveIpcFile(ep.node0);
  RemoveIpcFile(ep.node1);
  RemoveIpcFile(ep.raw);
}

}  // namespace

int main(int argc, char** argv) {
  // Optional filters: starling-bench-wire [tcp|ipc|all] [dim]
  const std::string only_kind = argc > 1 ? argv[1] : "all";
  const uint32_t only_dim =
      argc > 2 ? static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10)) : 0;
  if (only_kind != "all" && only_kind != "tcp" && only_kind != "ipc") {
    std::fprintf(stderr, "usage: starling-bench-wire [tcp|ipc|all] [dim]\n");
    return 2;
  }
  // Transport logs (handshakes, rejects) go to stderr so that stdout holds only JSON lines.
  spdlog::set_default_logger(spdlog::stderr_color_mt("bench"));
  spdlog::set_level(spdlog::level::warn);
  zmq::context_t client_context(1), server_context(1);
  int serial = 0;
  try {
    for (const std::string kind : {"tcp", "ipc"}) {
      if (only_kind != "all" && only_kind != kind) continue;
      const std::vector<uint32_t> dims = only_dim > 0
                                             ? std::vector<uint32_t>{only_dim}
                                             : std::vector<uint32_t>{1000, 100000, 1000000};
      for (uint32_t dim : dims) BenchCase(&client_context, &server_context, kind, dim, serial++);
    }
  } catch (const std::exception& e) {
    Fail(e.what());
  }
  return 0;
}
