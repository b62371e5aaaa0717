// Hostile input at a live daemon: real starlingd processes run EXTRA over CURVE while
// a test client sprays frames at node 0 - another protocol version, unknown types, huge declared
// lengths, the wrong dimension, NaN, frames that do not match their out-of-line payloads, empty
// messages, random bytes (as node 1, with node 1's key), connections to the peer port with a
// listed probe key (refused there: not_admitted), connections with an unlisted key and plaintext
// connections. Node 0 must keep running, the run must end with the simulator's iterates (so no
// garbage reached the algorithm and nothing was lost), and node 0 must count every frame it was
// sent as a reject, under the right reason.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "net/codec.h"
#include "net/curve_keys.h"
#include "net/endpoint.h"
#include "net/payload.h"
#include "net/security.h"
#include "node/config/run_id.h"
#include "node/config/run_setup.h"
#include "node/sim/round_simulator.h"
#include "tests/reject_summary.h"
#include "tests/subprocess.h"
#include "tests/written_data.h"
#include "topology/cluster_file.h"
#include "topology/generators.h"

namespace starling {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using testing::RejectSummary;
using testing::Subprocess;

const std::string kDaemon = std::string(STARLING_BINARY_DIR) + "/node/starlingd";
constexpr int kDim = 8;
constexpr int kNodes = 3;
constexpr int kIterations = 4000;

// A small logistic data set, written here (so that the test needs no files).
void WriteData(const std::string& path) { testing::WriteLogisticData(path, 300, kDim, 11); }

class Sprayer {
 public:
  explicit Sprayer(const std::string& endpoint, const std::string& server_key)
      : endpoint_(endpoint), server_key_(server_key) {}
  // A DEALER with routing id `routing_id`, CURVE with `secret` or plaintext if empty.
  zmq::socket_t* Connect(const std::string& routing_id, const std::string& secret) {
    sockets_.emplace_back(context_, zmq::socket_type::dealer);
    zmq::socket_t& s = sockets_.back();
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::routing_id, routing_id);
    s.set(zmq::sockopt::sndhwm, 100000);
    if (!secret.empty()) {
      net::CurveOptions curve;
      curve.secret_key = secret;
      curve.public_key = net::CurvePublicKeyOf(secret);
      net::MakeCurveClient(&s, curve, server_key_);
    }
    s.connect(endpoint_);
    return &s;
  }
  void CloseAll() {
    for (auto& s : sockets_) s.close();
    sockets_.clear();
  }

 private:
  std::string endpoint_, server_key_;
  zmq::context_t context_;
  std::vector<zmq::socket_t> sockets_;
};

// Waits until node 0's telemetry reports `rejected` >= target (or the deadline); returns the
// last value seen.
double WaitForRejects(const topology::Cluster& cluster, const std::string& probe_secret,
                      double target, std::chrono::seconds deadline) {
  zmq::context_t context;
  zmq::socket_t sub(context, zmq::socket_type::sub);
  sub.set(zmq::sockopt::linger, 0);
  sub.set(zmq::sockopt::subscribe, "");
  net::CurveOptions curve;
  curve.secret_key = probe_secret;
  curve.public_key = net::CurvePublicKeyOf(probe_secret);
  net::MakeCurveClient(&sub, curve, cluster.nodes[0].public_key);
  sub.connect(net::TelemetryEndpointFor(cluster.nodes[0].endpoint));
  const auto end = Clock::now() + deadline;
  double rejected = -1;
  while (Clock::now() < end && rejected < target) {
    zmq::pollitem_t item{sub.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(100));
    if (!(item.revents & ZMQ_POLLIN)) continue;
    zmq::message_t msg;
    if (!sub.recv(msg, zmq::recv_flags::dontwait)) continue;
    net::Envelope e;
    net::Reject reject;
    if (!net::Decode(static_cast<const char*>(msg.data()), msg.size(), net::DecodeLimits(), &e,
                     &reject)) {
      continue;
    }
    for (const auto& f : e.telemetry) {
      if (f.name == "rejected") rejected = f.value;
    }
  }
  return rejected;
}

TEST(Spray, DaemonSurvivesCountsEveryRejectAndStillEqualsTheSimulator) {
  const std::string dir =
      (fs::temp_directory_path() / ("starling-spray-" + std::to_string(getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string data = dir + "/data.libsvm";
  WriteData(data);
  const int port = testing::PortBase() + 6;
  topology::Cluster cluster;
  cluster.graph = topology::Ring(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    cluster.nodes.push_back(
        {i, "tcp://127.0.0." + std::to_string(i + 1) + ":" + std::to_string(port),
         net::WriteCurveKeyFiles(dir + "/node-" + std::to_string(i)).public_key});
  }
  cluster.probe_keys.push_back(net::WriteCurveKeyFiles(dir + "/probe").public_key);
  const std::string cluster_path = dir + "/cluster.conf";
  topology::WriteClusterFile(cluster, cluster_path);
  cluster = topology::ReadClusterFile(cluster_path);

  node::RunConfig config;
  config.algorithm = "extra";
  config.problem = "logistic";
  config.l2 = 1e-2;
  config.data = data;
  config.format = "libsvm";
  config.features = kDim;
  config.seed = 5;
  config.iterations = kIterations;
  config.nodes = kNodes;
  config.topology = "file:" + cluster_path;
  node::BuildScope scope;
  scope.global = false;
  const node::RunSetup setup = node::BuildRunSetup(config, scope);
  const std::vector<std::string> run_args = {"--algorithm",  "extra",
                                             "--problem",    "logistic",
                                             "--l2",         "1e-2",
                                             "--data",       data,
                                             "--format",     "libsvm",
                                             "--features",   std::to_string(kDim),
                                             "--iterations", std::to_string(kIterations),
                                             "--seed",       "5"};
  auto start_node = [&](int i) {
    std::vector<std::string> argv = {kDaemon, "--cluster", cluster_path, "--id", std::to_string(i),
                                     "--secret-key", dir + "/node-" + std::to_string(i) + ".key",
                                     "--final-model", dir + "/model-" + std::to_string(i) + ".txt",
                                     // Node 0 waits for node 2 while the spray is counted.
                                     "--telemetry-ms", "100", "--give-up-s", "600"};
    argv.insert(argv.end(), run_args.begin(), run_args.end());
    return std::make_unique<Subprocess>(argv, dir + "/node-" + std::to_string(i) + ".log");
  };
  const auto secret = [&](const std::string& name) {
    return net::ReadCurveKeyFile(dir + "/" + name + ".key", true);
  };

  // Node 0 starts alone; the spray as node 1 (its own key: the worst case, a stolen key) comes
  // before the real node 1 exists, so that the real node's connection is not taken over and
  // every frame reaches node 0's decoder.
  std::unique_ptr<Subprocess> node0 = start_node(0);
  Sprayer sprayer(cluster.nodes[0].endpoint, cluster.nodes[0].public_key);
  zmq::socket_t* as_node1 = sprayer.Connect("n1", secret("node-1"));

  // Valid messages of this run to tamper with (its run id, node 1 as sender), so that each
  // frame breaks exactly the rule it is meant to.
  std::map<std::string, int> sent;  // expected reason -> frames
  int frames = 0;
  auto send = [&](zmq::socket_t* s, const std::string& bytes, const std::string& reason) {
    ASSERT_TRUE(s->send(zmq::buffer(bytes), zmq::send_flags::dontwait).has_value());
    ++sent[reason];
    ++frames;
  };
  std::vector<double> x(kDim, 0.5);
  net::Envelope round;
  round.type = net::MessageType::kRound;
  round.sender = 1;
  round.run_id = node::RunIdFor(config, setup);
  round.key = {0, 0, 0};
  round.payloads = {net::Float64Payload(x.data(), kDim)};
  const std::string good = net::Encode(round);
  ASSERT_EQ(static_cast<uint8_t>(good[1]), net::kProtocolVersion);  // [version, type, ...]
  ASSERT_EQ(static_cast<uint8_t>(good[2]), static_cast<uint8_t>(net::MessageType::kRound));
  const int other_versions[5] = {0, static_cast<int>(net::kProtocolVersion) - 1,
                                 static_cast<int>(net::kProtocolVersion) + 1,
                                 static_cast<int>(net::kProtocolVersion) + 2, 127};
  for (int k = 0; k < 5; ++k) {
    std::string v = good;
    v[1] = static_cast<char>(other_versions[k]);  // positive fixints, never ours
    send(as_node1, v, "bad_version");
    std::string t = good;
    // Types no version of the protocol assigns: 0 and 120..123 (positive fixints).
    t[2] = static_cast<char>(k == 0 ? 0 : 119 + k);
    send(as_node1, t, "unknown_type");
  }
  // Huge declared lengths: the payload's bin header (last 2 + 8*kDim bytes) rewritten as bin32
  // of 4 GiB - 16, and a top-level array of 2^32 - 1 elements.
  const size_t bin_at = good.size() - 2 - 8 * kDim;
  ASSERT_EQ(static_cast<uint8_t>(good[bin_at]), 0xc4);
  std::string huge =
      good.substr(0, bin_at) + std::string("\xc6\xff\xff\xff\xf0", 5) + good.substr(bin_at + 2);
  for (int k = 0; k < 3; ++k) send(as_node1, huge, "huge");
  for (int k = 0; k < 3; ++k)
    send(as_node1, std::string("\xdd\xff\xff\xff\xff\x01\x02", 7), "huge");
  // The wrong dimension, and NaN / Inf values.
  std::vector<double> shorter(kDim - 1, 0.5);
  net::Envelope wrong_dim = round;
  wrong_dim.payloads = {net::Float64Payload(shorter.data(), kDim - 1)};
  for (int k = 0; k < 4; ++k) send(as_node1, net::Encode(wrong_dim), "wrong_dimension");
  for (int k = 0; k < 4; ++k) {
    std::vector<double> bad = x;
    bad[k] =
        k % 2 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    net::Envelope nan = round;
    nan.key = {k, 0, 0};
    nan.payloads = {net::Float64Payload(bad.data(), kDim)};
    send(as_node1, net::Encode(nan), "non_finite");
  }
  // Empty messages; multi-frame messages whose frames do not match their out-of-line payloads
  // (a frame no payload claims, a missing frame, a frame of the wrong size, more frames than a
  // message may have); random bytes.
  for (int k = 0; k < 3; ++k) send(as_node1, std::string(), "truncated");
  auto send_frames = [&](const std::vector<std::string>& parts, const std::string& reason) {
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      ASSERT_TRUE(as_node1->send(zmq::buffer(parts[i]), zmq::send_flags::sndmore).has_value());
    }
    send(as_node1, parts.back(), reason);
  };
  std::string framed;
  std::vector<uint32_t> out_of_line;
  net::EncodeFramed(round, 0, &framed, &out_of_line);
  ASSERT_EQ(out_of_line.size(), 1u);
  const std::string x_bytes(reinterpret_cast<const char*>(x.data()), 8 * x.size());
  for (int k = 0; k < 3; ++k) {
    send_frames({good, good}, "malformed");
    send(as_node1, framed, "truncated");
    send_frames({framed, x_bytes.substr(8)}, "bad_length");
    send_frames(std::vector<std::string>(20, framed), "malformed");
  }
  std::mt19937 rng(99);
  for (int k = 0; k < 40; ++k) {
    std::string junk(1 + rng() % 300, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    if (static_cast<uint8_t>(junk[0]) >= 0x90 && static_cast<uint8_t>(junk[0]) <= 0x9f) {
      junk[0] = '\xc1';  // never a fixarray start: keeps every random frame invalid
    }
    send(as_node1, junk, "random");
  }
  // Every frame from "node 1" must be counted before the real node 1 may connect.
  const double counted =
      WaitForRejects(cluster, secret("probe"), frames, std::chrono::seconds(240));
  EXPECT_EQ(counted, frames) << "node 0 did not count every hostile frame";
  sprayer.CloseAll();
  ASSERT_EQ(node0->Wait(std::chrono::milliseconds(0)), -1) << "node 0 died under the spray";

  // Strangers knock while node 0 is up and has met node 1: unlisted keys, plaintext, the probe's
  // (listed) key, which the peer port does not admit. Node 2 is started only once node 0 has
  // counted all of it, so that the run cannot end before the spray is counted (under load, a run
  // that is merely made long enough may end first under load); node 0 meanwhile waits for
  // node 2 at step 0, well within its --give-up-s.
  std::vector<std::unique_ptr<Subprocess>> others;
  others.push_back(start_node(1));
  int unknown_sender_frames = 0, stranger_sockets = 0, plaintext_sockets = 0;
  for (int round_no = 0; round_no < 10; ++round_no) {
    zmq::socket_t* stranger =
        sprayer.Connect("n1", net::GenerateCurveKeyPair().secret_key);  // unlisted key
    ++stranger_sockets;
    (void)stranger->send(zmq::buffer(good), zmq::send_flags::dontwait);
    zmq::socket_t* plain = sprayer.Connect("n2", "");
    ++plaintext_sockets;
    (void)plain->send(zmq::buffer(good), zmq::send_flags::dontwait);
    zmq::socket_t* unknown = sprayer.Connect("n" + std::to_string(7 + round_no), secret("probe"));
    ASSERT_TRUE(unknown->send(zmq::buffer(good), zmq::send_flags::dontwait).has_value());
    ++unknown_sender_frames;
  }
  // At least one reject per unknown frame, refused key and plaintext connection (plaintext
  // peers retry, so more). The sockets stay open until node 0 has exited, so nothing sent is
  // lost on our side.
  const double lower_bound = frames + unknown_sender_frames + stranger_sockets + plaintext_sockets;
  EXPECT_GE(WaitForRejects(cluster, secret("probe"), lower_bound, std::chrono::seconds(240)),
            lower_bound);
  ASSERT_EQ(node0->Wait(std::chrono::milliseconds(0)), -1) << "node 0 died under the spray";

  // The run, while strangers keep knocking until node 0 has finished (connection-level rejects
  // only, which the exact count of message rejects below leaves out).
  others.push_back(start_node(2));
  // At most 50 knocks (100 sockets, kept open: within this process's descriptors).
  for (int knock = 0; knock < 50 && node0->Wait(std::chrono::milliseconds(100)) == -1; ++knock) {
    zmq::socket_t* stranger = sprayer.Connect("n1", net::GenerateCurveKeyPair().secret_key);
    (void)stranger->send(zmq::buffer(good), zmq::send_flags::dontwait);
    zmq::socket_t* plain = sprayer.Connect("n2", "");
    (void)plain->send(zmq::buffer(good), zmq::send_flags::dontwait);
  }

  const int code0 = node0->Wait(std::chrono::seconds(300));
  sprayer.CloseAll();
  const std::string log0 = testing::ReadFile(dir + "/node-0.log");
  EXPECT_EQ(code0, 0) << log0;
  for (int i = 1; i < kNodes; ++i) {
    EXPECT_EQ(others[i - 1]->Wait(std::chrono::seconds(300)), 0)
        << testing::ReadFile(dir + "/node-" + std::to_string(i) + ".log");
  }

  // Every reject counted, each under its reason.
  const std::map<std::string, uint64_t> counts = RejectSummary(log0);
  ASSERT_FALSE(counts.empty()) << log0;
  uint64_t total_messages = 0;
  for (const auto& [reason, n] : counts) {
    if (reason != "unlisted_key" && reason != "failed_handshake" && reason != "not_admitted" &&
        reason != "no_handshake") {
      total_messages += n;  // per message, not per connection
    }
  }
  EXPECT_EQ(total_messages, static_cast<uint64_t>(frames)) << log0;
  auto count = [&](const std::string& reason) {
    auto it = counts.find(reason);
    return it == counts.end() ? uint64_t{0} : it->second;
  };
  EXPECT_EQ(count("bad_version"), static_cast<uint64_t>(sent["bad_version"])) << log0;
  EXPECT_EQ(count("unknown_type"), static_cast<uint64_t>(sent["unknown_type"])) << log0;
  EXPECT_EQ(count("wrong_dimension"), static_cast<uint64_t>(sent["wrong_dimension"])) << log0;
  EXPECT_EQ(count("non_finite"), static_cast<uint64_t>(sent["non_finite"])) << log0;
  EXPECT_GE(count("truncated") + count("oversized"),
            static_cast<uint64_t>(sent["huge"] + sent["truncated"]))
      << log0;
  EXPECT_GE(count("malformed"), static_cast<uint64_t>(sent["malformed"])) << log0;
  EXPECT_EQ(count("bad_length"), static_cast<uint64_t>(sent["bad_length"])) << log0;
  EXPECT_GE(count("not_admitted"), static_cast<uint64_t>(unknown_sender_frames)) << log0;
  EXPECT_GE(count("unlisted_key"), static_cast<uint64_t>(stranger_sockets)) << log0;
  // A plaintext client may close first, on the server's greeting: then node 0 sees the
  // connection end inside the handshake (no_handshake) rather than the mechanism mismatch.
  EXPECT_GE(count("failed_handshake") + count("no_handshake"),
            static_cast<uint64_t>(plaintext_sockets))
      << log0;

  // The run's result is the simulator's: nothing hostile reached the algorithm, nothing lost.
  // (The configuration above is the daemons' own.)
  node::RoundSimulator sim(setup.nodes, node::RoundOptionsFor(config, setup));
  sim.RunUntilIteration(kIterations);
  for (int i = 0; i < kNodes; ++i) {
    std::ifstream in(dir + "/model-" + std::to_string(i) + ".txt");
    std::vector<double> values;
    for (double v; in >> v;) values.push_back(v);
    const Vec& expected = sim.node(i).Model();
    ASSERT_EQ(values.size(), static_cast<size_t>(expected.size())) << "node " << i;
    const Vec got = Eigen::Map<Vec>(values.data(), expected.size());
    EXPECT_LE((got - expected).norm(), 1e-9 * expected.norm()) << "node " << i;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace starling
