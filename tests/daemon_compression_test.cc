// Compressed exchanges between real starlingd processes (docs/explanations/algorithms/swarmsgd.md):
// SwarmSGD whose exchanges travel as lattice codes of log2 q bits per coordinate, with the hash and
// dither seed beside them, decode failures detected and retried at full precision over the wire;
// SwarmSGD with top-k entries against public copies per edge; and CHOCO-SGD whose compressed
// differences travel as top-k entries.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/daemon_cluster.h"
#include "tests/test_data.h"
#include "topology/cluster_file.h"
#include "topology/generators.h"

namespace starling {
namespace {

namespace fs = std::filesystem;

// Totals of the nodes' final metrics lines (starlingd --metrics).
struct WireTotals {
  double bytes_sent = 0, comm_rounds = 0, rejected = 0, decode_failures = 0;
};

WireTotals Totals(const std::string& dir, int n) {
  WireTotals t;
  for (int i = 0; i < n; ++i) {
    std::ifstream in(dir + "/node-" + std::to_string(i) + ".jsonl");
    std::string line, last;
    while (std::getline(in, line)) {
      if (!line.empty()) last = line;
    }
    EXPECT_EQ(testing::MetricsField(last, "final"), 1.0) << "node " << i << ": " << last;
    t.bytes_sent += testing::MetricsField(last, "bytes_sent");
    t.comm_rounds += testing::MetricsField(last, "comm_rounds");
    t.rejected += testing::MetricsField(last, "rejected");
    t.decode_failures += testing::MetricsField(last, "decode_failures");
  }
  return t;
}

// What a compressed SwarmSGD run of real daemons on a9a's training split gives: the held-out
// accuracy of the average model against the centralized solver's, and the wire totals.
struct SwarmRun {
  testing::A9aOutcome outcome;
  WireTotals totals;
  // A SwarmSGD node's comm_rounds counts its merges; each merge is one message sent by one of its
  // two sides (the offer or the reply). Everything sent (headers, heartbeats, BUSYs, full
  // precision retries) per such message:
  double BytesPerMessage() const { return totals.bytes_sent / totals.comm_rounds; }
};

constexpr double kFloat64Message = 8.0 * 123;  // a9a's float64 payload alone

class DaemonCompression : public ::testing::Test {
 protected:
  void SetUp() override {
    a9a_ = testing::SharedData("a9a");
    if (!fs::exists(a9a_)) GTEST_SKIP() << "no a9a at " << a9a_;
  }

  // n daemons on a ring (ports from PortBase() + port_offset), logistic regression with
  // lambda = 1e-4, batch 16, H = 2, `compression`.
  SwarmRun RunSwarm(const std::string& name, int n, int port_offset, int iterations, int seed,
                    const std::string& compression) {
    const std::string dir = testing::FreshTempDir(name);
    const testing::A9aSplit split = testing::SplitA9a(a9a_, dir);
    const std::string cluster = testing::WriteLoopbackCluster(
        dir, topology::Ring(n), testing::PortBase() + port_offset, /*keys=*/true);
    const std::vector<std::string> args = {
        "--algorithm", "swarmsgd", "--problem", "logistic", "--l2", "1e-4", "--data",
        split.train, "--format", "libsvm", "--features", "123", "--partition", "iid",
        "--iterations", std::to_string(iterations), "--batch", "16", "--local-steps", "2",
        "--seed", std::to_string(seed), "--compression", compression};
    const std::vector<Vec> models = testing::RunLoopbackDaemons(dir, cluster, n, args, 180);
    SwarmRun run{testing::EvaluateOnA9a(split, 1e-4, models), Totals(dir, n)};
    std::printf("%s SwarmSGD: test accuracy %.4f (centralized %.4f), %.0f bytes per exchange "
                "message (float64 payload alone: %.0f), %.0f failed decodings or copy checks, "
                "%.0f merges\n",
                compression.c_str(), run.outcome.accuracy, run.outcome.reference_accuracy,
                run.BytesPerMessage(), kFloat64Message, run.totals.decode_failures,
                run.totals.comm_rounds);
    fs::remove_all(dir);
    return run;
  }

  std::string a9a_;
};

// 8-bit lattice codes with a scale wide enough for the models' spread: the daemons reach the
// centralized solver's test accuracy while each exchange message carries about an eighth of the
// bytes of a float64 one (123 one-byte codes and a ~40-byte envelope), and no node rejects
// anything its neighbours send.
TEST_F(DaemonCompression, LatticeSwarmSgdReachesTheCentralizedAccuracyAtAFractionOfTheBytes) {
  const SwarmRun run = RunSwarm("lattice8", 6, 0, 3000, 3, "lattice:8:4e-3");
  EXPECT_GE(run.outcome.accuracy, run.outcome.reference_accuracy - 0.01);
  EXPECT_EQ(run.totals.rejected, 0);
  EXPECT_LT(run.BytesPerMessage(), 0.3 * kFloat64Message);
}

// Top-k SwarmSGD (12 of 123 entries per message, public copies per edge): the daemons reach the
// centralized accuracy and a message carries about a fifth of a float64 one.
TEST_F(DaemonCompression, TopKSwarmSgdReachesTheCentralizedAccuracyWithSparseMessages) {
  const SwarmRun run = RunSwarm("topk", 6, 18, 3000, 3, "topk:12");
  EXPECT_GE(run.outcome.accuracy, run.outcome.reference_accuracy - 0.01);
  EXPECT_EQ(run.totals.rejected, 0);
  EXPECT_LT(run.BytesPerMessage(), 0.35 * kFloat64Message);
}

// vqSGD SwarmSGD (32 cross-polytope samples of 8 bits per message on the same public copies as
// top-k): the daemons reach the centralized accuracy and a message is the norm, 32 one-byte
// codes and the envelope.
TEST_F(DaemonCompression, VqSwarmSgdReachesTheCentralizedAccuracyWithPackedCodes) {
  const SwarmRun run = RunSwarm("vq", 6, 24, 3000, 3, "vq:32");
  EXPECT_GE(run.outcome.accuracy, run.outcome.reference_accuracy - 0.01);
  EXPECT_EQ(run.totals.rejected, 0);
  EXPECT_EQ(run.totals.decode_failures, 0);
  EXPECT_LT(run.BytesPerMessage(), 0.15 * kFloat64Message);
}

// --compression f32: plain SwarmSGD whose exchanged models travel as float32. The daemons reach
// the centralized accuracy, nothing is rejected (no float64 payload and no non-finite value
// arrives), and a message is about half a float64 one: 4 bytes per coordinate and the envelope.
TEST_F(DaemonCompression, Float32SwarmSgdReachesTheCentralizedAccuracyWithHalfTheBytes) {
  const SwarmRun run = RunSwarm("f32", 6, 30, 3000, 3, "f32");
  EXPECT_GE(run.outcome.accuracy, run.outcome.reference_accuracy - 0.01);
  EXPECT_EQ(run.totals.rejected, 0);
  EXPECT_GT(run.BytesPerMessage(), 0.5 * kFloat64Message);
  EXPECT_LT(run.BytesPerMessage(), 0.75 * kFloat64Message);
}

// A lattice far too fine for the models' spread (2 bits, s = 1e-6: exact decoding needs the two
// snapshots within 2e-6 of each other): decodings fail, each failure is detected from the hash or
// the margin and the exchange is retried at full precision, so the run still converges.
TEST_F(DaemonCompression, FailedDecodingsFallBackToFullPrecisionOverTheWire) {
  const SwarmRun run = RunSwarm("lattice2", 4, 6, 2000, 5, "lattice:2:1e-6");
  // Both sides count a failure, and every lattice offer fails: about one per full-precision merge.
  EXPECT_GT(run.totals.decode_failures, 0.2 * run.totals.comm_rounds);
  EXPECT_GT(run.totals.comm_rounds, 200);
  EXPECT_EQ(run.totals.rejected, 0);
  EXPECT_GE(run.outcome.accuracy, run.outcome.reference_accuracy - 0.02);
}

// CHOCO-SGD is round-based: across processes it must give the simulator's iterates exactly, now
// with its differences sent as top-k entries (12 bytes each) instead of dense doubles.
TEST_F(DaemonCompression, ChocoSgdWithTopKEqualsTheSimulatorAndSendsOnlyKEntries) {
  const std::string dir = testing::FreshTempDir("choco");
  const int n = 5, iterations = 150, top_k = 12;
  const std::string cluster = testing::WriteLoopbackCluster(
      dir, topology::ErdosRenyi(n, 0.5, 3), testing::PortBase() + 12, true);
  const std::vector<std::string> args = {
      "--algorithm", "choco-sgd", "--problem", "logistic", "--l2", "1e-2", "--data", a9a_,
      "--format", "libsvm", "--iterations", std::to_string(iterations), "--seed", "7",
      "--top-k", std::to_string(top_k)};
  const std::vector<Vec> models = testing::RunLoopbackDaemons(dir, cluster, n, args, 120);
  const std::vector<Vec> simulated =
      testing::SimulatedA9aModels("choco-sgd", a9a_, cluster, n, iterations,
                                  [&](node::RunConfig* c) { c->params.Set("top-k", top_k); });
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(models[i].size(), simulated[i].size()) << "node " << i;
    EXPECT_LE((models[i] - simulated[i]).norm(), 1e-9 * simulated[i].norm()) << "node " << i;
  }
  const WireTotals t = Totals(dir, n);
  // A CHOCO-SGD node's comm_rounds counts its iterations, each one message to every neighbour.
  const topology::Graph graph = topology::ReadClusterFile(cluster).graph;
  double messages = 0;
  for (int i = 0; i < n; ++i) messages += iterations * graph.Neighbors(i).size();
  EXPECT_EQ(t.comm_rounds, n * iterations);
  const double per_message = t.bytes_sent / messages;
  std::printf("CHOCO-SGD top-%d: %.0f bytes per round message (dense float64 payload: %d)\n",
              top_k, per_message, 8 * 124);
  EXPECT_LT(per_message, 12.0 * top_k + 200);
  EXPECT_EQ(t.rejected, 0);
  fs::remove_all(dir);
}

// CHOCO-SGD with vqSGD's cross-polytope quantizer as Q: the samples come from seeded generators,
// so across processes the run must give the simulator's iterates exactly; each difference
// travels as vqSGD's message, a packed cross-polytope payload (the norm and S codes of
// 1 + ceil(log2 123) = 8 bits), and every receiver decodes it as its sender did.
TEST_F(DaemonCompression, ChocoSgdWithVqEqualsTheSimulator) {
  const std::string dir = testing::FreshTempDir("choco-vq");
  const int n = 4, iterations = 100, samples = 8;
  const std::string cluster =
      testing::WriteLoopbackCluster(dir, topology::Ring(n), testing::PortBase(), true);
  const std::vector<std::string> args = {"--algorithm",   "choco-sgd",
                                         "--problem",     "logistic",
                                         "--l2",          "1e-2",
                                         "--data",        a9a_,
                                         "--format",      "libsvm",
                                         "--iterations",  std::to_string(iterations),
                                         "--seed",        "7",
                                         "--choco-gamma", "0.2",
                                         "--vq-samples",  std::to_string(samples)};
  const std::vector<Vec> models = testing::RunLoopbackDaemons(dir, cluster, n, args, 120);
  const std::vector<Vec> simulated = testing::SimulatedA9aModels(
      "choco-sgd", a9a_, cluster, n, iterations, [&](node::RunConfig* c) {
        c->params.Set("vq-samples", samples);
        c->params.Set("choco-gamma", 0.2);
      });
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(models[i].size(), simulated[i].size()) << "node " << i;
    EXPECT_EQ(models[i], simulated[i]) << "node " << i;
    EXPECT_GT(models[i].norm(), 0) << "node " << i;  // it moved from x0 = 0
  }
  const WireTotals t = Totals(dir, n);
  const double per_message = t.bytes_sent / (2.0 * n * iterations);  // a ring: 2 neighbours
  // The counted bits (OutgoingBits: 64 + S * 8) against what the wire carried, envelope and all.
  const double counted = (64.0 + samples * 8) / 8;
  std::printf("CHOCO-SGD vq:%d: %.1f bytes per round message on the wire, %.0f counted\n", samples,
              per_message, counted);
  // The envelope's fixed part is about 40 bytes (the header, the payload's encoding, dim,
  // modulus and check words); 12-byte sparse entries would take 8 * 12 = 96 for the codes alone.
  EXPECT_LT(per_message, counted + 50);
  EXPECT_EQ(t.rejected, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace starling
