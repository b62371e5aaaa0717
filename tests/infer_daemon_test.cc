// Topology inference against real processes: 16 starlingd nodes run the diffusion on loopback
// and `starling-probe infer` watches 8 of them. The true graph is
// the cluster file's; the expected accuracy (1.0) is the acceptance criterion, and the sample
// count was chosen from the simulator on this graph (Granger reaches 1.0 from 1000 samples on
// six seeds), with a margin of three.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/round/diffusion.h"
#include "node/config/run_setup.h"
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
constexpr int kNodes = 16;

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("starling-infer-" + std::to_string(getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

// ER(16, 0.25), seed 1 (the graph `starling-probe cluster --topology er:0.25 --seed 1` writes),
// node i at 127.0.0.(i+1):port.
std::string WriteCluster(const std::string& dir, int port) {
  topology::Cluster cluster;
  cluster.graph = topology::MakeTopology("er:0.25", kNodes, 1);
  for (int i = 0; i < kNodes; ++i) {
    cluster.nodes.push_back(
        {i, "tcp://127.0.0." + std::to_string(i + 1) + ":" + std::to_string(port), ""});
  }
  const std::string path = dir + "/cluster.conf";
  topology::WriteClusterFile(cluster, path);
  return path;
}

std::string MetricsPath(const std::string& dir, int i) {
  return dir + "/metrics-" + std::to_string(i) + ".jsonl";
}

// A metrics file with a line whose "iter" is not 0.
bool PastStepZero(const std::string& metrics) {
  const std::string key = "\"iter\":";
  for (size_t at = metrics.find(key); at != std::string::npos; at = metrics.find(key, at + 1)) {
    const char next = at + key.size() < metrics.size() ? metrics[at + key.size()] : '0';
    if (next >= '1' && next <= '9') return true;
  }
  return false;
}

// True once every daemon's metrics file has a line past step 0 (each has started stepping), or
// false at the deadline.
bool WaitUntilEveryDaemonSteps(const std::string& dir, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int i = 0; i < kNodes; ++i) {
    while (!PastStepZero(ReadFile(MetricsPath(dir, i)))) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return true;
}

std::vector<std::unique_ptr<Subprocess>> StartDaemons(const std::string& dir,
                                                      const std::string& cluster,
                                                      int64_t iterations,
                                                      const std::vector<std::string>& extra = {}) {
  std::vector<std::unique_ptr<Subprocess>> daemons;
  for (int i = 0; i < kNodes; ++i) {
    std::vector<std::string> argv = {kDaemon,
                                     "--cluster",
                                     cluster,
                                     "--id",
                                     std::to_string(i),
                                     "--algorithm",
                                     "diffusion",
                                     "--rho",
                                     "0.75",
                                     "--c",
                                     "0.9",
                                     "--iterations",
                                     std::to_string(iterations),
                                     "--allow-plaintext",
                                     "--give-up-s",
                                     "60"};
    for (const auto& e : extra) {
      argv.push_back(e);
      if (e == "--final-model") argv.push_back(dir + "/final-" + std::to_string(i) + ".txt");
      if (e == "--metrics") argv.push_back(MetricsPath(dir, i));
    }
    daemons.push_back(
        std::make_unique<Subprocess>(argv, dir + "/node-" + std::to_string(i) + ".log"));
  }
  return daemons;
}

std::vector<std::string> ProbeArgs(const std::string& cluster, const std::string& out) {
  return {kProbe,  "infer", "--cluster",        cluster, "--observe", "0-7",
          "--out", out,     "--allow-plaintext"};
}

int RunProbe(std::vector<std::string> argv, const std::string& log, int seconds = 90) {
  Subprocess probe(argv, log);
  return probe.Wait(std::chrono::seconds(seconds));
}

int CountLines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

// The acceptance run: a probe attached 2 s into a run, and a second, lossy one (a slow
// subscriber that loses 5% of the sample batches) at the same time; both recover the sub-graph
// among nodes 0..7 exactly.
TEST(InferDaemon, ProbesRecoverTheObservedSubgraphOfARunUnderWay) {
  TempDir dir;
  const std::string cluster = WriteCluster(dir.path(), PortBase());
  auto daemons = StartDaemons(dir.path(), cluster, 10000000, {"--metrics"});
  // The run is under way: every daemon has reported a step past 0.
  ASSERT_TRUE(WaitUntilEveryDaemonSteps(dir.path(), std::chrono::seconds(120)))
      << ReadFile(dir.path() + "/node-0.log");

  std::vector<std::string> a = ProbeArgs(cluster, dir.path() + "/a");
  a.insert(a.end(), {"--samples", "3000", "--estimator", "all"});
  std::vector<std::string> b = ProbeArgs(cluster, dir.path() + "/b");
  b.insert(b.end(), {"--samples", "3000", "--drop-fraction", "0.05", "--plot-script", ""});
  Subprocess probe_a(a, dir.path() + "/probe-a.log");
  Subprocess probe_b(b, dir.path() + "/probe-b.log");
  const int code_a = probe_a.Wait(std::chrono::seconds(120));
  const int code_b = probe_b.Wait(std::chrono::seconds(60));
  for (auto& d : daemons) d->Signal(SIGTERM);
  for (auto& d : daemons) EXPECT_EQ(d->Wait(std::chrono::seconds(20)), 0);

  const std::string log_a = ReadFile(dir.path() + "/probe-a.log");
  const std::string log_b = ReadFile(dir.path() + "/probe-b.log");
  ASSERT_EQ(code_a, 0) << log_a;
  ASSERT_EQ(code_b, 0) << log_b;
  EXPECT_THAT(log_a, HasSubstr("granger: accuracy 1 ")) << log_a;
  EXPECT_THAT(log_b, HasSubstr("granger: accuracy 1 ")) << log_b;
  // The slow subscriber lost steps and still used only complete ones.
  EXPECT_THAT(log_b, ::testing::ContainsRegex("[1-9][0-9]* steps not seen from every observed"))
      << log_b;
  EXPECT_THAT(log_b, ::testing::ContainsRegex("[1-9][0-9]* discarded by --drop-fraction"));
  std::printf("%s\n%s\n", log_a.c_str(), log_b.c_str());

  // Files: 28 pairs per estimator (4 estimators, "all") plus a header; a DOT graph; the summary.
  EXPECT_EQ(CountLines(ReadFile(dir.path() + "/a/edges.tsv")), 1 + 4 * 28);
  const std::string dot = ReadFile(dir.path() + "/a/inferred.dot");
  EXPECT_THAT(dot, HasSubstr("graph inferred {"));
  EXPECT_THAT(dot, ::testing::Not(HasSubstr("color=red")));
  EXPECT_EQ(CountLines(ReadFile(dir.path() + "/a/summary.jsonl")), 4);
  // Every true edge among 0..7 appears in the DOT file as inferred and true (green).
  const topology::Graph g = topology::MakeTopology("er:0.25", kNodes, 1);
  for (int i = 0; i < 8; ++i) {
    for (int j = i + 1; j < 8; ++j) {
      const std::string edge = std::to_string(i) + " -- " + std::to_string(j) + " [color=green";
      EXPECT_EQ(dot.find(edge) != std::string::npos, g.HasEdge(i, j)) << edge;
    }
  }
  if (std::system("/usr/bin/python3 -c 'import matplotlib' 2>/dev/null") == 0) {
    EXPECT_TRUE(std::filesystem::exists(dir.path() + "/a/inference.png")) << log_a;
  }
}

// A short run: the daemons' states equal the simulator's bit for bit, and a probe asking for
// more samples than the run gives fails with a message saying how many it got.
TEST(InferDaemon, ShortRunEqualsTheSimulatorAndTooFewSamplesIsAnError) {
  TempDir dir;
  const std::string cluster = WriteCluster(dir.path(), PortBase() + 2);
  std::vector<std::string> probe = ProbeArgs(cluster, dir.path() + "/out");
  // Steps from 390 of a 400-step run: at most 10 pairs, fewer than Granger's 16 for 8 nodes.
  probe.insert(probe.end(), {"--samples", "100000", "--burn-in", "390", "--plot-script", ""});
  Subprocess p(probe, dir.path() + "/probe.log");
  // The daemons start once the probe has connected its subscribers (its first line).
  ASSERT_TRUE(testing::WaitForLogText(dir.path() + "/probe.log", "infer: watching nodes",
                                      std::chrono::seconds(60)))
      << ReadFile(dir.path() + "/probe.log");
  const int64_t steps = 400;
  auto daemons = StartDaemons(dir.path(), cluster, steps, {"--final-model"});
  for (auto& d : daemons) EXPECT_EQ(d->Wait(std::chrono::seconds(60)), 0);
  const int code = p.Wait(std::chrono::seconds(30));
  const std::string log = ReadFile(dir.path() + "/probe.log");
  EXPECT_EQ(code, 3) << log;
  EXPECT_THAT(log, ::testing::ContainsRegex("only [0-9]+ aligned sample pairs \\(the observed "
                                            "nodes have finished\\); the estimator needs at "
                                            "least 16"))
      << log;

  node::RunConfig config;
  config.algorithm = "diffusion";
  config.nodes = kNodes;
  config.topology = "file:" + cluster;
  config.seed = 1;
  const node::RunSetup setup = node::BuildRunSetup(config);
  algorithms::DiffusionParams params;
  params.max_degree = setup.graph.MaxDegree();
  algorithms::DiffusionNetwork network(setup.nodes, params);
  while (network.step() < steps) network.Step();
  for (int i = 0; i < kNodes; ++i) {
    std::ifstream in(dir.path() + "/final-" + std::to_string(i) + ".txt");
    double y = NAN;
    in >> y;
    EXPECT_EQ(y, network.state()[i]) << "node " << i;
  }
}

TEST(InferDaemon, BadProbeInputGivesAClearMessage) {
  TempDir dir;
  const std::string cluster = WriteCluster(dir.path(), PortBase() + 4);
  {
    std::vector<std::string> argv = ProbeArgs(cluster, dir.path() + "/o");
    argv[5] = "0-16";
    EXPECT_EQ(RunProbe(argv, dir.path() + "/1.log"), 2);
    EXPECT_THAT(ReadFile(dir.path() + "/1.log"), HasSubstr("--observe: node 16 is not in"));
  }
  {
    std::vector<std::string> argv = ProbeArgs(cluster, dir.path() + "/o");
    argv.insert(argv.end(), {"--samples", "10"});
    EXPECT_EQ(RunProbe(argv, dir.path() + "/2.log"), 2);
    EXPECT_THAT(ReadFile(dir.path() + "/2.log"),
                HasSubstr("--samples 10: the granger estimator needs at least 16 for 8 observed"));
  }
  {
    // Nobody runs: the deadline names the first silent node and its telemetry endpoint.
    std::vector<std::string> argv = ProbeArgs(cluster, dir.path() + "/o");
    argv.insert(argv.end(), {"--connect-timeout-s", "1"});
    EXPECT_EQ(RunProbe(argv, dir.path() + "/3.log"), 3);
    EXPECT_THAT(ReadFile(dir.path() + "/3.log"),
                HasSubstr("no telemetry from node 0 at tcp://127.0.0.1:" +
                          std::to_string(PortBase() + 5) + " within 1 s"));
  }
  {
    std::vector<std::string> argv = ProbeArgs(cluster, dir.path() + "/o");
    argv[5] = "3";
    EXPECT_EQ(RunProbe(argv, dir.path() + "/4.log"), 2);
    EXPECT_THAT(ReadFile(dir.path() + "/4.log"), HasSubstr("at least two node ids"));
  }
  {
    std::vector<std::string> argv = ProbeArgs(cluster, dir.path() + "/o");
    argv.insert(argv.end(), {"--estimator", "lasso"});
    EXPECT_EQ(RunProbe(argv, dir.path() + "/5.log"), 2);
    EXPECT_THAT(ReadFile(dir.path() + "/5.log"), HasSubstr("--estimator 'lasso': unknown"));
  }
}

}  // namespace
}  // namespace starling
