// Topology inference from the pairwise diffusion against real processes:
// 20 starlingd nodes run --algorithm pairwise-diffusion on loopback, each on its own Poisson
// clock, and `starling-probe infer` aligns the time-stamped samples of 6 of them and infers the
// edges among those 6. The truth is the cluster file's graph. The accuracy bound comes from the
// simulator on the same graph at the same sample count (docs/results/topology-inference.md,
// measured there over seeds, not from the code under test); the test asks for it with a
// margin, and for sensitivity and specificity both above the majority guess's.
//
// A second test feeds the probe's intake with crafted telemetry (one PUB socket per "node",
// in this process): a malformed batch is counted as rejected, and a node that publishes the
// other kind of samples stops the probe with a message naming both nodes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "algorithms/types.h"
#include "net/codec.h"
#include "net/payload.h"
#include "node/drivers/sample_telemetry.h"
#include "node/drivers/tick_clock.h"
#include "node/drivers/timed_sample_telemetry.h"
#include "node/probe/infer_probe.h"
#include "node/probe/sample_collector.h"
#include "tests/daemon_cluster.h"
#include "tests/subprocess.h"
#include "tests/test_data.h"
#include "topology/cluster_file.h"
#include "topology/generators.h"

namespace starling {
namespace {

using ::testing::HasSubstr;
using testing::PortBase;
using testing::ReadFile;
using testing::Subprocess;

const std::string kDaemon = std::string(STARLING_BINARY_DIR) + "/node/starlingd";
const std::string kProbe = std::string(STARLING_BINARY_DIR) + "/node/starling-probe";

// The setting (docs/results/topology-inference.md): ER(20, 0.3) of seed 1 (60 edges), nodes 0-5
// observed (15 pairs, 8 edges among them), decay 0.75, mix 0.5, exchange-prob 1, 10 ms mean ticks,
// period 0.5 tick, 10000 pairs (5000 mean ticks, 50 s of ticks after the 200 of burn-in).
constexpr int kNodes = 20;
constexpr char kTopology[] = "er:0.3";
constexpr uint64_t kGraphSeed = 1;
constexpr int kObserved = 6;
constexpr char kSamples[] = "10000";
// Granger's accuracy in the simulator at 10000 pairs on this graph and period, seeds 1-20: mean
// 0.983, min 0.933, max 1 (log-granger the same). Daemons on the loaded 2-core machine
// measured 0.8-1 in eleven runs. The bound is 11 of 15 pairs right, the simulator's
// worst seed less three pairs, room for the daemons' shortfall under load; a coin reaches it
// with probability 0.06, and sensitivity and specificity must both exceed 0.5 besides (chance,
// or the majority guess: about 0.53).
constexpr double kMinAccuracy = 0.73;

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("starling-pinfer-" + std::to_string(getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

topology::Cluster MakeCluster(int nodes, const std::string& topology, uint64_t seed, int port) {
  topology::Cluster cluster;
  cluster.graph = topology::MakeTopology(topology, nodes, seed);
  for (int i = 0; i < nodes; ++i) {
    cluster.nodes.push_back(
        {i, "tcp://127.0.0." + std::to_string(i + 1) + ":" + std::to_string(port), ""});
  }
  return cluster;
}

// "NAME: accuracy A  sensitivity S  specificity P" of the probe's report, or -1s.
struct Scores {
  double accuracy = -1, sensitivity = -1, specificity = -1;
};
Scores ScoresOf(const std::string& log, const std::string& estimator) {
  const std::regex line(estimator +
                        ": accuracy ([0-9.e+-]+)  sensitivity ([0-9.e+-]+)  specificity "
                        "([0-9.e+-]+)");
  std::smatch m;
  Scores s;
  if (std::regex_search(log, m, line)) {
    s.accuracy = std::stod(m[1]);
    s.sensitivity = std::stod(m[2]);
    s.specificity = std::stod(m[3]);
  }
  return s;
}

TEST(PairwiseInferDaemon, ProbeInfersTheObservedEdgesOfTwentyDaemons) {
  TempDir dir;
  const int port = PortBase();
  const topology::Cluster cluster = MakeCluster(kNodes, kTopology, kGraphSeed, port);
  const std::string cluster_file = dir.path() + "/cluster.conf";
  topology::WriteClusterFile(cluster, cluster_file);
  int true_edges = 0;
  for (int i = 0; i < kObserved; ++i) {
    for (int j = i + 1; j < kObserved; ++j) true_edges += cluster.graph.HasEdge(i, j);
  }
  ASSERT_EQ(true_edges, 8) << "the graph the bound was measured on";

  std::vector<std::unique_ptr<Subprocess>> daemons;
  for (int i = 0; i < kNodes; ++i) {
    daemons.push_back(std::make_unique<Subprocess>(
        std::vector<std::string>{kDaemon, "--cluster", cluster_file, "--id", std::to_string(i),
                                 "--algorithm", "pairwise-diffusion", "--decay", "0.75", "--mix",
                                 "0.5", "--exchange-prob", "1", "--tick-ms", "10",
                                 // An upper bound (1000 s of ticks): the probe ends the run.
                                 "--iterations", "100000", "--seed", "1", "--allow-plaintext",
                                 "--give-up-s", "120"},
        dir.path() + "/node-" + std::to_string(i) + ".log"));
  }
  // Attached at once: it waits for the daemons (the connect deadline), and its grid starts 200
  // ticks after the first sample it hears.
  const std::string out = dir.path() + "/out";
  Subprocess probe({kProbe,
                    "infer",
                    "--cluster",
                    cluster_file,
                    "--observe",
                    "0-5",
                    "--samples",
                    kSamples,
                    "--period",
                    "0.5",
                    "--estimator",
                    "granger,log-granger",
                    "--connect-timeout-s",
                    "120",
                    "--timeout-s",
                    "400",
                    "--out",
                    out,
                    "--plot-script",
                    "",
                    "--allow-plaintext"},
                   dir.path() + "/probe.log");
  const int code = probe.Wait(std::chrono::seconds(600));
  for (auto& d : daemons) d->Signal(SIGTERM);
  std::vector<int> codes;
  for (auto& d : daemons) codes.push_back(d->Wait(std::chrono::seconds(60)));
  const std::string log = ReadFile(dir.path() + "/probe.log");
  std::printf("%s\n", log.c_str());
  for (int i = 0; i < kNodes; ++i) {
    EXPECT_EQ(codes[i], 0) << ReadFile(dir.path() + "/node-" + std::to_string(i) + ".log");
  }
  ASSERT_EQ(code, 0) << log;
  EXPECT_THAT(log,
              ::testing::ContainsRegex("infer: " + std::string(kSamples) +
                                       " aligned sample pairs from [0-9]+ complete grid rows"));
  const Scores granger = ScoresOf(log, "granger");
  EXPECT_GE(granger.accuracy, kMinAccuracy) << log;
  // Both classes found, not one guessed for all.
  EXPECT_GT(granger.sensitivity, 0.5) << log;
  EXPECT_GT(granger.specificity, 0.5) << log;
  const Scores log_granger = ScoresOf(log, "log-granger");
  EXPECT_GE(log_granger.accuracy, kMinAccuracy) << log;
  // The node logs' closing counts: exchanges happened, and samples were published.
  const std::string node0 = ReadFile(dir.path() + "/node-0.log");
  EXPECT_THAT(node0, ::testing::ContainsRegex("[1-9][0-9]* exchanges started, [1-9][0-9]* served"))
      << node0;
}

// The clock offsets of "hosts": the observed daemons stamp their samples with
// clocks shifted by --fault-clock-offset-ms, spread over 1800 ms (360 periods of 5 ms, where the
// simulator falls to chance uncorrected). Three probes watch at once: one estimating the offsets
// from the arrivals, one reading the stamps as one clock, one given the injected offsets. The
// estimating probe must find the injected offsets relative to each other within half a period (on
// loopback the smallest delays are well under that; the true offsets also differ by the instants of
// the daemons' two clock reads at start, microseconds) and infer as well as the probe without
// offsets (kMinAccuracy); the other must at least see the offsets (its printed estimate spans them,
// and it warns); the one given them must infer as well, without a warning.
TEST(PairwiseInferDaemon, EstimatedClockOffsetsOfInjectedSkewsAreCorrected) {
  TempDir dir;
  const int port = PortBase() + 8;
  const topology::Cluster cluster = MakeCluster(kNodes, kTopology, kGraphSeed, port);
  const std::string cluster_file = dir.path() + "/cluster.conf";
  topology::WriteClusterFile(cluster, cluster_file);
  const std::vector<double> injected_ms = {0, 500, -350, 1000, -800, 250};  // nodes 0-5
  std::vector<std::unique_ptr<Subprocess>> daemons;
  for (int i = 0; i < kNodes; ++i) {
    const double offset = i < kObserved ? injected_ms[i] : 0.0;
    daemons.push_back(
        std::make_unique<Subprocess>(std::vector<std::string>{kDaemon,
                                                              "--cluster",
                                                              cluster_file,
                                                              "--id",
                                                              std::to_string(i),
                                                              "--algorithm",
                                                              "pairwise-diffusion",
                                                              "--decay",
                                                              "0.75",
                                                              "--mix",
                                                              "0.5",
                                                              "--exchange-prob",
                                                              "1",
                                                              "--tick-ms",
                                                              "10",
                                                              "--iterations",
                                                              "100000",
                                                              "--seed",
                                                              "1",
                                                              "--allow-plaintext",
                                                              "--give-up-s",
                                                              "120",
                                                              "--fault-clock-offset-ms",
                                                              std::to_string(offset)},
                                     dir.path() + "/node-" + std::to_string(i) + ".log"));
  }
  const auto probe = [&](const std::string& offsets, const std::string& name) {
    return std::make_unique<Subprocess>(std::vector<std::string>{kProbe,
                                                                 "infer",
                                                                 "--cluster",
                                                                 cluster_file,
                                                                 "--observe",
                                                                 "0-5",
                                                                 "--samples",
                                                                 kSamples,
                                                                 "--period",
                                                                 "0.5",
                                                                 "--estimator",
                                                                 "granger,log-granger",
                                                                 "--clock-offsets",
                                                                 offsets,
                                                                 "--connect-timeout-s",
                                                                 "120",
                                                                 "--timeout-s",
                                                                 "400",
                                                                 "--out",
                                                                 dir.path() + "/" + name,
                                                                 "--plot-script",
                                                                 "",
                                                                 "--allow-plaintext"},
                                        dir.path() + "/" + name + ".log");
  };
  auto estimating = probe("estimate", "estimate");
  auto uncorrected = probe("zero", "zero");
  // The injected offsets given as known ones, as ID:MS.
  std::string known_list;
  for (int i = 0; i < kObserved; ++i) {
    known_list += (i ? "," : "") + std::to_string(i) + ":" + std::to_string(injected_ms[i]);
  }
  auto known = probe(known_list, "known");
  const int code = estimating->Wait(std::chrono::seconds(600));
  const int zero_code = uncorrected->Wait(std::chrono::seconds(600));
  const int known_code = known->Wait(std::chrono::seconds(600));
  for (auto& d : daemons) d->Signal(SIGTERM);
  for (int i = 0; i < kNodes; ++i) {
    EXPECT_EQ(daemons[i]->Wait(std::chrono::seconds(60)), 0)
        << ReadFile(dir.path() + "/node-" + std::to_string(i) + ".log");
  }
  const std::string log = ReadFile(dir.path() + "/estimate.log");
  const std::string zero_log = ReadFile(dir.path() + "/zero.log");
  const std::string known_log = ReadFile(dir.path() + "/known.log");
  std::printf("--clock-offsets estimate:\n%s\n--clock-offsets zero:\n%s\nknown:\n%s\n", log.c_str(),
              zero_log.c_str(), known_log.c_str());
  ASSERT_EQ(code, 0) << log;
  EXPECT_EQ(zero_code, 0) << zero_log;
  EXPECT_EQ(known_code, 0) << known_log;

  // "infer: clock offsets estimated (ms, node clock minus node R's): 0: +x 1: +y ..."
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      log, m,
      std::regex("clock offsets estimated \\(ms, node clock minus node ([0-9]+)'s\\):(.*)")))
      << log;
  const int reference = std::stoi(m[1]);
  ASSERT_LT(reference, kObserved);
  const std::string list = m[2];
  const std::regex item(" ([0-9]+): ([-+][0-9.]+)");
  int found = 0;
  double worst = 0;
  for (auto it = std::sregex_iterator(list.begin(), list.end(), item); it != std::sregex_iterator();
       ++it) {
    const int id = std::stoi((*it)[1]);
    const double estimated = std::stod((*it)[2]);
    ASSERT_LT(id, kObserved);
    const double error = estimated - (injected_ms[id] - injected_ms[reference]);
    worst = std::max(worst, std::abs(error));
    EXPECT_LE(std::abs(error), 2.5) << "node " << id << ": " << estimated << " ms\n" << log;
    ++found;
  }
  EXPECT_EQ(found, kObserved) << list;
  std::printf("largest error of an estimated relative offset: %.3f ms\n", worst);
  const Scores granger = ScoresOf(log, "granger");
  EXPECT_GE(granger.accuracy, kMinAccuracy) << log;
  EXPECT_GT(granger.sensitivity, 0.5) << log;
  EXPECT_GT(granger.specificity, 0.5) << log;
  EXPECT_GE(ScoresOf(log, "log-granger").accuracy, kMinAccuracy) << log;

  // The probe that reads one clock sees the skew and says so.
  ASSERT_TRUE(std::regex_search(zero_log, m, std::regex("estimated offsets span ([0-9.]+) ms")))
      << zero_log;
  EXPECT_NEAR(std::stod(m[1]), 1800.0, 5.0) << zero_log;
  EXPECT_THAT(zero_log, HasSubstr("consider --clock-offsets estimate"));

  // Known offsets: given relative to the grid's node, and inferring as well.
  EXPECT_THAT(known_log, HasSubstr("clock offsets given (ms, node clock minus node"));
  EXPECT_GE(ScoresOf(known_log, "granger").accuracy, kMinAccuracy) << known_log;
  EXPECT_THAT(known_log, ::testing::Not(HasSubstr("warning")));
}

// --clock-offsets: zero, estimate, or known offsets per observed node in ms.
TEST(InferProbeOptionsTest, ClockOffsetsAreZeroEstimateOrAListOfObservedNodes) {
  EXPECT_EQ(node::ParseClockOffsets("zero", {0, 3}).kind, node::ClockOffsetChoice::kZero);
  EXPECT_EQ(node::ParseClockOffsets("estimate", {0, 3}).kind, node::ClockOffsetChoice::kEstimate);
  const node::ClockOffsetChoice known = node::ParseClockOffsets("3:1.5,0:-250", {0, 3});
  EXPECT_EQ(known.kind, node::ClockOffsetChoice::kKnown);
  ASSERT_EQ(known.known_ms.size(), 2u);
  EXPECT_EQ(known.known_ms[0], std::make_pair(3, 1.5));
  EXPECT_EQ(known.known_ms[1], std::make_pair(0, -250.0));
  for (const char* bad : {"1:2", "0:1,0:2", "0", "0:x", "0:1ms", "a:1", "", "Estimate"}) {
    try {
      node::ParseClockOffsets(bad, {0, 3});
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr("--clock-offsets")) << bad;
    }
  }
}

// The acceptance criterion "a probe attached to a live run leaves it unchanged": D-PSGD daemons,
// which are deterministic, report every 2 ms with a --live probe watching four of them, and
// still end exactly at the simulator's models (the probe only subscribes; --telemetry-ms is not
// in the run id and does not enter the algorithm). The probe's accuracy is printed, not
// asserted (a live run's inference is weak: 0.67-0.87).
TEST(PairwiseInferDaemon, LiveProbeLeavesADpsgdRunUnchanged) {
  const std::string a9a = testing::SharedData("a9a");
  STARLING_REQUIRE_FILE(a9a);
  TempDir dir;
  const int n = 6;
  const int64_t iterations = 600;
  const topology::Cluster cluster = MakeCluster(n, "er:0.5", 3, PortBase() + 6);
  const std::string cluster_file = dir.path() + "/cluster.conf";
  topology::WriteClusterFile(cluster, cluster_file);
  Subprocess probe({kProbe,
                    "infer",
                    "--cluster",
                    cluster_file,
                    "--observe",
                    "0-3",
                    "--live",
                    "--period",
                    "2",
                    "--burn-in",
                    "0",
                    "--samples",
                    "1000000",
                    "--connect-timeout-s",
                    "120",
                    "--timeout-s",
                    "300",
                    "--out",
                    dir.path() + "/out",
                    "--plot-script",
                    "",
                    "--allow-plaintext"},
                   dir.path() + "/probe.log");
  std::vector<std::unique_ptr<Subprocess>> daemons;
  for (int i = 0; i < n; ++i) {
    const std::string id = std::to_string(i);
    daemons.push_back(
        std::make_unique<Subprocess>(std::vector<std::string>{kDaemon,
                                                              "--cluster",
                                                              cluster_file,
                                                              "--id",
                                                              id,
                                                              "--algorithm",
                                                              "dpsgd",
                                                              "--problem",
                                                              "logistic",
                                                              "--l2",
                                                              "1e-2",
                                                              "--data",
                                                              a9a,
                                                              "--format",
                                                              "libsvm",
                                                              "--iterations",
                                                              std::to_string(iterations),
                                                              "--batch",
                                                              "16",
                                                              "--seed",
                                                              "7",
                                                              "--telemetry-ms",
                                                              "2",
                                                              "--allow-plaintext",
                                                              "--give-up-s",
                                                              "120",
                                                              "--final-model",
                                                              dir.path() + "/model-" + id + ".txt"},
                                     dir.path() + "/node-" + id + ".log"));
  }
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(daemons[i]->Wait(std::chrono::seconds(300)), 0)
        << ReadFile(dir.path() + "/node-" + std::to_string(i) + ".log");
  }
  const int code = probe.Wait(std::chrono::seconds(120));
  const std::string log = ReadFile(dir.path() + "/probe.log");
  std::printf("%s\n", log.c_str());
  EXPECT_EQ(code, 0) << log;
  EXPECT_THAT(log, ::testing::ContainsRegex(
                       "--live: projections of the nodes' models \\(dimension [0-9]+\\)"));
  EXPECT_THAT(log, ::testing::ContainsRegex("granger: accuracy [0-9.]+"));

  const std::vector<Vec> simulated = testing::SimulatedA9aModels(
      "dpsgd", a9a, cluster_file, n, iterations, [](node::RunConfig* c) { c->batch = 16; });
  for (int i = 0; i < n; ++i) {
    const Vec model = testing::ReadModelFile(dir.path() + "/model-" + std::to_string(i) + ".txt");
    ASSERT_EQ(model.size(), simulated[i].size()) << "node " << i;
    EXPECT_LE((model - simulated[i]).norm(), 1e-9 * simulated[i].norm()) << "node " << i;
  }
}

// Publishes crafted telemetry as node `id` would, until stopped.
class FakeNode {
 public:
  FakeNode(zmq::context_t& context, const topology::Cluster& cluster, int id)
      : pub_(context, zmq::socket_type::pub), id_(id) {
    // Node i's telemetry endpoint: its peer endpoint's port + 1.
    const std::string& peer = cluster.nodes[id].endpoint;
    const size_t colon = peer.rfind(':');
    pub_.bind(peer.substr(0, colon + 1) + std::to_string(std::stoi(peer.substr(colon + 1)) + 1));
  }
  void Publish(net::Envelope e) {
    e.sender = id_;
    e.run_id = 42;
    const std::string bytes = net::Encode(e);
    pub_.send(zmq::buffer(bytes), zmq::send_flags::dontwait);
  }

 private:
  zmq::socket_t pub_;
  int id_;
};

// The options of a probe's intake watching fake nodes 0 and 1 over plaintext: `samples` pairs,
// and with `live`, reports at a 2 ms period from the first one.
node::InferProbeOptions IntakeOptions(int64_t samples, bool live) {
  node::InferProbeOptions options;
  options.observe = "0-1";
  options.samples = samples;
  options.allow_plaintext = true;
  options.connect_timeout_seconds = 30;
  options.timeout_seconds = 60;
  if (live) {
    options.live = true;
    options.period = 2;
    options.burn_in = 0;
  }
  return options;
}

TEST(PairwiseInferDaemon, IntakeCountsMalformedBatchesAndRefusesMixedKinds) {
  const int port = PortBase() + 2;
  const topology::Cluster cluster = MakeCluster(4, "ring", 1, port);
  zmq::context_t context(1);
  FakeNode timed(context, cluster, 0), stepped(context, cluster, 1);
  node::InferProbeOptions options = IntakeOptions(1000000, /*live=*/false);
  std::ostringstream out;
  node::SampleCollector collector(cluster, {0, 1}, options, out);

  std::atomic<bool> stop_publishing{false};
  std::thread publisher([&] {
    std::vector<double> times(8), values(8, 1.0);
    int64_t seq = 0;
    while (!stop_publishing.load()) {
      for (int m = 0; m < 8; ++m) times[m] = 1e6 + 1e4 * static_cast<double>(seq + m);
      node::TimedSampleBatcher batcher(8, 0, 1e4);
      for (int m = 0; m < 8; ++m) batcher.Add(times[m], values[m], 0);
      net::Envelope good = batcher.Take();
      good.telemetry[0].value = static_cast<double>(seq);  // the first seq
      timed.Publish(good);
      // The same batch claiming 9 samples: malformed, counted, not used.
      good.telemetry[1].value = 9;
      timed.Publish(good);
      seq += 8;
      // After a while, node 1 publishes stepped samples.
      if (seq > 400) {
        node::SampleBatcher steps(4, 0);
        for (int t = 0; t < 4; ++t) steps.Add(t, 0.5, 0);
        stepped.Publish(steps.Take());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  std::atomic<bool> stop{false};
  std::string error;
  try {
    collector.Collect(&stop);
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  stop_publishing = true;
  publisher.join();
  EXPECT_THAT(error, HasSubstr("node 1 publishes stepped samples (starlingd --algorithm "
                               "diffusion) but node 0 published time-stamped samples"))
      << out.str();
  EXPECT_THAT(error, HasSubstr("must run one kind of diffusion"));
  collector.PrintTally();
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("rejected [1-9][0-9]* malformed")) << out.str();
}

// --live --live-stamps arrival: the intake takes the models of an optimization's reports,
// projects them, and aligns the projections by arrival time; a model of another dimension is
// counted as rejected, and a sample batch is refused as a kind mix.
TEST(PairwiseInferDaemon, LiveIntakeProjectsReportsAndRefusesSampleBatches) {
  const int port = PortBase() + 4;
  const topology::Cluster cluster = MakeCluster(4, "ring", 1, port);
  zmq::context_t context(1);
  FakeNode a(context, cluster, 0), b(context, cluster, 1);
  node::InferProbeOptions options = IntakeOptions(50, /*live=*/true);
  options.live_stamps = "arrival";
  std::ostringstream out;
  node::SampleCollector collector(cluster, {0, 1}, options, out);
  std::atomic<bool> stop_publishing{false};
  std::thread publisher([&] {
    Vec model = Vec::Zero(3), wrong = Vec::Zero(4);
    for (int t = 0; !stop_publishing.load(); ++t) {
      net::Envelope report;
      report.type = net::MessageType::kTelemetry;
      report.telemetry = {{"iteration", static_cast<double>(t)}, {"final", 0.0}};
      model << std::sin(0.1 * t), std::cos(0.3 * t), 0.5;
      report.payloads = {net::Float64Payload(model.data(), 3)};
      a.Publish(report);
      b.Publish(report);
      if (t % 10 == 0) {
        report.payloads = {net::Float64Payload(wrong.data(), 4)};
        b.Publish(report);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::atomic<bool> stop{false};
  const bool collected = collector.Collect(&stop);
  stop_publishing = true;
  publisher.join();
  ASSERT_TRUE(collected) << out.str();
  EXPECT_EQ(collector.pairs(), 50) << out.str();
  collector.PrintTally();
  EXPECT_THAT(out.str(), HasSubstr("--live: projections of the nodes' models (dimension 3)"));
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("rejected [1-9][0-9]* malformed"));
  // A sample batch in a live probe is the wrong kind.
  options.samples = 1000000;
  node::SampleCollector second(cluster, {0, 1}, options, out);
  std::atomic<bool> publishing_steps{true};
  std::string error;
  std::thread stepper([&] {
    while (publishing_steps.load()) {
      node::SampleBatcher batch(4, 0);
      batch.Add(0, 0.5, 0);
      a.Publish(batch.Take());
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  try {
    second.Collect(&stop);
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  publishing_steps = false;
  stepper.join();
  EXPECT_THAT(error, HasSubstr("--live: node 0 publishes stepped samples"));
}

// --live with the nodes' own stamps (the default): two nodes publish the same series with the
// same stamps (1 ms apart), one a report at a time, the other in bursts of 10 (as a descheduled
// process delivers them). Aligned by stamp, both nodes' values on every grid point are equal,
// so the lag-0 moments are too (by arrival, the bursts shift the second node's series by up to
// 10 ms). A report without a stamp is refused, naming the node.
TEST(PairwiseInferDaemon, LiveReportsAreAlignedByTheNodesStamps) {
  const int port = PortBase() + 10;
  const topology::Cluster cluster = MakeCluster(4, "ring", 1, port);
  zmq::context_t context(1);
  FakeNode a(context, cluster, 0), b(context, cluster, 1);
  node::InferProbeOptions options = IntakeOptions(200, /*live=*/true);
  options.timeout_seconds = 120;
  const auto report = [](int t, bool stamped) {
    static thread_local Vec model(3);
    model << std::sin(0.1 * t), std::cos(0.37 * t), 0.5 * std::sin(0.05 * t);
    net::Envelope e;
    e.type = net::MessageType::kTelemetry;
    e.telemetry = {{"iteration", static_cast<double>(t)}, {"final", 0.0}};
    if (stamped) e.telemetry.push_back({node::kStampField, 1.7e15 + 1000.0 * t});
    e.payloads = {net::Float64Payload(model.data(), 3)};
    return e;
  };
  std::ostringstream out;
  node::SampleCollector collector(cluster, {0, 1}, options, out);
  std::atomic<bool> stop_publishing{false};
  std::thread publisher([&] {
    for (int t = 0; !stop_publishing.load(); ++t) {
      a.Publish(report(t, true));
      if (t % 10 == 9) {
        for (int u = t - 9; u <= t; ++u) b.Publish(report(u, true));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::atomic<bool> stop{false};
  const bool collected = collector.Collect(&stop);
  stop_publishing = true;
  publisher.join();
  ASSERT_TRUE(collected) << out.str();
  ASSERT_GE(collector.pairs(), 200) << out.str();
  const topology::Moments m = collector.FinishMoments();
  EXPECT_GT(m.r0(0, 0), 0.0);
  EXPECT_NEAR(m.r0(0, 1), m.r0(0, 0), 1e-12 * m.r0(0, 0)) << out.str();
  EXPECT_NEAR(m.r0(1, 1), m.r0(0, 0), 1e-12 * m.r0(0, 0)) << out.str();
  EXPECT_NEAR(m.r1(0, 1), m.r1(1, 0), 1e-12 * m.r0(0, 0)) << out.str();
  EXPECT_THAT(out.str(), HasSubstr("stamped by the nodes"));

  // Reports without a stamp (an older starlingd) are refused, naming the node.
  options.samples = 1000000;
  node::SampleCollector second(cluster, {0, 1}, options, out);
  std::atomic<bool> publishing{true};
  std::thread unstamped([&] {
    for (int t = 0; publishing.load(); ++t) {
      a.Publish(report(t, true));
      b.Publish(report(t, false));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::string error;
  try {
    second.Collect(&stop);
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  publishing = false;
  unstamped.join();
  EXPECT_THAT(error, HasSubstr("node 1's reports carry no time stamp"));
  EXPECT_THAT(error, HasSubstr("--live-stamps arrival"));
}

TEST(TickClock, FixedAndPoissonGaps) {
  node::TickClock fixed(10000, false, 7);
  for (int k = 0; k < 5; ++k) EXPECT_EQ(fixed.NextGapUs(), 10000);
  node::TickClock a(10000, true, 7), b(10000, true, 7), c(10000, true, 8);
  double sum = 0, sum_sq = 0;
  bool differs = false;
  constexpr int kDraws = 200000;
  for (int k = 0; k < kDraws; ++k) {
    const int64_t gap = a.NextGapUs();
    ASSERT_EQ(gap, b.NextGapUs());  // seeded
    differs |= gap != c.NextGapUs();
    ASSERT_GE(gap, 1);
    sum += static_cast<double>(gap);
    sum_sq += static_cast<double>(gap) * static_cast<double>(gap);
  }
  EXPECT_TRUE(differs);
  // Exponential of mean 1e4: mean 1e4 and standard deviation 1e4 (standard error of the mean
  // 1e4 / sqrt(2e5) = 22).
  const double mean = sum / kDraws;
  EXPECT_NEAR(mean, 10000, 150);
  EXPECT_NEAR(std::sqrt(sum_sq / kDraws - mean * mean), 10000, 300);
  EXPECT_THROW(node::TickClock(0, true, 1), std::invalid_argument);
}

TEST(TimedSampleTelemetry, RoundTripAndRejects) {
  node::TimedSampleBatcher batcher(3, 1000, 2500.0);
  batcher.Add(10.0, 1.5, 0);
  batcher.Add(20.0, -2.5, 0);
  EXPECT_FALSE(batcher.Due(999));
  batcher.Add(30.0, 3.5, 0);
  EXPECT_TRUE(batcher.Due(0));  // full
  net::Envelope e = batcher.Take();
  e.sender = 5;
  // Through the codec, as a probe receives it.
  net::Envelope d;
  net::Reject reject;
  const std::string bytes = net::Encode(e);
  ASSERT_TRUE(net::Decode(bytes.data(), bytes.size(), net::LimitsForRun(node::kMaxSampleBatch, 2),
                          &d, &reject));
  EXPECT_EQ(node::SampleKindOf(d), node::SampleKind::kTimed);
  auto batch = node::ParseTimedSampleBatch(d);
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->sender, 5);
  EXPECT_EQ(batch->first_seq, 0);
  EXPECT_EQ(batch->tick_us, 2500.0);
  EXPECT_EQ(batch->times, (std::vector<double>{10, 20, 30}));
  EXPECT_EQ(batch->values, (std::vector<double>{1.5, -2.5, 3.5}));
  // The next batch continues the seqs.
  batcher.Add(40.0, 0.0, 0);
  net::Envelope next = batcher.Take();
  ASSERT_TRUE(node::ParseTimedSampleBatch(next).has_value());
  EXPECT_EQ(node::ParseTimedSampleBatch(next)->first_seq, 3);

  const auto with_field = [&](int index, double value) {
    net::Envelope bad = d;
    bad.telemetry[index].value = value;
    return node::ParseTimedSampleBatch(bad).has_value();
  };
  EXPECT_FALSE(with_field(0, -1));   // negative seq
  EXPECT_FALSE(with_field(0, 1.5));  // not an integer
  EXPECT_FALSE(with_field(0, 0x1.0p53));
  EXPECT_FALSE(with_field(1, 2));  // count differs from the payloads
  EXPECT_FALSE(with_field(1, 0));
  EXPECT_FALSE(with_field(2, 0));  // no tick
  EXPECT_FALSE(with_field(2, NAN));
  EXPECT_FALSE(with_field(2, 1e10));
  net::Envelope one = d;
  one.payloads.pop_back();
  EXPECT_FALSE(node::ParseTimedSampleBatch(one).has_value());
  // A stepped batch is not a timed one, and the other way round.
  node::SampleBatcher steps(4, 0);
  steps.Add(7, 0.5, 0);
  const net::Envelope stepped = steps.Take();
  EXPECT_EQ(node::SampleKindOf(stepped), node::SampleKind::kStepped);
  EXPECT_FALSE(node::ParseTimedSampleBatch(stepped).has_value());
  EXPECT_FALSE(node::ParseSampleBatch(d).has_value());
}

}  // namespace
}  // namespace starling
