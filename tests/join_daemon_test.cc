// starlingd --join with real processes on loopback: three daemons and a monitor find each other
// through a seed list whose first seed is down, one daemon starting only once the others are
// waiting for it, and the run ends at the simulator's models on the graph of --topology over the
// members sorted by key; a daemon with other run options and one whose key the trust file lacks
// are refused by name and counted by the seed. And a node that cannot connect to a neighbour
// says so, naming the address, the cause and what to do, and a node that its neighbours cannot
// connect to stops saying so.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "net/curve_keys.h"
#include "node/daemon/unreachable_neighbours.h"
#include "tests/daemon_cluster.h"
#include "tests/subprocess.h"
#include "tests/written_data.h"
#include "topology/cluster_file.h"
#include "topology/generators.h"

namespace starling {
namespace {

namespace fs = std::filesystem;

const std::string kProbeBinary = std::string(STARLING_BINARY_DIR) + "/node/starling-probe";

// True once `path` contains `text`, polled until `timeout` (the machine may be loaded).
bool WaitForText(const std::string& path, const std::string& text, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (testing::ReadFile(path).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return testing::ReadFile(path).find(text) != std::string::npos;
}

// The run options of every process here (EXTRA on a small logistic problem; the simulator's
// SimulatedA9aModels uses the same: logistic, l2 1e-2, libsvm, seed 7).
std::vector<std::string> RunOptions(const std::string& data, int nodes) {
  return {"--algorithm",  "extra",  "--problem", "logistic",
          "--l2",         "1e-2",   "--data",    data,
          "--format",     "libsvm", "--seed",    "7",
          "--topology",   "ring",   "--nodes",   std::to_string(nodes),
          "--iterations", "60"};
}

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class JoinDaemons : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::FreshTempDir("join-daemons");
    data_ = testing::WriteLogisticData(dir_ + "/data.svm", 300, 6, 5);
    base_ = testing::PortBase();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A key pair DIR/NAME.{key,pub}; its public key.
  std::string Key(const std::string& name) {
    return net::WriteCurveKeyFiles(dir_ + "/" + name).public_key;
  }
  // The trust file: every key as a .pub file's line, with a name.
  std::string Trust(const std::string& file, const std::vector<std::string>& names) {
    std::ofstream out(dir_ + "/" + file);
    for (const std::string& name : names) {
      out << testing::ReadFile(dir_ + "/" + name + ".pub").substr(0, 40) << " " << name << "\n";
    }
    return dir_ + "/" + file;
  }
  std::vector<std::string> Daemon(const std::string& name, int port, const std::string& trust,
                                  const std::string& seeds, int nodes) {
    return Concat({testing::kDaemonBinary, "--join", seeds, "--trust", trust, "--secret-key",
                   dir_ + "/" + name + ".key", "--host", "127.0.0.1", "--port",
                   std::to_string(port), "--final-model", dir_ + "/model-{id}.txt",
                   "--join-timeout-s", "120", "--give-up-s", "120", "--wait-log-s", "1"},
                  RunOptions(data_, nodes));
  }
  std::string Log(const std::string& name) { return dir_ + "/" + name + ".log"; }

  std::string dir_, data_;
  int base_ = 0;
};

TEST_F(JoinDaemons, ThreeNodesAndAMonitorJoinBySeedsAndEndAtTheSimulatorsModels) {
  const std::vector<std::string> names = {"alpha", "beta", "gamma"};
  std::vector<std::string> keys;
  for (const std::string& name : names) keys.push_back(Key(name));
  Key("monitor");
  const std::string trust = Trust("trust", {"alpha", "beta", "gamma", "monitor"});
  // The first seed is down: nothing listens at base+32.
  const std::string seeds =
      "127.0.0.1:" + std::to_string(base_ + 32) + ",127.0.0.1:" + std::to_string(base_);
  testing::Subprocess alpha(Daemon("alpha", base_, trust, seeds, 3), Log("alpha"));
  testing::Subprocess beta(Daemon("beta", base_ + 4, trust, seeds, 3), Log("beta"));
  testing::Subprocess monitor(
      Concat({kProbeBinary, "monitor", "--join", "127.0.0.1:" + std::to_string(base_ + 4),
              "--trust", trust, "--secret-key", dir_ + "/monitor.key", "--timeout-s", "120",
              "--progress", "plain"},
             RunOptions(data_, 3)),
      Log("monitor"));
  // gamma comes only once the others, the monitor among them, wait for it. The monitor sees only
  // the telemetry published after it subscribes, and it learns of gamma at its next sync (every
  // 0.5 s): gamma's steps are slowed (--compute-delay-ms 50, 3 s for the 60 lockstep rounds) so
  // that the run does not end inside that window on a loaded machine.
  ASSERT_TRUE(WaitForText(Log("alpha"), "2 of 3 members", std::chrono::seconds(60)))
      << testing::ReadFile(Log("alpha"));
  ASSERT_TRUE(WaitForText(Log("monitor"), "2 of 3 members", std::chrono::seconds(60)))
      << testing::ReadFile(Log("monitor"));
  testing::Subprocess gamma(
      Concat(Daemon("gamma", base_ + 8, trust, seeds, 3), {"--compute-delay-ms", "50"}),
      Log("gamma"));
  for (auto* p : {&alpha, &beta, &gamma}) {
    EXPECT_EQ(p->Wait(std::chrono::seconds(180)), 0)
        << testing::ReadFile(Log("alpha")) << testing::ReadFile(Log("beta"))
        << testing::ReadFile(Log("gamma"));
  }
  EXPECT_EQ(monitor.Wait(std::chrono::seconds(120)), 0) << testing::ReadFile(Log("monitor"));
  EXPECT_NE(testing::ReadFile(Log("monitor")).find("summary"), std::string::npos);

  // The ids: each node's place among the keys in byte order (sorted here, not by the daemon).
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < names.size(); ++i) {
    const int id =
        static_cast<int>(std::find(sorted.begin(), sorted.end(), keys[i]) - sorted.begin());
    EXPECT_NE(testing::ReadFile(Log(names[i])).find("this node is node " + std::to_string(id)),
              std::string::npos)
        << names[i] << ":\n"
        << testing::ReadFile(Log(names[i]));
  }
  const std::string alpha_log = testing::ReadFile(Log("alpha"));
  EXPECT_NE(alpha_log.find("seed 127.0.0.1:" + std::to_string(base_ + 32) + ": connection refused"),
            std::string::npos)
      << alpha_log;

  // The simulator on the ring of 3 (the graph of --topology ring), node i's shard for id i.
  topology::Cluster ring;
  ring.graph = topology::MakeTopology("ring", 3, 7);
  for (int i = 0; i < 3; ++i)
    ring.nodes.push_back({i, "tcp://127.0.0.1:" + std::to_string(i + 1), ""});
  topology::WriteClusterFile(ring, dir_ + "/ring.conf");
  const std::vector<Vec> simulated =
      testing::SimulatedA9aModels("extra", data_, dir_ + "/ring.conf", 3, 60);
  for (int i = 0; i < 3; ++i) {
    const Vec model = testing::ReadModelFile(dir_ + "/model-" + std::to_string(i) + ".txt");
    ASSERT_EQ(model.size(), simulated[i].size()) << "node " << i;
    // Bit for bit: the same algorithm objects, exchanging float64 payloads exactly.
    EXPECT_EQ((model - simulated[i]).cwiseAbs().maxCoeff(), 0.0) << "node " << i;
  }
}

TEST_F(JoinDaemons, OtherOptionsAndAnUntrustedKeyAreRefusedByNameAndCounted) {
  Key("seed");
  Key("differs");
  Key("stranger");
  const std::string trust = Trust("trust", {"seed", "differs"});
  // The stranger's own copy lists it (a trust file not updated on the other hosts).
  const std::string stale = Trust("stale", {"seed", "differs", "stranger"});
  const std::string seeds = "127.0.0.1:" + std::to_string(base_);
  testing::Subprocess seed(Daemon("seed", base_, trust, seeds, 2), Log("seed"));

  std::vector<std::string> differs = Daemon("differs", base_ + 4, trust, seeds, 2);
  differs.insert(differs.end(), {"--step", "0.25"});
  testing::Subprocess refused(differs, Log("differs"));
  EXPECT_EQ(refused.Wait(std::chrono::seconds(60)), 2) << testing::ReadFile(Log("differs"));
  const std::string differs_log = testing::ReadFile(Log("differs"));
  EXPECT_NE(
      differs_log.find("refused this node: other run options: --step 0.25 here, default at the "
                       "seed"),
      std::string::npos)
      << differs_log;

  testing::Subprocess stranger(Daemon("stranger", base_ + 8, stale, seeds, 2), Log("stranger"));
  EXPECT_EQ(stranger.Wait(std::chrono::seconds(60)), 2) << testing::ReadFile(Log("stranger"));
  EXPECT_NE(testing::ReadFile(Log("stranger"))
                .find("refused this node's key " +
                      testing::ReadFile(dir_ + "/stranger.pub").substr(0, 40) +
                      ": it is not in that host's trust file"),
            std::string::npos)
      << testing::ReadFile(Log("stranger"));

  // The seed, still waiting for its second member, is stopped: it counted both.
  ASSERT_TRUE(WaitForText(Log("seed"), "is not in the trust file", std::chrono::seconds(30)));
  seed.Signal(SIGTERM);
  EXPECT_EQ(seed.Wait(std::chrono::seconds(60)), 0) << testing::ReadFile(Log("seed"));
  const std::string seed_log = testing::ReadFile(Log("seed"));
  EXPECT_NE(seed_log.find("other run options: --step default here, 0.25 at differs"),
            std::string::npos)
      << seed_log;
  EXPECT_NE(seed_log.find("refused 2 (wrong_run=1 unlisted_key=1)"), std::string::npos) << seed_log;
}

// A neighbour whose address refuses connections is named with the cause and the advice: in a
// cluster-file run, its line (UnreachableNeighbours.TheAdviceFollowsWhereTheAddressCameFrom has
// the --host advice of a published address).
TEST_F(JoinDaemons, ANeighbourThatCannotBeConnectedToIsNamedWithWhatToDo) {
  topology::Cluster pair;
  pair.graph = topology::MakeTopology("ring", 2, 7);
  for (int i = 0; i < 2; ++i) {
    pair.nodes.push_back({i, "tcp://127.0.0.1:" + std::to_string(base_ + 4 * i), ""});
  }
  topology::WriteClusterFile(pair, dir_ + "/pair.conf");
  const std::vector<std::string> options = {"--algorithm",
                                            "extra",
                                            "--problem",
                                            "logistic",
                                            "--data",
                                            data_,
                                            "--format",
                                            "libsvm",
                                            "--iterations",
                                            "20",
                                            "--allow-plaintext",
                                            "--wait-log-s",
                                            "1",
                                            "--give-up-s",
                                            "120"};
  testing::Subprocess alone(
      Concat({testing::kDaemonBinary, "--cluster", dir_ + "/pair.conf", "--id", "0"}, options),
      Log("alone"));
  const std::string expected =
      "cannot connect to node 1 at tcp://127.0.0.1:" + std::to_string(base_ + 4) +
      " (connection refused; ";
  ASSERT_TRUE(WaitForText(Log("alone"), expected, std::chrono::seconds(60)))
      << testing::ReadFile(Log("alone"));
  EXPECT_TRUE(WaitForText(Log("alone"),
                          "nothing listens there: is node 1 up? If it is, it "
                          "listens at another address: check node 1's line in " +
                              dir_ + "/pair.conf",
                          std::chrono::seconds(10)))
      << testing::ReadFile(Log("alone"));
  alone.Signal(SIGTERM);
  EXPECT_EQ(alone.Wait(std::chrono::seconds(60)), 0);

  const std::string log = testing::ReadFile(Log("alone"));
  EXPECT_EQ(log.find("--host"), std::string::npos) << "a cluster file's address is its line's";
}

// The same fault from the other side: node 0 reaches node 1, but node 1 has node 0 at an address
// where nothing listens (two cluster files stand for a host whose published address the others
// cannot reach). Node 0 hears nothing over its connection and stops (exit 2) naming its own
// address and the advice, well before --give-up-s; its goodbye reaches node 1, which stops too
// (exit 3) saying why, instead of waiting until give-up.
TEST_F(JoinDaemons, ANodeWhoseAddressItsNeighboursCannotReachStopsSayingSo) {
  const int port0 = base_, port1 = base_ + 4, nowhere = base_ + 8;
  for (const auto& [file, node0_port] : {std::pair{"node0.conf", port0}, {"node1.conf", nowhere}}) {
    topology::Cluster pair;
    pair.graph = topology::MakeTopology("ring", 2, 7);
    pair.nodes.push_back({0, "tcp://127.0.0.1:" + std::to_string(node0_port), ""});
    pair.nodes.push_back({1, "tcp://127.0.0.1:" + std::to_string(port1), ""});
    topology::WriteClusterFile(pair, dir_ + "/" + file);
  }
  // --give-up-s 40: node 0 concludes after 20 s (UnansweredSeconds), node 1 would give up at 40.
  const std::vector<std::string> options = {"--algorithm",  "extra", "--problem",        "logistic",
                                            "--data",       data_,   "--format",         "libsvm",
                                            "--iterations", "20",    "--wait-log-s",     "2",
                                            "--give-up-s",  "40",    "--allow-plaintext"};
  const auto start = std::chrono::steady_clock::now();
  testing::Subprocess node0(
      Concat({testing::kDaemonBinary, "--cluster", dir_ + "/node0.conf", "--id", "0"}, options),
      Log("node0"));
  testing::Subprocess node1(
      Concat({testing::kDaemonBinary, "--cluster", dir_ + "/node1.conf", "--id", "1"}, options),
      Log("node1"));
  EXPECT_EQ(node0.Wait(std::chrono::seconds(120)), 2) << testing::ReadFile(Log("node0"));
  EXPECT_EQ(node1.Wait(std::chrono::seconds(120)), 3) << testing::ReadFile(Log("node1"));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string log0 = testing::ReadFile(Log("node0"));
  const std::string log1 = testing::ReadFile(Log("node1"));
  EXPECT_NE(log0.find("node 0 stops: this node reaches node 1 (connected, keys accepted) but has "
                      "received nothing from it in 20 s: their answers come over connections "
                      "to this node's address tcp://127.0.0.1:" +
                      std::to_string(port0) + ", which do not reach it; check node 0's line in " +
                      dir_ + "/node0.conf"),
            std::string::npos)
      << log0;
  EXPECT_NE(log1.find("cannot connect to node 0 at tcp://127.0.0.1:" + std::to_string(nowhere) +
                      " (connection refused"),
            std::string::npos)
      << log1;
  EXPECT_NE(log1.find("left for good (failed: its neighbours cannot connect to its address "
                      "tcp://127.0.0.1:" +
                      std::to_string(port0) + ")"),
            std::string::npos)
      << log1;
  EXPECT_EQ(log1.find("gave up"), std::string::npos) << "node 1 stopped on node 0's word: " << log1;
  std::printf("both nodes stopped %.1f s after they started (node 1 would give up at 40 s)\n",
              seconds);
}

TEST(UnreachableNeighbours, ANodeStopsAfterHalfItsGiveUpTimeWithinTenToThirtySeconds) {
  EXPECT_EQ(node::UnansweredSeconds(600), 30);
  EXPECT_EQ(node::UnansweredSeconds(40), 20);
  EXPECT_EQ(node::UnansweredSeconds(4), 10);
  EXPECT_EQ(node::UnansweredMessage(4, "tcp://192.168.99.1:7000", {0, 2, 3}, 30, true, ""),
            "this node reaches nodes 0, 2 and 3 (connected, keys accepted) but has received "
            "nothing from any of them in 30 s: their answers come over connections to this "
            "node's address tcp://192.168.99.1:7000, which do not reach it; if node 4's host has "
            "several interfaces, start node 4 with --host ADDRESS, an address the other hosts "
            "reach");
}

TEST(UnreachableNeighbours, TheAdviceFollowsWhereTheAddressCameFrom) {
  net::ConnectTrouble trouble;
  trouble.attempts = 40;
  trouble.seconds = 10.2;
  trouble.cause = "network is unreachable";
  EXPECT_EQ(node::UnreachableMessage(0, "tcp://192.168.99.1:7000", trouble, /*published=*/true,
                                     "/tmp/x/cluster.conf"),
            "cannot connect to node 0 at tcp://192.168.99.1:7000 (network is unreachable; 40 "
            "attempts in 10 s): this host has no way to that address: if node 0's host has "
            "several interfaces, start node 0 with --host ADDRESS, an address the other hosts "
            "reach");
  trouble.cause = "connection refused";
  EXPECT_EQ(node::UnreachableMessage(3, "tcp://h:7000", trouble, false, "cluster.conf"),
            "cannot connect to node 3 at tcp://h:7000 (connection refused; 40 attempts in 10 s): "
            "nothing listens there: is node 3 up? If it is, it listens at another address: check "
            "node 3's line in cluster.conf (if its host has several interfaces, list an address "
            "the other hosts reach)");
  trouble.cause.clear();  // a host name: the cause is not looked for
  EXPECT_EQ(node::UnreachableMessage(1, "tcp://h:7000", trouble, true, ""),
            "cannot connect to node 1 at tcp://h:7000 (40 attempts in 10 s): if node 1's host has "
            "several interfaces, start node 1 with --host ADDRESS, an address the other hosts "
            "reach");
}

}  // namespace
}  // namespace starling
