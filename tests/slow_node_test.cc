// --slow-node NODE:FACTOR (node/config/slow_nodes.h): the option's checks; in the pairwise
// simulator the slow node is activated FACTOR times less often than the others (its event
// model), and only that node; the lockstep simulator refuses it; in real daemons the slow node
// takes about FACTOR times as long per local step as the others.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "node/config/run_options.h"
#include "node/config/slow_nodes.h"
#include "node/sim/pairwise_simulator.h"
#include "node/sim/sim_runner.h"
#include "tests/daemon_cluster.h"
#include "tests/fake_quadratic.h"
#include "tests/pairwise_daemon_fixture.h"
#include "tests/subprocess.h"
#include "tests/written_data.h"
#include "topology/generators.h"
#include "topology/mixing.h"

namespace starling {
namespace {

void ExpectRefused(const std::string& spec, int nodes, const std::string& part) {
  try {
    node::SlowFactors(spec, nodes);
    ADD_FAILURE() << "'" << spec << "' accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--slow-node"), std::string::npos) << what;
    EXPECT_NE(what.find(part), std::string::npos) << what;
  }
}

TEST(SlowNode, ParsesAndRefuses) {
  EXPECT_EQ(node::SlowFactors("", 3), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(node::SlowFactors("2:4", 3), (std::vector<double>{1, 1, 4}));
  EXPECT_EQ(node::SlowFactors("0:1.5,2:8", 3), (std::vector<double>{1.5, 1, 8}));
  ExpectRefused("3:4", 3, "not in 0..2");
  ExpectRefused("1", 3, "NODE:FACTOR");
  ExpectRefused("1:", 3, "NODE:FACTOR");
  ExpectRefused("a:2", 3, "'a'");
  ExpectRefused("-1:2", 3, "'-1'");
  ExpectRefused("1:0.5", 3, "FACTOR '0.5'");
  ExpectRefused("1:nan", 3, "FACTOR 'nan'");
  ExpectRefused("1:inf", 3, "FACTOR 'inf'");
  ExpectRefused("1:2x", 3, "FACTOR '2x'");
  ExpectRefused("1:2,1:3", 3, "twice");
  ExpectRefused("1:2,", 3, "trailing");
  // ValidateRunConfig checks what it can without the node count (a daemon learns it from the
  // cluster file).
  node::RunConfig c;
  c.data = "x.csv";
  c.slow_nodes = "1:0";
  EXPECT_THROW(node::ValidateRunConfig(c), std::invalid_argument);
  c.slow_nodes = "100:4";
  EXPECT_NO_THROW(node::ValidateRunConfig(c));
}

// The event model: with node 2 four times slower, it does about a quarter of the local steps of
// each of the others, and the others are all alike.
TEST(SlowNode, PairwiseSimulatorActivatesTheSlowNodeLessOften) {
  const int n = 6;
  const topology::Graph graph = topology::Ring(n);
  const Eigen::MatrixXd w = topology::MetropolisHastings(graph);
  testing::FakeQuadratic problem(Vec::Constant(2, 1.0), Vec::Constant(2, 1.0));
  std::vector<algorithms::NodeSetup> setups;
  for (int i = 0; i < n; ++i) {
    algorithms::NodeSetup s = node::NodeSetupOf(graph, w, i);
    s.problem = &problem;
    s.x0 = Vec::Zero(2);
    setups.push_back(s);
  }
  algorithms::PairwiseOptions o;
  o.algorithm = "swarmsgd";
  o.step = 0.1;
  for (const double k : {1.0, 4.0}) {
    node::PairwiseSimulator sim(setups, o, 3);
    std::vector<double> factors(n, 1.0);
    factors[2] = k;
    sim.SetSlowFactors(factors);
    sim.RunUntilLocalSteps(20000);
    std::vector<double> steps;
    for (int i = 0; i < n; ++i) steps.push_back(sim.node(i).counters().local_steps);
    double others = 0.0;
    for (int i = 0; i < n; ++i) others += i == 2 ? 0.0 : steps[i] / (n - 1);
    const double ratio = steps[2] / others;
    std::printf("factor %.0f: node 2 did %.0f local steps, the others %.0f on average\n", k,
                steps[2], others);
    EXPECT_NEAR(ratio, 1.0 / k, 0.05 / k);
    for (int i = 0; i < n; ++i) {
      if (i != 2) EXPECT_NEAR(steps[i] / others, 1.0, 0.05) << "node " << i;
    }
  }
}

TEST(SlowNode, UniformWhenNoNodeIsSlow) {
  // All factors 1: the same draws as without the option (runs are unchanged bit for bit).
  node::ActivationPicker picker(5);
  picker.SetSlowFactors({1, 1, 1, 1, 1});
  std::mt19937_64 a(9), b(9);
  for (int t = 0; t < 100; ++t) EXPECT_EQ(picker.Pick(a), b() % 5);
}

// Round-based methods run in lockstep in the simulator: the option is refused there, naming it.
TEST(SlowNode, LockstepSimulatorRefusesIt) {
  const std::string dir = testing::FreshTempDir("slow-node-sim");
  {
    std::ofstream out(dir + "/d.csv");
    for (int r = 0; r < 20; ++r) out << r % 3 << ',' << r * 0.1 << ',' << 1.0 - r * 0.05 << '\n';
  }
  node::RunConfig c;
  c.algorithm = "extra";
  c.problem = "least-squares";
  c.data = dir + "/d.csv";
  c.format = "csv";
  c.nodes = 4;
  c.iterations = 5;
  c.slow_nodes = "1:4";
  const node::RunSetup setup = node::BuildRunSetup(c, {});
  try {
    node::RunSimulation(c, setup, {});
    ADD_FAILURE() << "--slow-node accepted for a round-based simulation";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--slow-node"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

// The first metrics line of a node at or beyond `steps` local steps: its `time` less its
// `startup_s` (seconds since its neighbours were up: nodes start at different times) and its
// `compute_s`.
struct Reached {
  double time = -1, compute = -1;
};
Reached FirstAt(const std::string& path, int64_t steps) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("\"iter\":") == std::string::npos) continue;
    if (testing::MetricsField(line, "iter") >= steps) {
      return {testing::MetricsField(line, "time") - testing::MetricsField(line, "startup_s"),
              testing::MetricsField(line, "compute_s")};
    }
  }
  return {};
}

// Real daemons (pairwise, no progress gate): node 1, four times slower, takes about four times
// as long per local step and to its budget as the others. Each step also takes 4 ms of
// --compute-delay-ms, so that a step's time is mostly known; the bounds are loose (2x), since
// the others also wait on exchanges.
TEST(SlowNode, DaemonStepsOfTheSlowNodeTakeLonger) {
  const std::string dir = testing::FreshTempDir("slow-node-daemons");
  {
    std::ofstream out(dir + "/d.csv");
    for (int r = 0; r < 200; ++r)
      out << (r % 7) * 0.3 << ',' << r * 0.01 << ',' << 1.0 - r * 0.005 << '\n';
  }
  const int n = 4;
  const int64_t budget = 300;
  const std::string cluster =
      testing::WriteLoopbackCluster(dir, topology::Ring(n), testing::PortBase() + 10, false);
  std::vector<std::unique_ptr<testing::Subprocess>> procs;
  for (int i = 0; i < n; ++i) {
    const std::string id = std::to_string(i);
    procs.push_back(std::make_unique<testing::Subprocess>(
        std::vector<std::string>{testing::kDaemonBinary,
                                 "--cluster",
                                 cluster,
                                 "--id",
                                 id,
                                 "--allow-plaintext",
                                 "--algorithm",
                                 "swarmsgd",
                                 "--problem",
                                 "least-squares",
                                 "--data",
                                 dir + "/d.csv",
                                 "--format",
                                 "csv",
                                 "--iterations",
                                 std::to_string(budget),
                                 "--step",
                                 "0.01",
                                 "--progress-window",
                                 "0",
                                 "--compute-delay-ms",
                                 "4",
                                 "--slow-node",
                                 "1:4",
                                 "--telemetry-ms",
                                 "50",
                                 "--metrics",
                                 dir + "/node-" + id + ".jsonl"},
        dir + "/node-" + id + ".log"));
  }
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(procs[i]->Wait(std::chrono::seconds(300)), 0)
        << testing::ReadFile(dir + "/node-" + std::to_string(i) + ".log");
  }
  std::vector<Reached> r;
  for (int i = 0; i < n; ++i) {
    r.push_back(FirstAt(dir + "/node-" + std::to_string(i) + ".jsonl", budget));
    std::printf("node %d reached %lld steps at %.2f s, compute %.2f s\n", i,
                static_cast<long long>(budget), r[i].time, r[i].compute);
    ASSERT_GT(r[i].time, 0) << "node " << i << " has no metrics line at its budget";
  }
  for (int i : {0, 2, 3}) {
    EXPECT_GE(r[1].compute, 2.5 * r[i].compute) << "node " << i;
    EXPECT_GE(r[1].time, 2.0 * r[i].time) << "node " << i;
  }
  std::filesystem::remove_all(dir);
}

// The three numbers of a daemon's log line "node I: N local steps or solves taken in the message
// handler, charged S s of compute; M messages waited for the charge" (pairwise_node.cc); N = -1
// if the log has none.
struct HandlerCharge {
  long long computations = -1;
  double seconds = -1;
  long long deferred = -1;
};
HandlerCharge ChargeLine(const std::string& log) {
  const size_t at = log.find(" taken in the message handler, charged ");
  if (at == std::string::npos) return {};
  HandlerCharge c;
  c.computations = std::atoll(log.c_str() + log.rfind(": ", at) + 2);
  const size_t s = log.find("charged ", at) + 8;
  c.seconds = std::atof(log.c_str() + s);
  c.deferred = std::atoll(log.c_str() + log.find("; ", s) + 2);
  return c;
}

// Edge ADMM's responder solves (async_admm.h: Respond solves the local problem as a local step
// does) are charged the straggler's compute time too, so that a k-times-slower node is k times
// slower at either end of an exchange (catch_up_charge.h). Before, only its local steps paid:
// the slow node served its neighbours' requests, solve included, at full speed while serving
// during its own slowed step, and no solve in a handler was ever charged. The slow node must
// report its responder solves as charged, each at least FACTOR x the delay, and the replies that
// carried them must have waited for the charge.
TEST(SlowNode, AdmmResponderSolvesOfTheSlowNodeAreCharged) {
  const std::string dir = testing::FreshTempDir("slow-node-admm");
  testing::WriteLeastSquares(dir + "/ls.txt", 200, 5, 9);
  const int n = 4, slow = 1;
  const double delay_ms = 3, factor = 4;
  const std::string cluster =
      testing::WriteLoopbackCluster(dir, topology::Ring(n), testing::PortBase() + 0, false);
  const std::vector<std::string> args = {"--algorithm",
                                         "async-admm",
                                         "--problem",
                                         "least-squares",
                                         "--l2",
                                         "1e-2",
                                         "--data",
                                         dir + "/ls.txt",
                                         "--format",
                                         "libsvm",
                                         "--iterations",
                                         "200",
                                         "--seed",
                                         "4",
                                         "--progress-window",
                                         "0",
                                         "--compute-delay-ms",
                                         "3",
                                         "--slow-node",
                                         "1:4",
                                         "--exchange-timeout-ms",
                                         "5000"};
  std::vector<std::unique_ptr<testing::Subprocess>> procs;
  for (int i = 0; i < n; ++i) {
    procs.push_back(testing::Start(dir, cluster, i, args, testing::NodePath(dir, "log", i)));
  }
  testing::WaitAll(&procs, dir);
  for (int i = 0; i < n; ++i) {
    const HandlerCharge c = ChargeLine(testing::ReadFile(testing::NodePath(dir, "log", i)));
    std::printf("node %d: %lld responder solves charged, %.3f s, %lld messages waited\n", i,
                c.computations, c.seconds, c.deferred);
  }
  const std::string log = testing::ReadFile(testing::NodePath(dir, "log", slow));
  const HandlerCharge c = ChargeLine(log);
  ASSERT_GT(c.computations, 0) << "no responder solve charged:\n" << log;
  // Each owes delay + (factor - 1) x (its measured time + delay) >= factor x delay.
  EXPECT_GE(c.seconds, 0.99 * static_cast<double>(c.computations) * factor * delay_ms / 1e3);
  EXPECT_GT(c.deferred, 0) << "no reply waited for the solve it carries";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace starling
