// Failures that say goodbye (the daemon's side), with real starlingd processes:
// a node whose descriptors are all taken by idle connections keeps writing its files and
// finishes; a checkpoint that cannot be written is a warning and a counter, not an exit; a fatal
// error writes the exit line and a BYE that stops the neighbours at once instead of at
// --give-up-s; the soft descriptor limit is raised at start-up.
//
// The runs are held, where a test needs a moment in the middle of one, by stopping a neighbour
// (SIGSTOP) once the moment has come, never by guessing how long a run takes.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "node/config/run_id.h"
#include "node/config/run_setup.h"
#include "node/daemon/checkpoint.h"
#include "node/sim/round_simulator.h"
#include "tests/daemon_cluster.h"
#include "tests/subprocess.h"
#include "tests/written_data.h"
#include "topology/generators.h"

namespace starling {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using testing::Subprocess;

constexpr int kDim = 8;
constexpr int kNodes = 3;

// A small logistic data set, written here (so that the test needs no files).
void WriteData(const std::string& path) { testing::WriteLogisticData(path, 240, kDim, 17); }

// Polls `done` every 10 ms until it holds or `deadline` passes.
template <typename F>
bool WaitFor(F done, std::chrono::seconds deadline) {
  const auto end = Clock::now() + deadline;
  while (!done()) {
    if (Clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

int OpenDescriptors(pid_t pid) {
  int n = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

// A 3-node ring of EXTRA daemons (plaintext, loopback) on generated data, started one by one.
class Goodbye : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::FreshTempDir("goodbye");
    data_ = dir_ + "/data.libsvm";
    WriteData(data_);
    port_ = testing::PortBase() + 8;
    cluster_ = testing::WriteLoopbackCluster(dir_, topology::Ring(kNodes), port_, false);
  }
  void TearDown() override {
    nodes_.clear();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  std::vector<std::string> RunArgs() const {
    return {"--algorithm",  "extra",
            "--problem",    "logistic",
            "--l2",         "1e-2",
            "--data",       data_,
            "--format",     "libsvm",
            "--features",   std::to_string(kDim),
            "--iterations", std::to_string(iterations_),
            "--seed",       "3"};
  }
  // Starts node i with `extra` options; `prefix` goes before the binary (a shell that lowers
  // the descriptor limit).
  Subprocess* Start(int i, const std::vector<std::string>& extra,
                    const std::vector<std::string>& prefix = {}) {
    std::vector<std::string> argv = prefix;
    const std::vector<std::string> own = {testing::kDaemonBinary,
                                          "--cluster",
                                          cluster_,
                                          "--id",
                                          std::to_string(i),
                                          "--final-model",
                                          Model(i),
                                          "--metrics",
                                          dir_ + "/node-" + std::to_string(i) + ".jsonl",
                                          "--allow-plaintext",
                                          "--telemetry-ms",
                                          "100",
                                          "--give-up-s",
                                          std::to_string(give_up_s_)};
    argv.insert(argv.end(), own.begin(), own.end());
    const std::vector<std::string> run = RunArgs();
    argv.insert(argv.end(), run.begin(), run.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    nodes_.push_back(std::make_unique<Subprocess>(argv, Log(i)));
    return nodes_.back().get();
  }
  std::string Log(int i) const { return dir_ + "/node-" + std::to_string(i) + ".log"; }
  std::string Model(int i) const { return dir_ + "/model-" + std::to_string(i) + ".txt"; }
  std::string ReadLog(int i) const { return testing::ReadFile(Log(i)); }
  bool IsUp(int i) const { return Contains(ReadLog(i), "node " + std::to_string(i) + " up:"); }

  node::RunConfig Config() const {
    node::RunConfig config;
    config.algorithm = "extra";
    config.problem = "logistic";
    config.l2 = 1e-2;
    config.data = data_;
    config.format = "libsvm";
    config.features = kDim;
    config.seed = 3;
    config.iterations = iterations_;
    config.nodes = kNodes;
    config.topology = "file:" + cluster_;
    return config;
  }
  // The simulator's models for the same run: the daemons must end exactly there.
  void ExpectSimulatorModels() const {
    const node::RunConfig config = Config();
    node::BuildScope scope;
    scope.global = false;
    const node::RunSetup setup = node::BuildRunSetup(config, scope);
    node::RoundSimulator sim(setup.nodes, node::RoundOptionsFor(config, setup));
    sim.RunUntilIteration(iterations_);
    for (int i = 0; i < kNodes; ++i) {
      const Vec got = testing::ReadModelFile(Model(i));
      const Vec& expected = sim.node(i).Model();
      ASSERT_EQ(got.size(), expected.size()) << "node " << i;
      EXPECT_LE((got - expected).norm(), 1e-9 * expected.norm()) << "node " << i;
    }
  }
  // Holds the run in its middle: once `moment` holds (polled every 10 ms), node `held` is
  // stopped, so that its neighbours wait for it; returns false if the run ended first.
  template <typename F>
  bool HoldRunWhen(F moment, int held) {
    const auto ended = [&] { return nodes_[0]->Wait(std::chrono::milliseconds(0)) != -1; };
    if (!WaitFor([&] { return moment() || ended(); }, std::chrono::seconds(240)) || ended()) {
      return false;
    }
    nodes_[held]->Signal(SIGSTOP);
    return !Contains(ReadLog(0), "finished");
  }
  // Exit codes of all nodes (each waited for at most `deadline`).
  void ExpectAllExit(int code, std::chrono::seconds deadline) {
    for (int i = 0; i < kNodes; ++i) {
      EXPECT_EQ(nodes_[i]->Wait(deadline), code) << "node " << i << ":\n" << ReadLog(i);
    }
  }

  std::string dir_, data_, cluster_;
  int port_ = 0;
  int iterations_ = 4000;
  int give_up_s_ = 300;
  std::vector<std::unique_ptr<Subprocess>> nodes_;
};

// "checkpoints W (F failed)" on node i's exit line.
std::pair<int, int> CheckpointCounts(const std::string& log) {
  std::smatch m;
  if (!std::regex_search(log, m,
                         std::regex(R"(done \(exit \d+\).*checkpoints (\d+) \((\d+) failed\))"))) {
    return {-1, -1};
  }
  return {std::stoi(m[1]), std::stoi(m[2])};
}

// 1,100 idle TCP connections (no key needed) under the soft limit of 1,024 could make a node
// fail to open its checkpoint, exit 2 without its exit line and without a BYE, and its
// neighbours wait until --give-up-s. Here node 0 runs under a limit of 96 descriptors and is
// flooded with 300 idle connections in the middle of its run (node 1 held meanwhile): it must
// keep its files, finish with the simulator's model, and so must its neighbours.
TEST_F(Goodbye, NodeWhoseDescriptorsAreExhaustedStillWritesItsFilesAndFinishes) {
  constexpr int kLimit = 96;
  const std::string checkpoint = dir_ + "/node-0.ckpt";
  Start(0, {"--checkpoint", checkpoint, "--checkpoint-every", "50"},
        {"/bin/sh", "-c", "ulimit -n " + std::to_string(kLimit) + " && exec \"$0\" \"$@\""});
  Start(1, {});
  Start(2, {});
  const pid_t pid0 = nodes_[0]->pid();
  ASSERT_TRUE(HoldRunWhen([&] { return fs::exists(checkpoint); }, 1))
      << "the run ended before it could be held:\n"
      << ReadLog(0);

  // The flood: non-blocking connects to node 0's peer port, kept open until node 0 has exited.
  std::vector<int> sockets;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port_));
  ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  for (int k = 0; k < 300; ++k) {
    const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    ASSERT_GE(s, 0);
    (void)::connect(s, reinterpret_cast<const sockaddr*>(&to), sizeof(to));
    sockets.push_back(s);
  }
  // Node 0 accepts until it has no descriptor left (or a connection cap stops it first).
  int peak = 0;
  WaitFor(
      [&] {
        peak = std::max(peak, OpenDescriptors(pid0));
        return peak >= kLimit - 1;
      },
      std::chrono::seconds(3));
  std::printf("node 0: %d of %d descriptors open under the flood\n", peak, kLimit);
  nodes_[1]->Signal(SIGCONT);

  ExpectAllExit(0, std::chrono::seconds(300));
  for (int s : sockets) ::close(s);
  const std::string log0 = ReadLog(0);
  EXPECT_TRUE(Contains(log0, "descriptor limit " + std::to_string(kLimit))) << log0;
  EXPECT_TRUE(Contains(log0, "done (exit 0)")) << log0;
  const auto [written, failed] = CheckpointCounts(log0);
  std::printf("node 0: checkpoints %d written, %d failed\n", written, failed);
  EXPECT_GE(written, 1) << log0;
  // The last checkpoint written is whole.
  EXPECT_NO_THROW(
      node::ReadCheckpoint(checkpoint, node::RunIdFor(Config(), node::BuildRunSetup(Config())), 0));
  ExpectSimulatorModels();
}

// A checkpoint path that becomes unwritable in the middle of the run (here: a folder takes its
// place, which stops root too): each write fails with a warning and is counted, on the exit
// line and the metrics line, and the run finishes as if nothing had happened.
TEST_F(Goodbye, CheckpointThatCannotBeWrittenIsAWarningAndACounterNotAnExit) {
  const std::string checkpoint = dir_ + "/node-0.ckpt";
  Start(0, {"--checkpoint", checkpoint, "--checkpoint-every", "100"});
  Start(1, {});
  Start(2, {});
  ASSERT_TRUE(HoldRunWhen([&] { return fs::exists(checkpoint); }, 1))
      << "the run ended before it could be held:\n"
      << ReadLog(0);
  fs::remove(checkpoint);
  fs::create_directory(checkpoint);
  nodes_[1]->Signal(SIGCONT);

  ExpectAllExit(0, std::chrono::seconds(300));
  const std::string log0 = ReadLog(0);
  const auto [written, failed] = CheckpointCounts(log0);
  EXPECT_GE(written, 1) << log0;
  EXPECT_GE(failed, 1) << log0;
  EXPECT_TRUE(Contains(log0, "not written (" + std::to_string(failed) + " failed so far)")) << log0;
  EXPECT_TRUE(Contains(log0, "cannot rename the checkpoint into place")) << log0;
  // The metrics file counts the same.
  std::ifstream metrics(dir_ + "/node-0.jsonl");
  std::string line, last;
  while (std::getline(metrics, line)) last = line;
  EXPECT_EQ(testing::MetricsField(last, "checkpoint_failures"), failed) << last;
  EXPECT_EQ(testing::MetricsField(last, "checkpoints"), written) << last;
  ExpectSimulatorModels();
}

// A fatal error once the network is up (here: a checkpoint to resume from whose state belongs to
// no algorithm, found when the node's loop loads it): the node writes its exit line and says
// BYE, and its neighbours, waiting for it at step 0, stop at once (exit 3) and say why, instead
// of waiting --give-up-s (300 s here).
TEST_F(Goodbye, FatalErrorWritesTheExitLineAndTheNeighboursStopAtOnce) {
  node::Checkpoint bad;
  bad.run_id = node::RunIdFor(Config(), node::BuildRunSetup(Config()));
  bad.node_id = 2;
  bad.state.algorithm = "no-such-algorithm";
  const std::string checkpoint = dir_ + "/node-2.ckpt";
  node::WriteCheckpoint(checkpoint, bad);
  Start(0, {});
  Start(1, {});
  ASSERT_TRUE(WaitFor([&] { return IsUp(0) && IsUp(1); }, std::chrono::seconds(120)));
  const auto t0 = Clock::now();
  Start(2, {"--checkpoint", checkpoint, "--resume"});

  const int code2 = nodes_[2]->Wait(std::chrono::seconds(120));
  const std::string log2 = ReadLog(2);
  EXPECT_EQ(code2, 2) << log2;
  EXPECT_TRUE(Contains(log2, "node 2 stops on a fatal error")) << log2;
  EXPECT_TRUE(Contains(log2, "done (exit 2)")) << log2;
  for (int i = 0; i < 2; ++i) {
    // Well before --give-up-s: the BYE, not the deadline, ended the wait.
    EXPECT_EQ(nodes_[i]->Wait(std::chrono::seconds(give_up_s_ / 3)), 3) << ReadLog(i);
  }
  const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("the neighbours stopped %.1f s after node 2 started (--give-up-s %d)\n", waited,
              give_up_s_);
  const std::string log0 = ReadLog(0), log1 = ReadLog(1);
  // Node 0 and node 1 are both node 2's neighbours in the ring: each heard it directly, or from
  // the other, whichever BYE came first.
  for (const std::string* log : {&log0, &log1}) {
    EXPECT_TRUE(Contains(*log, "left for good")) << *log;
    EXPECT_TRUE(Contains(*log, "done (exit 3)")) << *log;
  }
  EXPECT_TRUE(Contains(log0 + log1, "node 2 (" + std::string("tcp://127.0.0.3:") +
                                        std::to_string(port_) + ") left for good: failed: "))
      << log0 << log1;
}

// The writer behind the daemon's checkpoints, alone: PATH.tmp is reserved from the start (and
// removed when the writer goes), every write replaces PATH whole, and a write that fails (PATH
// became a folder) throws naming the path while the reserved file stays usable for the next.
TEST(CheckpointWriter, ReservesItsFileReplacesAtomicallyAndSurvivesAFailedWrite) {
  const std::string dir = testing::FreshTempDir("ckwriter");
  const std::string path = dir + "/c.ckpt";
  node::Checkpoint c;
  c.run_id = 9;
  c.node_id = 1;
  c.state.algorithm = "extra";
  c.state.ints = {1};
  {
    node::CheckpointWriter writer(path);
    EXPECT_TRUE(fs::exists(path + ".tmp"));
    EXPECT_FALSE(fs::exists(path));
    writer.Write(c);
    EXPECT_EQ(node::ReadCheckpoint(path, 9, 1).state.ints, std::vector<int64_t>{1});
    EXPECT_TRUE(writer.reserved());
    c.state.ints = {2};
    writer.Write(c);
    EXPECT_EQ(node::ReadCheckpoint(path, 9, 1).state.ints, std::vector<int64_t>{2});
    fs::remove(path);
    fs::create_directory(path);
    c.state.ints = {3};
    try {
      writer.Write(c);
      ADD_FAILURE() << "a write over a folder succeeded";
    } catch (const std::runtime_error& e) {
      EXPECT_TRUE(Contains(e.what(), path + ": cannot rename the checkpoint into place"))
          << e.what();
    }
    fs::remove(path);
    writer.Write(c);  // the same reserved PATH.tmp, started over
    EXPECT_EQ(node::ReadCheckpoint(path, 9, 1).state.ints, std::vector<int64_t>{3});
  }
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_THROW(node::CheckpointWriter(dir + "/no-such-folder/c.ckpt"), std::runtime_error);
  fs::remove_all(dir);
}

// The soft descriptor limit is raised to the hard one at start-up, and the log says so (read
// back from /proc, not only from the log).
TEST_F(Goodbye, SoftDescriptorLimitIsRaisedToTheHardLimitAtStartUp) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_max < 4096) GTEST_SKIP() << "the hard descriptor limit is below 4096 here";
  Start(0, {"--wait-log-s", "1"},
        {"/bin/sh", "-c", "ulimit -S -n 256 && ulimit -H -n 4096 && exec \"$0\" \"$@\""});
  ASSERT_TRUE(
      WaitFor([&] { return IsUp(0) || nodes_[0]->Wait(std::chrono::milliseconds(0)) != -1; },
              std::chrono::seconds(120)));
  ASSERT_TRUE(IsUp(0)) << ReadLog(0);
  const std::string limits =
      testing::ReadFile("/proc/" + std::to_string(nodes_[0]->pid()) + "/limits");
  EXPECT_TRUE(std::regex_search(limits, std::regex(R"(Max open files\s+4096\s+4096)"))) << limits;
  EXPECT_TRUE(Contains(ReadLog(0), "descriptor limit raised from 256 to 4096 (hard limit 4096)"))
      << ReadLog(0);
}

}  // namespace
}  // namespace starling
