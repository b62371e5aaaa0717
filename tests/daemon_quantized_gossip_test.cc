// Quantized gossip (--gossip-bits, --gossip-quantizer; algorithms/round/quantized_gossip.h)
// across real starlingd processes: the methods are deterministic, so the daemons must end at the
// simulator's iterates bit for bit, which also shows that every node decoded the same public
// copies as the sender. The messages travel as packed R-bit codes with their range (range-codes
// payloads, node/drivers/vector_wire.h), and the receivers decode them with the sender's
// function; the last test measures the wire bytes per message against the counted bits
// (OutgoingBits, R d + 64 per vector).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/daemon_cluster.h"
#include "tests/subprocess.h"
#include "tests/test_data.h"
#include "topology/generators.h"

namespace starling {
namespace {

namespace fs = std::filesystem;

class DaemonQuantizedGossip : public ::testing::Test {
 protected:
  void SetUp() override {
    a9a_ = testing::SharedData("a9a");
    if (!fs::exists(a9a_)) GTEST_SKIP() << "no a9a at " << a9a_;
  }

  // n daemons of `algorithm` with R = `bits` and `quantizer` against the simulator.
  void ExpectDaemonsEqualTheSimulator(const std::string& name, const std::string& algorithm,
                                      const topology::Graph& graph, int port_offset, int bits,
                                      const std::string& quantizer) {
    const std::string dir = testing::FreshTempDir(name);
    const int n = graph.num_nodes(), iterations = 60;
    const std::string cluster =
        testing::WriteLoopbackCluster(dir, graph, testing::PortBase() + port_offset, true);
    const std::vector<std::string> args = {"--algorithm",
                                           algorithm,
                                           "--problem",
                                           "logistic",
                                           "--l2",
                                           "1e-2",
                                           "--data",
                                           a9a_,
                                           "--format",
                                           "libsvm",
                                           "--iterations",
                                           std::to_string(iterations),
                                           "--seed",
                                           "7",
                                           "--gossip-bits",
                                           std::to_string(bits),
                                           "--gossip-quantizer",
                                           quantizer};
    const std::vector<Vec> models = testing::RunLoopbackDaemons(dir, cluster, n, args, 180);
    const std::vector<Vec> simulated = testing::SimulatedA9aModels(
        algorithm, a9a_, cluster, n, iterations, [&](node::RunConfig* c) {
          c->params.Set("gossip-bits", bits);
          c->params.Set("gossip-quantizer", quantizer);
        });
    // The same run unquantized: the quantization must have changed the iterates (else this test
    // could not tell a daemon that ignored the option).
    const std::vector<Vec> exact =
        testing::SimulatedA9aModels(algorithm, a9a_, cluster, n, iterations);
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(models[i].size(), simulated[i].size()) << "node " << i;
      EXPECT_EQ(models[i], simulated[i]) << algorithm << " node " << i;
      EXPECT_GT((simulated[i] - exact[i]).norm(), 1e-9 * exact[i].norm()) << "node " << i;
    }
    fs::remove_all(dir);
  }

  // Everything the n daemons sent (handshakes, heartbeats and all), from their last metrics lines.
  static double BytesSent(const std::string& dir, int n) {
    double total = 0;
    for (int i = 0; i < n; ++i) {
      std::ifstream in(dir + "/node-" + std::to_string(i) + ".jsonl");
      std::string line, last;
      while (std::getline(in, line)) {
        if (!line.empty()) last = line;
      }
      EXPECT_EQ(testing::MetricsField(last, "final"), 1.0) << "node " << i << ": " << last;
      EXPECT_EQ(testing::MetricsField(last, "rejected"), 0.0) << "node " << i << ": " << last;
      total += testing::MetricsField(last, "bytes_sent");
    }
    return total;
  }

  std::string a9a_;
};

TEST_F(DaemonQuantizedGossip, DifferentialGradientTrackingEqualsTheSimulator) {
  ExpectDaemonsEqualTheSimulator("qg-gt", "gradient-tracking", topology::ErdosRenyi(5, 0.5, 3), 0,
                                 4, "differential");
}

TEST_F(DaemonQuantizedGossip, NaiveDgdEqualsTheSimulator) {
  ExpectDaemonsEqualTheSimulator("qg-dgd", "dgd", topology::Ring(4), 10, 3, "naive");
}

TEST_F(DaemonQuantizedGossip, DifferentialExtraEqualsTheSimulator) {
  ExpectDaemonsEqualTheSimulator("qg-extra", "extra", topology::Ring(4), 0, 2, "differential");
}

// Lost, duplicated and reordered messages: the missing ones are asked for again (RESEND) and
// served from the kept coded messages, so the daemons still end at the simulator's iterates.
TEST_F(DaemonQuantizedGossip, ResentMessagesUnderInjectedFaultsEqualTheSimulator) {
  const std::string dir = testing::FreshTempDir("qg-faults");
  const int n = 5, iterations = 40, bits = 3;
  const std::string cluster = testing::WriteLoopbackCluster(dir, topology::ErdosRenyi(n, 0.5, 3),
                                                            testing::PortBase() + 30, true);
  const std::vector<std::string> args = {"--algorithm",
                                         "gradient-tracking",
                                         "--problem",
                                         "logistic",
                                         "--l2",
                                         "1e-2",
                                         "--data",
                                         a9a_,
                                         "--format",
                                         "libsvm",
                                         "--iterations",
                                         std::to_string(iterations),
                                         "--seed",
                                         "7",
                                         "--gossip-bits",
                                         std::to_string(bits),
                                         "--resend-ms",
                                         "50",
                                         "--fault-loss",
                                         "0.15",
                                         "--fault-dup",
                                         "0.1",
                                         "--fault-reorder",
                                         "0.2"};
  const std::vector<Vec> models = testing::RunLoopbackDaemons(dir, cluster, n, args, 180);
  const std::vector<Vec> simulated =
      testing::SimulatedA9aModels("gradient-tracking", a9a_, cluster, n, iterations,
                                  [&](node::RunConfig* c) { c->params.Set("gossip-bits", bits); });
  for (int i = 0; i < n; ++i) EXPECT_EQ(models[i], simulated[i]) << "node " << i;
  BytesSent(dir, n);  // every node finished, no reject
  fs::remove_all(dir);
}

// A daemon killed with SIGKILL mid-run and restarted with --resume: its checkpoint holds the coded
// message and the public copies, and the coded messages it kept, checked on resume, are what it
// replays to the neighbours that ask again; every node still ends at the simulator's iterates.
TEST_F(DaemonQuantizedGossip, KilledDaemonResumesFromItsCodedMessages) {
  using namespace std::chrono_literals;
  const std::string dir = testing::FreshTempDir("qg-resume");
  const int n = 5, victim = 3, bits = 3;
  const int64_t iterations = 200;
  const std::string cluster = testing::WriteLoopbackCluster(
      dir, topology::ErdosRenyi(n, 0.5, 3), testing::PortBase() + 40, /*keys=*/false);
  // A 3 ms delay on every message stretches the run over seconds, so that the kill lands mid-run.
  // clang-format off
  const std::vector<std::string> args = {
      "--algorithm", "gradient-tracking", "--problem", "logistic", "--l2", "1e-2", "--data", a9a_,
      "--format", "libsvm", "--iterations", std::to_string(iterations), "--seed", "7",
      "--gossip-bits", std::to_string(bits), "--checkpoint-every", "10", "--resend-ms", "100",
      "--fault-delay-ms", "3"};
  // clang-format on
  const std::vector<Vec> models =
      testing::RunWithKilledAndResumedNode(dir, cluster, n, victim, args, 0ms);
  ASSERT_EQ(models.size(), static_cast<size_t>(n));
  const std::vector<Vec> simulated =
      testing::SimulatedA9aModels("gradient-tracking", a9a_, cluster, n, iterations,
                                  [&](node::RunConfig* c) { c->params.Set("gossip-bits", bits); });
  for (int i = 0; i < n; ++i) EXPECT_TRUE(models[i] == simulated[i]) << "node " << i;
  fs::remove_all(dir);
}

// The wire against the counted bits: 4 daemons of differential DGD (R = 2, one vector a message)
// and gradient tracking (R = 4, two), a9a (d = 123), on a ring; still the simulator's iterates.
TEST_F(DaemonQuantizedGossip, WireBytesPerMessageAgainstTheCountedBits) {
  struct Case {
    std::string algorithm;
    int bits, segments;
  };
  for (const Case& c : {Case{"dgd", 2, 1}, Case{"gradient-tracking", 4, 2}}) {
    const std::string dir = testing::FreshTempDir("qg-wire-" + c.algorithm);
    const int n = 4, iterations = 60, d = 123;
    const std::string cluster =
        testing::WriteLoopbackCluster(dir, topology::Ring(n), testing::PortBase() + 20, true);
    const std::vector<std::string> args = {
        "--algorithm", c.algorithm, "--problem",     "logistic",
        "--l2",        "1e-2",      "--data",        a9a_,
        "--format",    "libsvm",    "--iterations",  std::to_string(iterations),
        "--seed",      "7",         "--gossip-bits", std::to_string(c.bits)};
    const std::vector<Vec> models = testing::RunLoopbackDaemons(dir, cluster, n, args, 180);
    const std::vector<Vec> simulated = testing::SimulatedA9aModels(
        c.algorithm, a9a_, cluster, n, iterations,
        [&](node::RunConfig* config) { config->params.Set("gossip-bits", c.bits); });
    for (int i = 0; i < n; ++i) EXPECT_EQ(models[i], simulated[i]) << c.algorithm << " node " << i;
    // Everything sent over the round messages (a ring: 2 neighbours, one message per iteration
    // each; the first broadcast is of step 0 and the last step's is not sent).
    const double per_message = BytesSent(dir, n) / (2.0 * n * iterations);
    const double counted = c.segments * (c.bits * d + 64) / 8.0;
    const double codes = c.segments * ((c.bits * d + 7) / 8);
    std::printf(
        "%s --gossip-bits %d: %.1f bytes per round message on the wire, %.2f counted, "
        "%.0f of packed codes (float64 values: %d)\n",
        c.algorithm.c_str(), c.bits, per_message, counted, codes, c.segments * 8 * d);
    // The codes are on the wire, and little else: the envelope's fixed part and each payload's
    // encoding, dim, R, check and range words are about 40 + 20 per vector.
    EXPECT_GT(per_message, codes);
    EXPECT_LT(per_message, counted + 40 + 20 * c.segments);
    fs::remove_all(dir);
  }
}

}  // namespace
}  // namespace starling
