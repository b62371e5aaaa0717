// Bad input to the binaries gives one clear line naming the file, line, option, node or
// endpoint, and exit code 2 (or, for a neighbour that never answers, periodic waiting lines and
// exit code 3 at the deadline), never a crash or a hang.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "tests/subprocess.h"
#include "tests/temp_dir_test.h"
#include "tests/test_data.h"

namespace starling {
namespace {

namespace fs = std::filesystem;
using testing::Subprocess;

const std::string kSim = std::string(STARLING_BINARY_DIR) + "/node/starling-sim";
const std::string kDaemon = std::string(STARLING_BINARY_DIR) + "/node/starlingd";

class CliErrors : public testing::TempDirTest {
 protected:
  // Runs argv, returns the exit code; *output gets stdout+stderr.
  int Run(const std::vector<std::string>& argv, std::string* output, int timeout_s = 60) {
    const std::string log = dir_ + "/out.txt";
    Subprocess p(argv, log);
    const int code = p.Wait(std::chrono::seconds(timeout_s));
    *output = testing::ReadFile(log);
    return code;
  }
  // starling-sim with `extra` arguments (2 nodes unless --nodes is among them); expects exit 2
  // and one error line.
  std::string SimError(const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {kSim, "--algorithm", "extra", "--iterations", "3", "--quiet"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    if (std::find(extra.begin(), extra.end(), "--nodes") == extra.end()) {
      argv.insert(argv.end(), {"--nodes", "2"});
    }
    std::string out;
    EXPECT_EQ(Run(argv, &out), 2) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << "one line expected:\n" << out;
    EXPECT_NE(out.find("error: "), std::string::npos) << out;
    return out;
  }
};

TEST_F(CliErrors, TruncatedLibsvmLineNamesFileAndLine) {
  const std::string data = Write("bad.libsvm", "1 1:0.5 2:1\n-1 1:0.25 3:\n1 2:1\n");
  const std::string out = SimError({"--data", data, "--format", "libsvm"});
  EXPECT_NE(out.find("bad.libsvm:2"), std::string::npos) << out;
}

TEST_F(CliErrors, FeatureIndexBeyondDeclaredDimension) {
  const std::string data = Write("wide.libsvm", "1 1:0.5\n-1 2:1\n1 9:1\n");
  const std::string out = SimError({"--data", data, "--format", "libsvm", "--features", "4"});
  EXPECT_NE(out.find("wide.libsvm:3"), std::string::npos) << out;
  EXPECT_NE(out.find("9"), std::string::npos) << out;
}

TEST_F(CliErrors, WrongIdxMagicNamesTheFile) {
  const std::string images = Write("train-images-idx3-ubyte", std::string(64, '\x01'));
  Write("train-labels-idx1-ubyte", std::string(16, '\x01'));
  const std::string out = SimError({"--data", images, "--format", "idx"});
  EXPECT_NE(out.find("train-images-idx3-ubyte"), std::string::npos) << out;
  EXPECT_NE(out.find("magic"), std::string::npos) << out;
}

TEST_F(CliErrors, UnknownOptionIsNamed) {
  const std::string out = SimError({"--bogus-option", "3"});
  EXPECT_NE(out.find("bogus-option"), std::string::npos) << out;
}

// `--step nan` said "no step given" (NaN is not < 0): now the value is refused by name.
TEST_F(CliErrors, NotANumberStepIsRefusedByName) {
  const std::string data = Write("ok.libsvm", "1 1:0.5\n-1 2:1\n1 1:1\n-1 2:0.5\n");
  for (const char* bad : {"nan", "inf", "-1"}) {
    const std::string out = SimError({"--data", data, "--format", "libsvm", "--step", bad});
    EXPECT_NE(out.find(std::string("--step ") + bad + ": must be a finite number >= 0"),
              std::string::npos)
        << out;
    EXPECT_EQ(out.find("no step given"), std::string::npos) << out;
  }
  const std::string out = SimError({"--data", data, "--format", "libsvm", "--l2", "nan"});
  EXPECT_NE(out.find("--l2 nan"), std::string::npos) << out;
}

TEST_F(CliErrors, DisconnectedTopologyFileIsNamed) {
  const std::string data = Write("ok.libsvm", "1 1:0.5\n-1 2:1\n1 1:1\n-1 2:0.5\n");
  const std::string graph = Write("split.edges", "0 1\n2 3\n");
  const std::string out = SimError(
      {"--data", data, "--format", "libsvm", "--nodes", "4", "--topology", "file:" + graph});
  EXPECT_NE(out.find("split.edges"), std::string::npos) << out;
}

// --- starlingd -----------------------------------------------------------------------------

class DaemonErrors : public CliErrors {
 protected:
  std::vector<std::string> Daemon(const std::string& cluster, int id) {
    return {kDaemon, "--cluster",        cluster, "--id",     std::to_string(id), "--algorithm",
            "extra", "--data",           data_,   "--format", "libsvm",           "--iterations",
            "5",     "--allow-plaintext"};
  }
  void SetUp() override {
    CliErrors::SetUp();
    data_ = Write("tiny.libsvm", "1 1:0.5\n-1 2:1\n1 1:1\n-1 2:0.5\n");
    port_ = testing::PortBase() + 5;
  }
  std::string Endpoint(int host, int port) {
    return "tcp://127.0.0." + std::to_string(host) + ":" + std::to_string(port);
  }
  // A cluster file with nodes 0 and 1 at 127.0.0.HOST0 and 127.0.0.HOST1 and one edge.
  std::string TwoNodeCluster(const std::string& name, int host0, int host1) {
    return Write(name, "node 0 " + Endpoint(host0, port_) + "\nnode 1 " + Endpoint(host1, port_) +
                           "\nedge 0 1\n");
  }
  std::string data_;
  int port_ = 0;
};

TEST_F(DaemonErrors, UnknownIdNamesTheClusterFile) {
  const std::string cluster = TwoNodeCluster("c.conf", 1, 2);
  std::string out;
  EXPECT_EQ(Run(Daemon(cluster, 7), &out), 2) << out;
  EXPECT_NE(out.find("--id 7"), std::string::npos) << out;
  EXPECT_NE(out.find("c.conf"), std::string::npos) << out;
}

// `--nodes 7` beside a 2-node cluster file, and `--topology complete` beside a 4-node ring, must
// not be silently ignored (exit 0). The cluster file defines the graph: options that say
// otherwise are refused, naming the option and the file; options that agree are accepted (the
// node then starts, and gives up on its silent neighbours).
TEST_F(DaemonErrors, NodesOrTopologyThatDisagreeWithTheClusterFileAreRefused) {
  const std::string two = TwoNodeCluster("c.conf", 1, 2);
  std::string ring4 = "";
  for (int i = 0; i < 4; ++i)
    ring4 += "node " + std::to_string(i) + " " + Endpoint(i + 1, port_) + "\n";
  ring4 += "edge 0 1\nedge 1 2\nedge 2 3\nedge 3 0\n";
  const std::string ring = Write("ring.conf", ring4);
  auto run = [&](const std::string& cluster, const std::vector<std::string>& extra) {
    std::vector<std::string> argv = Daemon(cluster, 0);
    argv.insert(argv.end(), {"--give-up-s", "2", "--wait-log-s", "1"});
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::string out;
    const int code = Run(argv, &out, 60);
    return std::make_pair(code, out);
  };
  {
    const auto [code, out] = run(two, {"--nodes", "7"});
    EXPECT_EQ(code, 2) << out;
    EXPECT_NE(out.find("--nodes 7: " + two + " lists 2 nodes"), std::string::npos) << out;
  }
  {
    const auto [code, out] = run(ring, {"--topology", "complete"});
    EXPECT_EQ(code, 2) << out;
    EXPECT_NE(out.find("--topology complete"), std::string::npos) << out;
    EXPECT_NE(out.find(ring), std::string::npos) << out;
  }
  {
    const auto [code, out] = run(ring, {"--topology", "ring", "--nodes", "4"});
    EXPECT_EQ(code, 3) << "agreeing options must be accepted:\n" << out;
  }
}

// The monitor reads the same cluster file and run options as the daemons: the same refusal.
TEST_F(DaemonErrors, MonitorRefusesNodesThatDisagreeWithTheClusterFile) {
  const std::string cluster = TwoNodeCluster("c.conf", 1, 2);
  const std::vector<std::string> argv = {std::string(STARLING_BINARY_DIR) + "/node/starling-probe",
                                         "monitor",
                                         "--cluster",
                                         cluster,
                                         "--algorithm",
                                         "extra",
                                         "--data",
                                         data_,
                                         "--format",
                                         "libsvm",
                                         "--iterations",
                                         "5",
                                         "--allow-plaintext",
                                         "--nodes",
                                         "7",
                                         "--timeout-s",
                                         "2"};
  std::string out;
  EXPECT_EQ(Run(argv, &out, 60), 2) << out;
  EXPECT_NE(out.find("--nodes 7: " + cluster + " lists 2 nodes"), std::string::npos) << out;
}

// `--checkpoint-every -1` meant no checkpoint, without a word; periods without --checkpoint were
// ignored too.
TEST_F(DaemonErrors, CheckpointPeriodsOutOfRangeOrWithoutAFileAreRefused) {
  const std::string cluster = TwoNodeCluster("c.conf", 1, 2);
  const std::string file = dir_ + "/n0.ckpt";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--checkpoint", file, "--checkpoint-every", "-1"}, "--checkpoint-every -1: must be"},
      {{"--checkpoint", file, "--checkpoint-every-s", "nan"}, "--checkpoint-every-s nan: must be"},
      {{"--checkpoint-every", "10"}, "--checkpoint-every: needs --checkpoint FILE"},
      {{"--give-up-s", "0"}, "--give-up-s 0: must be"},
      {{"--telemetry-ms", "-5"}, "--telemetry-ms -5: must be"},
  };
  for (const auto& [extra, message] : cases) {
    std::vector<std::string> argv = Daemon(cluster, 0);
    argv.insert(argv.end(), extra.begin(), extra.end());
    if (std::find(extra.begin(), extra.end(), "--give-up-s") == extra.end()) {
      argv.insert(argv.end(), {"--give-up-s", "2"});  // without the checks: exit 3 after 2 s
    }
    std::string out;
    EXPECT_EQ(Run(argv, &out, 60), 2) << out;
    EXPECT_NE(out.find(message), std::string::npos) << out;
  }
}

TEST_F(DaemonErrors, DuplicateEndpointNamesFileAndLine) {
  const std::string cluster = TwoNodeCluster("dup.conf", 1, 1);
  std::string out;
  EXPECT_EQ(Run(Daemon(cluster, 0), &out), 2) << out;
  EXPECT_NE(out.find("dup.conf:2"), std::string::npos) << out;
  EXPECT_NE(out.find(Endpoint(1, port_)), std::string::npos) << out;
}

TEST_F(DaemonErrors, PortInUseNamesNodeAndEndpoint) {
  zmq::context_t context;
  zmq::socket_t squatter(context, zmq::socket_type::rep);
  squatter.bind(Endpoint(1, port_));
  const std::string cluster = TwoNodeCluster("c.conf", 1, 2);
  std::string out;
  EXPECT_EQ(Run(Daemon(cluster, 0), &out), 2) << out;
  EXPECT_NE(out.find("node 0"), std::string::npos) << out;
  EXPECT_NE(out.find(Endpoint(1, port_)), std::string::npos) << out;
}

TEST_F(DaemonErrors, SilentNeighbourIsReportedThenGivenUpOn) {
  const std::string cluster = TwoNodeCluster("c.conf", 1, 2);
  std::vector<std::string> argv = Daemon(cluster, 0);
  argv.insert(argv.end(), {"--wait-log-s", "1", "--give-up-s", "4"});
  std::string out;
  EXPECT_EQ(Run(argv, &out, 30), 3) << out;
  const std::string waiting = "waiting for node 1 (" + Endpoint(2, port_) + ")";
  size_t lines = 0;
  for (size_t at = out.find(waiting); at != std::string::npos; at = out.find(waiting, at + 1)) {
    ++lines;
  }
  EXPECT_GE(lines, 2u) << out;
  EXPECT_NE(out.find("giving up"), std::string::npos) << out;
}

TEST_F(DaemonErrors, MismatchedRunIsRefusedWithTheDifference) {
  const std::string cluster = TwoNodeCluster("c.conf", 1, 2);
  std::vector<std::string> a = Daemon(cluster, 0), b = Daemon(cluster, 1);
  b.insert(b.end(), {"--l2", "0.5"});  // another configuration: another run id
  a.insert(a.end(), {"--give-up-s", "20"});
  b.insert(b.end(), {"--give-up-s", "20"});
  Subprocess pa(a, dir_ + "/a.log"), pb(b, dir_ + "/b.log");
  const int ca = pa.Wait(std::chrono::seconds(30)), cb = pb.Wait(std::chrono::seconds(30));
  const std::string la = testing::ReadFile(dir_ + "/a.log"),
                    lb = testing::ReadFile(dir_ + "/b.log");
  EXPECT_EQ(ca, 2) << la;
  EXPECT_EQ(cb, 2) << lb;
  EXPECT_NE(la.find("run id"), std::string::npos) << la;
  EXPECT_NE(la.find(Endpoint(2, port_)), std::string::npos) << la;
}

// A refusal ends the run for every node at once, not at --give-up-s (600 s by default): on the
// path 0-1-2, node 2 (another --step) and node 1 refuse each other; node 1 stops, and node 0,
// which refused nobody, learns from node 1's goodbye why, and stops too. Every log names the
// option and both values. The 120 s bound is far below the 600 s the nodes would wait otherwise,
// and far above the few seconds the run takes on a loaded machine.
TEST_F(DaemonErrors, ARefusalStopsEveryNodeAtOnceNamingTheOption) {
  const std::string cluster =
      Write("c.conf", "node 0 " + Endpoint(1, port_) + "\nnode 1 " + Endpoint(2, port_) +
                          "\nnode 2 " + Endpoint(3, port_) + "\nedge 0 1\nedge 1 2\n");
  std::vector<std::unique_ptr<Subprocess>> nodes;
  for (int i = 0; i < 3; ++i) {
    std::vector<std::string> argv = Daemon(cluster, i);
    *(std::find(argv.begin(), argv.end(), "--iterations") + 1) = "1000000";
    argv.insert(argv.end(), {"--step", i == 2 ? "0.2" : "0.1"});
    nodes.push_back(std::make_unique<Subprocess>(argv, dir_ + "/n" + std::to_string(i) + ".log"));
  }
  for (int i = 0; i < 3; ++i) {
    const int code = nodes[i]->Wait(std::chrono::seconds(120));
    const std::string log = testing::ReadFile(dir_ + "/n" + std::to_string(i) + ".log");
    EXPECT_EQ(code, 2) << "node " << i << ":\n" << log;
    EXPECT_NE(log.find(i == 2 ? "--step 0.2" : "--step 0.1"), std::string::npos) << log;
    EXPECT_NE(log.find(i == 2 ? "0.1 at node 1" : "0.2 at node 2"), std::string::npos) << log;
  }
  const std::string log0 = testing::ReadFile(dir_ + "/n0.log");
  EXPECT_NE(log0.find("node 2 refused node 1"), std::string::npos) << log0;
}

// The run id knows a data file by its contents, not its path: the same bytes under another name
// make one run, other bytes of the same name and size are refused naming --data.
TEST_F(DaemonErrors, DataFilesAreComparedByContentsNotByPath) {
  const std::string cluster = TwoNodeCluster("c.conf", 1, 2);
  const std::string copy = Write("elsewhere.svm", testing::ReadFile(data_));
  std::vector<std::string> a = Daemon(cluster, 0), b = Daemon(cluster, 1);
  std::replace(b.begin(), b.end(), data_, copy);
  Subprocess pa(a, dir_ + "/a.log"), pb(b, dir_ + "/b.log");
  EXPECT_EQ(pa.Wait(std::chrono::seconds(60)), 0) << testing::ReadFile(dir_ + "/a.log");
  EXPECT_EQ(pb.Wait(std::chrono::seconds(60)), 0) << testing::ReadFile(dir_ + "/b.log");

  // Same name and size, other contents: "1 1:1" becomes "1 2:1".
  std::string other = testing::ReadFile(data_);
  const size_t at = other.find("1 1:1\n");
  ASSERT_NE(at, std::string::npos);
  other[at + 2] = '2';
  std::filesystem::create_directories(dir_ + "/changed");
  const std::string changed =
      Write("changed/" + std::filesystem::path(data_).filename().string(), other);
  std::vector<std::string> c = Daemon(cluster, 0), d = Daemon(cluster, 1);
  std::replace(d.begin(), d.end(), data_, changed);
  Subprocess pc(c, dir_ + "/c.log"), pd(d, dir_ + "/d.log");
  EXPECT_EQ(pc.Wait(std::chrono::seconds(120)), 2) << testing::ReadFile(dir_ + "/c.log");
  EXPECT_EQ(pd.Wait(std::chrono::seconds(120)), 2) << testing::ReadFile(dir_ + "/d.log");
  const std::string lc = testing::ReadFile(dir_ + "/c.log");
  EXPECT_NE(lc.find("--data a file of"), std::string::npos) << lc;
}

TEST_F(DaemonErrors, DivergenceStopsEveryNodeWithExitCode4) {
  const std::string cluster =
      Write("c.conf", "node 0 " + Endpoint(1, port_) + "\nnode 1 " + Endpoint(2, port_) +
                          "\nnode 2 " + Endpoint(3, port_) + "\nedge 0 1\nedge 1 2\n");
  // Least squares with a step far above 2/L: the iterates grow geometrically until they overflow.
  std::vector<std::unique_ptr<Subprocess>> nodes;
  for (int i = 0; i < 3; ++i) {
    std::vector<std::string> argv = {
        kDaemon,           "--cluster",   cluster, "--id",
        std::to_string(i), "--algorithm", "dgd",   "--problem",
        "least-squares",   "--data",      data_,   "--format",
        "libsvm",          "--step",      "1e3",   "--iterations",
        "100000",          "--give-up-s", "30",    "--allow-plaintext"};
    nodes.push_back(std::make_unique<Subprocess>(argv, dir_ + "/n" + std::to_string(i) + ".log"));
  }
  for (int i = 0; i < 3; ++i) {
    const int code = nodes[i]->Wait(std::chrono::seconds(60));
    const std::string log = testing::ReadFile(dir_ + "/n" + std::to_string(i) + ".log");
    EXPECT_EQ(code, 4) << log;
    EXPECT_NE(log.find("diverged"), std::string::npos) << log;
  }
}

// SwarmSGD takes no local step before a neighbour is up (it would race alone through its
// budget): with its only neighbour silent it says whom it waits for, then gives up.
TEST_F(DaemonErrors, SwarmSgdWaitsForItsSilentNeighbourThenGivesUp) {
  const std::string cluster = TwoNodeCluster("c.conf", 1, 2);
  std::vector<std::string> argv = {kDaemon, "--cluster",        cluster,    "--id",
                                   "0",     "--algorithm",      "swarmsgd", "--data",
                                   data_,   "--format",         "libsvm",   "--step",
                                   "0.1",   "--batch",          "2",        "--iterations",
                                   "300",   "--wait-log-s",     "1",        "--give-up-s",
                                   "3",     "--allow-plaintext"};
  std::string out;
  EXPECT_EQ(Run(argv, &out, 30), 3) << out;
  EXPECT_NE(out.find("for a neighbour to come up: node 1 (" + Endpoint(2, port_) + ")"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("giving up after 3 s: no neighbour came up"), std::string::npos) << out;
}

// A silent neighbour among live ones is never offered an exchange: node 0 (neighbours 1, live,
// and 2, silent) does all its steps, and neither it nor node 1 has a single timed-out offer.
// Start skew: a SwarmSGD node takes its first step only when every neighbour is up, or after
// --start-wait-s, logging whom it waits for; meanwhile the neighbour already up is held at the
// progress window (it has met the waiting node, which counts as at 0 steps) instead of racing
// through its budget alone. Node 0's neighbours are 1 and 2; node 2 never starts.
TEST_F(DaemonErrors, SwarmSgdWaitsForEveryNeighbourBeforeItsFirstStep) {
  const std::string cluster =
      Write("c3.conf", "node 0 " + Endpoint(1, port_) + "\nnode 1 " + Endpoint(2, port_) +
                           "\nnode 2 " + Endpoint(3, port_) + "\nedge 0 1\nedge 0 2\n");
  std::vector<std::unique_ptr<Subprocess>> nodes;
  for (int i = 0; i < 2; ++i) {
    std::vector<std::string> argv = {kDaemon,
                                     "--cluster",
                                     cluster,
                                     "--id",
                                     std::to_string(i),
                                     "--algorithm",
                                     "swarmsgd",
                                     "--data",
                                     data_,
                                     "--format",
                                     "libsvm",
                                     "--step",
                                     "0.1",
                                     "--batch",
                                     "2",
                                     "--iterations",
                                     "300",
                                     "--exchange-timeout-ms",
                                     "300",
                                     "--linger-s",
                                     "2",
                                     "--start-wait-s",
                                     "3",
                                     "--allow-plaintext"};
    nodes.push_back(std::make_unique<Subprocess>(argv, dir_ + "/w" + std::to_string(i) + ".log"));
  }
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(nodes[i]->Wait(std::chrono::seconds(60)), 0)
        << testing::ReadFile(dir_ + "/w" + std::to_string(i) + ".log");
  }
  const std::string log0 = testing::ReadFile(dir_ + "/w0.log");
  const std::string log1 = testing::ReadFile(dir_ + "/w1.log");
  EXPECT_NE(log0.find("node 0 waits up to 3 s (--start-wait-s) for every neighbour before its "
                      "first step: not up yet: node 2 (" +
                      Endpoint(3, port_) + ")"),
            std::string::npos)
      << log0;
  EXPECT_NE(log0.find("node 0 starts with 1 of 2 neighbours after 3 s (--start-wait-s): not up: "
                      "node 2"),
            std::string::npos)
      << log0;
  // Held at the window (max(8H, 300/40) = 8 steps) by node 0 while node 0 waited.
  EXPECT_NE(log1.find("node 1 waits at 9 local steps for node 0 (" + Endpoint(1, port_) +
                      "), more than 8 steps behind"),
            std::string::npos)
      << log1;
}

TEST_F(DaemonErrors, SwarmSgdSkipsASilentNeighbourAndFinishes) {
  const std::string cluster =
      Write("c3.conf", "node 0 " + Endpoint(1, port_) + "\nnode 1 " + Endpoint(2, port_) +
                           "\nnode 2 " + Endpoint(3, port_) + "\nedge 0 1\nedge 0 2\n");
  std::vector<std::unique_ptr<Subprocess>> nodes;
  for (int i = 0; i < 2; ++i) {
    std::vector<std::string> argv = {kDaemon,
                                     "--cluster",
                                     cluster,
                                     "--id",
                                     std::to_string(i),
                                     "--algorithm",
                                     "swarmsgd",
                                     "--data",
                                     data_,
                                     "--format",
                                     "libsvm",
                                     "--step",
                                     "0.1",
                                     "--batch",
                                     "2",
                                     "--iterations",
                                     "300",
                                     "--exchange-timeout-ms",
                                     "300",
                                     "--linger-s",
                                     "2",
                                     "--start-wait-s",
                                     "2",
                                     "--allow-plaintext"};
    nodes.push_back(std::make_unique<Subprocess>(argv, dir_ + "/s" + std::to_string(i) + ".log"));
  }
  for (int i = 0; i < 2; ++i) {
    const int code = nodes[i]->Wait(std::chrono::seconds(60));
    const std::string log = testing::ReadFile(dir_ + "/s" + std::to_string(i) + ".log");
    EXPECT_EQ(code, 0) << log;
    // Node 1 may stop a step or two early: its only neighbour, node 0, finished first.
    const std::string finished = i == 0 ? "finished after 300 local steps" : "finished after";
    EXPECT_NE(log.find(finished), std::string::npos) << log;
    EXPECT_NE(log.find(" 0 timeouts"), std::string::npos) << log;
  }
}

}  // namespace
}  // namespace starling
