// CURVE by default: key files, the cluster file's keys, the allow-list, and what a
// node does with strangers: an unlisted key, a listed key speaking for another node, a plaintext
// peer, and a wrong server key are refused and counted, never delivered.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "net/codec.h"
#include "net/curve_keys.h"
#include "net/security.h"
#include "net/transport.h"
#include "node/config/curve_setup.h"
#include "tests/subprocess.h"
#include "topology/cluster_file.h"
#include "topology/generators.h"

namespace starling {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

class CurveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("starling-curve-" + std::to_string(getpid()))).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(CurveTest, KeyFilesAreZ85AndTheSecretIsPrivate) {
  const net::CurveKeyPair pair = net::WriteCurveKeyFiles(dir_ + "/a");
  EXPECT_TRUE(net::IsZ85Key(pair.public_key));
  EXPECT_TRUE(net::IsZ85Key(pair.secret_key));
  EXPECT_NE(pair.public_key, pair.secret_key);
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/a.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(net::ReadCurveKeyFile(dir_ + "/a.key", true), pair.secret_key);
  EXPECT_EQ(net::ReadCurveKeyFile(dir_ + "/a.pub", false), pair.public_key);
  EXPECT_EQ(net::CurvePublicKeyOf(pair.secret_key), pair.public_key);
  // Never overwritten.
  try {
    net::WriteCurveKeyFiles(dir_ + "/a");
    ADD_FAILURE() << "overwrote a key file";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("exists"), std::string::npos) << e.what();
  }
  EXPECT_EQ(net::ReadCurveKeyFile(dir_ + "/a.key", true), pair.secret_key);
  // A secret others can read is refused, as ssh does.
  ::chmod((dir_ + "/a.key").c_str(), 0644);
  try {
    net::ReadCurveKeyFile(dir_ + "/a.key", true);
    ADD_FAILURE() << "accepted a world-readable secret key";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("chmod 600"), std::string::npos) << e.what();
  }
  std::ofstream(dir_ + "/junk.pub") << "# no key here\nshort\n";
  EXPECT_THROW(net::ReadCurveKeyFile(dir_ + "/junk.pub", false), std::runtime_error);
}

// A cluster of n nodes on loopback with fresh keys DIR/node-K.key and a probe key DIR/probe.key.
topology::Cluster MakeCluster(const std::string& dir, const topology::Graph& graph, int port) {
  topology::Cluster cluster;
  cluster.graph = graph;
  for (int i = 0; i < graph.num_nodes(); ++i) {
    cluster.nodes.push_back(
        {i, "tcp://127.0.0.1:" + std::to_string(port + 2 * i),
         net::WriteCurveKeyFiles(dir + "/node-" + std::to_string(i)).public_key});
  }
  cluster.probe_keys.push_back(net::WriteCurveKeyFiles(dir + "/probe").public_key);
  cluster.source = dir + "/cluster.conf";
  topology::WriteClusterFile(cluster, cluster.source);
  return topology::ReadClusterFile(cluster.source);
}

TEST_F(CurveTest, AllowListNamesEveryListedKeyAndChecksOurOwn) {
  const topology::Cluster cluster = MakeCluster(dir_, topology::Ring(3), 7000);
  ASSERT_EQ(cluster.probe_keys.size(), 1u);
  const auto curve = node::NodeCurveOptions(cluster, 1, dir_ + "/node-1.key", false);
  ASSERT_TRUE(curve.has_value());
  EXPECT_EQ(curve->public_key, cluster.nodes[1].public_key);
  ASSERT_EQ(curve->allowed.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(curve->allowed.at(cluster.nodes[i].public_key), "n" + std::to_string(i));
    EXPECT_EQ(curve->server_keys.at(i), cluster.nodes[i].public_key);
  }
  EXPECT_EQ(curve->allowed.at(cluster.probe_keys[0]), "probe");
  // The peer port admits node 1's neighbours only (on a ring of 3: nodes 0 and 2), no probe.
  ASSERT_EQ(curve->peer_allowed.size(), 2u);
  EXPECT_EQ(curve->peer_allowed.at(cluster.nodes[0].public_key), "n0");
  EXPECT_EQ(curve->peer_allowed.at(cluster.nodes[2].public_key), "n2");
  fs::create_directories(dir_ + "/r4");
  const auto ring4 = MakeCluster(dir_ + "/r4", topology::Ring(4), 7100);
  const auto curve4 = node::NodeCurveOptions(ring4, 0, dir_ + "/r4/node-0.key", false);
  EXPECT_EQ(curve4->peer_allowed.count(ring4.nodes[2].public_key), 0u) << "not a neighbour";
  EXPECT_EQ(curve4->allowed.count(ring4.nodes[2].public_key), 1u) << "telemetry: every node";
  // Another node's secret: the listed key is not ours.
  EXPECT_THROW(node::NodeCurveOptions(cluster, 1, dir_ + "/node-2.key", false),
               std::invalid_argument);
  // No key: refused unless plaintext is asked for, and the message says how to make keys.
  try {
    node::NodeCurveOptions(cluster, 1, "", false);
    ADD_FAILURE() << "ran without keys";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--keygen"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--allow-plaintext"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(node::NodeCurveOptions(cluster, 1, "", true).has_value());
  // The probe's key must be on a probe line; a node key is not a probe key.
  EXPECT_TRUE(node::ProbeCurveOptions(cluster, dir_ + "/probe.key", false).has_value());
  EXPECT_THROW(node::ProbeCurveOptions(cluster, dir_ + "/node-0.key", false),
               std::invalid_argument);
}

TEST_F(CurveTest, ClusterWithoutKeysNeedsPlaintext) {
  std::ofstream(dir_ + "/c.conf") << "node 0 tcp://127.0.0.1:7000\nnode 1 tcp://127.0.0.1:7002\n"
                                     "edge 0 1\n";
  const topology::Cluster cluster = topology::ReadClusterFile(dir_ + "/c.conf");
  net::WriteCurveKeyFiles(dir_ + "/k");
  try {
    node::NodeCurveOptions(cluster, 0, dir_ + "/k.key", false);
    ADD_FAILURE() << "CURVE without listed keys";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("no public key for node 0, 1"), std::string::npos)
        << e.what();
  }
}

// Node 0's transport with CURVE, in its own context, and raw DEALERs that play peers.
class TransportSecurity : public CurveTest {
 protected:
  void SetUp() override {
    CurveTest::SetUp();
    port_ = testing::PortBase() + 1;
    // Node 0 has neighbours 1 and 2 (a path 1 - 0 - 2).
    topology::Graph graph(3);
    graph.AddEdge(0, 1);
    graph.AddEdge(0, 2);
    cluster_ = MakeCluster(dir_, graph, port_);
    net::TransportOptions t;
    t.self_id = 0;
    t.bind_endpoint = cluster_.nodes[0].endpoint;
    t.peers = {{1, cluster_.nodes[1].endpoint}, {2, cluster_.nodes[2].endpoint}};
    t.run_id = 42;
    t.dim = 3;
    t.limits = net::LimitsForRun(3, 4);
    t.curve = node::NodeCurveOptions(cluster_, 0, dir_ + "/node-0.key", false);
    transport_ = std::make_unique<net::Transport>(&node_context_, t);
  }
  void TearDown() override {
    transport_.reset();
    CurveTest::TearDown();
  }
  // A DEALER presenting routing id "n<as_id>", CURVE with `secret` (or plaintext if empty),
  // that sends one BYE claiming to come from node as_id.
  void SendBye(int as_id, const std::string& secret, const std::string& server_key) {
    sockets_.emplace_back(peer_context_, zmq::socket_type::dealer);
    zmq::socket_t& s = sockets_.back();
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::routing_id, "n" + std::to_string(as_id));
    if (!secret.empty()) {
      net::CurveOptions curve;
      curve.secret_key = secret;
      curve.public_key = net::CurvePublicKeyOf(secret);
      net::MakeCurveClient(&s, curve, server_key);
    }
    s.connect(cluster_.nodes[0].endpoint);
    net::Envelope bye;
    bye.type = net::MessageType::kBye;
    bye.run_id = 42;
    bye.sender = as_id;
    bye.text = "spray";
    const std::string bytes = net::Encode(bye);
    ASSERT_TRUE(s.send(zmq::buffer(bytes), zmq::send_flags::dontwait).has_value());
  }
  // Polls node 0 for `ms`; returns the senders of the BYEs delivered.
  std::vector<int32_t> PollFor(int ms) {
    std::vector<int32_t> from;
    const auto end = Clock::now() + std::chrono::milliseconds(ms);
    while (Clock::now() < end) {
      transport_->Poll(std::chrono::milliseconds(20), [&](int32_t peer, const net::Envelope& e) {
        if (e.type == net::MessageType::kBye && e.text == "spray") from.push_back(peer);
      });
    }
    return from;
  }
  std::string Secret(const std::string& name) {
    return net::ReadCurveKeyFile(dir_ + "/" + name + ".key", true);
  }

  int port_ = 0;
  topology::Cluster cluster_;
  zmq::context_t node_context_, peer_context_;
  std::unique_ptr<net::Transport> transport_;
  std::vector<zmq::socket_t> sockets_;
};

TEST_F(TransportSecurity, ListedKeyIsDelivered) {
  SendBye(1, Secret("node-1"), cluster_.nodes[0].public_key);
  EXPECT_EQ(PollFor(1500), std::vector<int32_t>{1});
  EXPECT_EQ(transport_->rejects().total(), 0u) << transport_->rejects().Summary();
}

TEST_F(TransportSecurity, UnlistedKeyIsRefusedAndCounted) {
  const net::CurveKeyPair stranger = net::GenerateCurveKeyPair();
  SendBye(1, stranger.secret_key, cluster_.nodes[0].public_key);
  EXPECT_TRUE(PollFor(1500).empty());
  EXPECT_GE(transport_->rejects().count(net::RejectReason::kUnlistedKey), 1u)
      << transport_->rejects().Summary();
}

TEST_F(TransportSecurity, ListedKeyCannotSpeakForAnotherNode) {
  // Node 2's key (a neighbour) with node 1's routing id and sender field: the connection is
  // node 2's, whatever routing id it presents, and its claim to be node 1 is refused.
  SendBye(1, Secret("node-2"), cluster_.nodes[0].public_key);
  // The probe's key is not admitted on the peer port at all.
  SendBye(2, Secret("probe"), cluster_.nodes[0].public_key);
  EXPECT_TRUE(PollFor(1500).empty());
  EXPECT_EQ(transport_->rejects().count(net::RejectReason::kKeyMismatch), 1u)
      << transport_->rejects().Summary();
  EXPECT_GE(transport_->rejects().count(net::RejectReason::kNotAdmitted), 1u)
      << transport_->rejects().Summary();
}

TEST_F(TransportSecurity, ANeighboursRoutingIdTakesNothingOver) {
  // Node 1 connects for real; then node 2's key presents node 1's routing id (the handover
  // attack). Node 1's connection must keep working: its next message is still delivered as its.
  SendBye(1, Secret("node-1"), cluster_.nodes[0].public_key);
  EXPECT_EQ(PollFor(1000), std::vector<int32_t>{1});
  SendBye(1, Secret("node-2"), cluster_.nodes[0].public_key);
  (void)PollFor(500);
  net::Envelope bye;
  bye.type = net::MessageType::kBye;
  bye.run_id = 42;
  bye.sender = 1;
  bye.text = "spray";
  const std::string bytes = net::Encode(bye);
  ASSERT_TRUE(sockets_[0].send(zmq::buffer(bytes), zmq::send_flags::dontwait).has_value());
  EXPECT_EQ(PollFor(1500), std::vector<int32_t>{1}) << "node 1's connection was taken over";
}

TEST_F(TransportSecurity, PlaintextPeerIsRefusedAndCounted) {
  SendBye(1, "", "");
  EXPECT_TRUE(PollFor(1500).empty());
  // The mechanism mismatch, or (when the plaintext client hangs up first, on our greeting) a
  // connection that ended inside its handshake.
  const auto& r = transport_->rejects();
  EXPECT_GE(r.count(net::RejectReason::kFailedHandshake) + r.count(net::RejectReason::kNoHandshake),
            1u)
      << r.Summary();
}

TEST_F(TransportSecurity, WrongServerKeyFailsTheHandshake) {
  // Node 1's real key, but it expects node 0 to hold another server key.
  SendBye(1, Secret("node-1"), net::GenerateCurveKeyPair().public_key);
  EXPECT_TRUE(PollFor(1500).empty());
  EXPECT_GE(transport_->rejects().count(net::RejectReason::kFailedHandshake), 1u)
      << transport_->rejects().Summary();
}

// Whole daemons: a wrong key in one node's cluster file is named in its log, within the
// give-up deadline, and the other side counts the refused key.
TEST_F(CurveTest, DaemonNamesAWrongServerKeyWithinTheDeadline) {
  const int port = testing::PortBase() + 3;
  topology::Graph pair(2);
  pair.AddEdge(0, 1);
  const topology::Cluster good = MakeCluster(dir_, pair, port);
  topology::Cluster bad = good;
  bad.nodes[1].public_key = net::GenerateCurveKeyPair().public_key;
  topology::WriteClusterFile(bad, dir_ + "/bad.conf");
  const std::string data = dir_ + "/tiny.libsvm";
  std::ofstream(data) << "1 1:0.5\n-1 2:1\n1 1:1\n-1 2:0.5\n";
  auto argv = [&](const std::string& cluster, int id) {
    return std::vector<std::string>{std::string(STARLING_BINARY_DIR) + "/node/starlingd",
                                    "--cluster",
                                    cluster,
                                    "--id",
                                    std::to_string(id),
                                    "--secret-key",
                                    dir_ + "/node-" + std::to_string(id) + ".key",
                                    "--algorithm",
                                    "extra",
                                    "--data",
                                    data,
                                    "--format",
                                    "libsvm",
                                    "--iterations",
                                    "5",
                                    "--give-up-s",
                                    "4",
                                    "--wait-log-s",
                                    "1"};
  };
  const auto start = Clock::now();
  testing::Subprocess a(argv(dir_ + "/bad.conf", 0), dir_ + "/a.log");
  testing::Subprocess b(argv(good.source, 1), dir_ + "/b.log");
  const int code_a = a.Wait(std::chrono::seconds(20)), code_b = b.Wait(std::chrono::seconds(20));
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const std::string log_a = testing::ReadFile(dir_ + "/a.log");
  const std::string log_b = testing::ReadFile(dir_ + "/b.log");
  EXPECT_EQ(code_a, 3) << log_a;
  EXPECT_EQ(code_b, 3) << log_b;
  EXPECT_LT(seconds, 15.0);
  EXPECT_NE(log_a.find("CURVE handshake with node 1 (" + good.nodes[1].endpoint + ") failed"),
            std::string::npos)
      << log_a;
  EXPECT_NE(log_a.find("does not belong to its secret key"), std::string::npos) << log_a;
  // Node 1's key is unknown to node 0's (bad) file: node 0 refuses it and counts it.
  EXPECT_NE(log_a.find("unlisted_key="), std::string::npos) << log_a;
  EXPECT_NE(log_b.find("it refused our key"), std::string::npos) << log_b;
}

TEST_F(CurveTest, DaemonWithoutKeysRefusesToStart) {
  std::ofstream(dir_ + "/c.conf") << "node 0 tcp://127.0.0.1:7000\n";
  const std::string data = dir_ + "/tiny.libsvm";
  std::ofstream(data) << "1 1:0.5\n-1 2:1\n";
  testing::Subprocess p({std::string(STARLING_BINARY_DIR) + "/node/starlingd", "--cluster",
                         dir_ + "/c.conf", "--id", "0", "--data", data, "--format", "libsvm"},
                        dir_ + "/out.log");
  EXPECT_EQ(p.Wait(std::chrono::seconds(20)), 2);
  const std::string out = testing::ReadFile(dir_ + "/out.log");
  EXPECT_NE(out.find("no --secret-key"), std::string::npos) << out;
  EXPECT_NE(out.find("--allow-plaintext"), std::string::npos) << out;
}

TEST_F(CurveTest, KeygenWritesAPairAndRefusesToOverwrite) {
  const std::string daemon = std::string(STARLING_BINARY_DIR) + "/node/starlingd";
  testing::Subprocess p({daemon, "--keygen", dir_ + "/n"}, dir_ + "/out.log");
  EXPECT_EQ(p.Wait(std::chrono::seconds(20)), 0);
  const std::string pub = net::ReadCurveKeyFile(dir_ + "/n.pub", false);
  EXPECT_EQ(net::CurvePublicKeyOf(net::ReadCurveKeyFile(dir_ + "/n.key", true)), pub);
  EXPECT_NE(testing::ReadFile(dir_ + "/out.log").find(pub), std::string::npos);
  testing::Subprocess again({daemon, "--keygen", dir_ + "/n"}, dir_ + "/again.log");
  EXPECT_EQ(again.Wait(std::chrono::seconds(20)), 2);
  EXPECT_EQ(net::ReadCurveKeyFile(dir_ + "/n.pub", false), pub);
}

}  // namespace
}  // namespace starling
