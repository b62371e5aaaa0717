// A node's final telemetry reaches a monitor that subscribed late. The telemetry socket drops
// what it publishes before a subscriber has arrived, so a short run on a busy host could end
// before the monitor's connections were up, and the monitor then waited for nodes that had
// already exited. With --await-monitor-s (the launcher sets it) a finished node waits for a
// subscriber and publishes its final state again.
//
// The late monitor is made certain here rather than left to chance: it starts only once every
// node has finished and said that it waits for one.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/daemon_cluster.h"
#include "tests/subprocess.h"
#include "tests/written_data.h"
#include "topology/generators.h"

namespace starling {
namespace {

const std::string kProbe = std::string(STARLING_BINARY_DIR) + "/node/starling-probe";

class MonitorLate : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::FreshTempDir("monitor-late");
    data_ = testing::WriteLogisticData(dir_ + "/train.svm", 120, 4, 5);
    cluster_ = testing::WriteLoopbackCluster(dir_, topology::MakeTopology("ring", 3, 1),
                                             testing::PortBase(), false);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::vector<std::string> RunOptions() const {
    return {"--cluster",    cluster_, "--algorithm", "extra",    "--problem",
            "logistic",     "--data", data_,         "--format", "libsvm",
            "--iterations", "200",    "--seed",      "3",        "--allow-plaintext"};
  }
  std::string Log(int i) const { return dir_ + "/node-" + std::to_string(i) + ".log"; }
  std::unique_ptr<testing::Subprocess> StartNode(int i, const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {testing::kDaemonBinary, "--id", std::to_string(i),
                                     "--give-up-s", "120"};
    for (const std::string& a : RunOptions()) argv.push_back(a);
    for (const std::string& a : extra) argv.push_back(a);
    return std::make_unique<testing::Subprocess>(argv, Log(i));
  }

  std::string dir_, data_, cluster_;
};

TEST_F(MonitorLate, AMonitorThatSubscribesAfterTheNodesFinishedGetsTheirFinalState) {
  std::vector<std::unique_ptr<testing::Subprocess>> nodes;
  for (int i = 0; i < 3; ++i) nodes.push_back(StartNode(i, {"--await-monitor-s", "300"}));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(testing::WaitForLogText(Log(i), "finished before any monitor subscribed",
                                        std::chrono::seconds(240)))
        << testing::ReadFile(Log(i));
  }
  std::vector<std::string> argv = {kProbe, "monitor",   "--timeout-s",
                                   "240",  "--metrics", dir_ + "/metrics.jsonl"};
  for (const std::string& a : RunOptions()) argv.push_back(a);
  testing::Subprocess monitor(argv, dir_ + "/monitor.log");
  ASSERT_EQ(monitor.Wait(std::chrono::seconds(300)), 0) << testing::ReadFile(dir_ + "/monitor.log");
  const std::string report = testing::ReadFile(dir_ + "/monitor.log");
  EXPECT_EQ(report.find("incomplete"), std::string::npos) << report;
  // The monitor evaluated the finished run: its last record is final, at every node's end.
  const std::string metrics = testing::ReadFile(dir_ + "/metrics.jsonl");
  EXPECT_NE(metrics.find("\"final\":1"), std::string::npos) << metrics;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(nodes[i]->Wait(std::chrono::seconds(120)), 0) << testing::ReadFile(Log(i));
    EXPECT_NE(testing::ReadFile(Log(i)).find("final state published again"), std::string::npos)
        << testing::ReadFile(Log(i));
  }
}

TEST_F(MonitorLate, WithoutTheOptionANodeExitsAtOnceAndNoMonitorIsWaitedFor) {
  std::vector<std::unique_ptr<testing::Subprocess>> nodes;
  for (int i = 0; i < 3; ++i) nodes.push_back(StartNode(i, {}));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(nodes[i]->Wait(std::chrono::seconds(240)), 0) << testing::ReadFile(Log(i));
    EXPECT_EQ(testing::ReadFile(Log(i)).find("--await-monitor-s"), std::string::npos)
        << testing::ReadFile(Log(i));
  }
}

TEST_F(MonitorLate, ANodeThatNobodyWatchesStopsWaitingAtTheDeadlineAndSaysSo) {
  std::vector<std::unique_ptr<testing::Subprocess>> nodes;
  for (int i = 0; i < 3; ++i) nodes.push_back(StartNode(i, {"--await-monitor-s", "2"}));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(nodes[i]->Wait(std::chrono::seconds(240)), 0) << testing::ReadFile(Log(i));
    EXPECT_NE(testing::ReadFile(Log(i)).find("no monitor subscribed to its telemetry at tcp://"),
              std::string::npos)
        << testing::ReadFile(Log(i));
  }
}

}  // namespace
}  // namespace starling
