// SwarmSGD's --merge-pace R (node/drivers/merge_pace.h): the pacing rule and its bounded wait on
// a fake clock; the option's range, run id (only when set) and reach to every variant; and real
// daemons, whose nodes must report at least R merges per local step, up to the steps the pace's
// time-outs forgave (without the pacing the daemons merge well under once per step;
// docs/results/demo.md).
#include "node/drivers/merge_pace.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/pairwise/swarm_sgd.h"
#include "node/config/run_id.h"
#include "node/config/run_setup.h"
#include "node/drivers/exchange_driver.h"
#include "tests/daemon_cluster.h"
#include "tests/subprocess.h"
#include "tests/test_data.h"
#include "tests/written_data.h"
#include "topology/generators.h"

namespace starling {
namespace {

namespace fs = std::filesystem;

TEST(MergePace, OffNeverHolds) {
  node::MergePace pace(0.0, 25);
  EXPECT_FALSE(pace.active());
  EXPECT_FALSE(pace.Holds(1000, 0, 0));
  EXPECT_EQ(pace.waits(), 0);
}

TEST(MergePace, HoldsUntilRMergesPerStepAreDone) {
  node::MergePace pace(1.5, 25);
  pace.Start(0, 0);
  EXPECT_FALSE(pace.Holds(0, 0, 0));  // step 1 needs nothing
  EXPECT_TRUE(pace.Holds(1, 0, 0));   // step 2 needs 1.5 merges
  EXPECT_TRUE(pace.Holds(1, 1, 5));
  EXPECT_FALSE(pace.Holds(1, 2, 7));
  EXPECT_EQ(pace.waits(), 1);
  EXPECT_EQ(pace.waited_ms(), 7);
  EXPECT_FALSE(pace.Holds(2, 3, 8));  // 3 >= 1.5 x 2
  EXPECT_TRUE(pace.Holds(3, 4, 9));   // 4 < 4.5
  EXPECT_FALSE(pace.Holds(3, 5, 9));
  EXPECT_EQ(pace.timeouts(), 0);
  // From a resumed node's counts.
  node::MergePace resumed(2.0, 25);
  resumed.Start(100, 50);
  EXPECT_FALSE(resumed.Holds(100, 50, 0));
  EXPECT_TRUE(resumed.Holds(101, 51, 0));
  EXPECT_FALSE(resumed.Holds(101, 52, 0));
}

// What a waiting node may sleep (PairwiseNode's paced poll): the bound, less the wait so far.
TEST(MergePace, RemainingMsIsTheBoundLessTheWaitSoFar) {
  node::MergePace pace(1.0, 25);
  pace.Start(0, 0);
  EXPECT_EQ(pace.RemainingMs(1000), 25);  // no wait started
  EXPECT_TRUE(pace.Holds(1, 0, 1000));
  EXPECT_EQ(pace.RemainingMs(1000), 25);
  EXPECT_EQ(pace.RemainingMs(1010), 15);
  EXPECT_EQ(pace.RemainingMs(1030), 0);  // past the bound: the next Holds steps on
  EXPECT_FALSE(pace.Holds(1, 0, 1030));
  EXPECT_TRUE(pace.timed_out());
  EXPECT_EQ(pace.RemainingMs(1030), 25);
}

// When a waiting node's poll must wake to make its paced offers: half the bound into the wait.
TEST(MergePace, MsUntilOverdueIsHalfTheBoundLessTheWaitSoFar) {
  node::MergePace pace(1.0, 25);
  pace.Start(0, 0);
  EXPECT_FALSE(pace.MsUntilOverdue(1000).has_value());  // no wait started
  EXPECT_TRUE(pace.Holds(1, 0, 1000));
  EXPECT_EQ(pace.MsUntilOverdue(1000), 13);  // 12.5 ms, in whole ms: overdue from 1013 on
  EXPECT_EQ(pace.MsUntilOverdue(1010), 3);
  EXPECT_FALSE(pace.Overdue(1012));
  EXPECT_EQ(pace.MsUntilOverdue(1012), 1);
  EXPECT_TRUE(pace.Overdue(1013));
  EXPECT_EQ(pace.MsUntilOverdue(1013), 0);
  EXPECT_EQ(pace.MsUntilOverdue(1020), 0);
  EXPECT_FALSE(pace.Holds(1, 1, 1021));  // the merge came: no wait in progress
  EXPECT_FALSE(pace.MsUntilOverdue(1021).has_value());
  node::MergePace even(1.0, 40);
  even.Start(0, 0);
  EXPECT_TRUE(even.Holds(1, 0, 0));
  EXPECT_EQ(even.MsUntilOverdue(5), 15);  // overdue at 20 ms of a 40 ms bound
}

TEST(MergePace, AWaitEndsAtItsBoundAndForgivesTheDeficit) {
  node::MergePace pace(2.0, 25);
  pace.Start(0, 0);
  EXPECT_TRUE(pace.Holds(1, 0, 100));
  EXPECT_TRUE(pace.Holds(1, 1, 124));
  EXPECT_FALSE(pace.timed_out());
  EXPECT_FALSE(pace.Holds(1, 1, 125));  // 25 ms: steps on
  EXPECT_TRUE(pace.timed_out());
  EXPECT_EQ(pace.timeouts(), 1);
  EXPECT_EQ(pace.waited_ms(), 25);
  // The count restarts at (1 step, 1 merge): step 3 needs 2 merges after step 2, not the 3 owed
  // before.
  EXPECT_TRUE(pace.Holds(2, 2, 130));
  EXPECT_FALSE(pace.timed_out());
  EXPECT_FALSE(pace.Holds(2, 3, 131));
  EXPECT_EQ(pace.timeouts(), 1);
  // A node that never merges waits at most the bound per step: never for ever.
  node::MergePace alone(1.0, 25);
  alone.Start(0, 0);
  int64_t now = 0;
  for (int64_t step = 1; step <= 10; ++step) {
    while (alone.Holds(step, 0, now)) ++now;
  }
  EXPECT_EQ(alone.timeouts(), 10);
  EXPECT_EQ(now, 250);
}

TEST(MergePace, AFloorAboveTheCeilingOrANegativeRateIsRefused) {
  EXPECT_NO_THROW(node::MergePace(2.0, node::MergePace::kMaxWaitMs));
  EXPECT_THROW(node::MergePace(2.0, node::MergePace::kMaxWaitMs + 1), std::invalid_argument);
  EXPECT_THROW(node::MergePace(2.0, -1), std::invalid_argument);
  EXPECT_THROW(node::MergePace(-0.5, 25), std::invalid_argument);
  EXPECT_THROW(node::MergePace(1.0, 25, -1), std::invalid_argument);
}

// The bound is 4 smoothed round trips (gain 1/8, the first sample taken as it is), never below
// the floor nor above 500 ms; a wait in progress is judged by the bound as it is now.
TEST(MergePace, TheBoundFollowsTheRoundTrip) {
  node::MergePace pace(1.0, 25);
  EXPECT_EQ(pace.max_wait_ms(), 25);
  pace.NoteRoundTrip(2);  // 4 x 2 = 8: the floor holds
  EXPECT_EQ(pace.smoothed_round_trip_ms(), 2.0);
  EXPECT_EQ(pace.max_wait_ms(), 25);
  pace.NoteRoundTrip(82);  // 2 + (82 - 2) / 8 = 12 -> 48
  EXPECT_EQ(pace.smoothed_round_trip_ms(), 12.0);
  EXPECT_EQ(pace.max_wait_ms(), 48);
  pace.Start(0, 0);
  EXPECT_TRUE(pace.Holds(1, 0, 1000));
  EXPECT_TRUE(pace.Holds(1, 0, 1040));  // past the old 25 ms, within 48
  EXPECT_FALSE(pace.Holds(1, 0, 1048));
  EXPECT_TRUE(pace.timed_out());
  // Overdue from half the bound on: the node then offers beyond its cadence.
  pace.Start(1, 0);
  EXPECT_FALSE(pace.Overdue(2000)) << "no wait in progress";
  EXPECT_TRUE(pace.Holds(2, 0, 2000));
  EXPECT_FALSE(pace.Overdue(2023));
  EXPECT_TRUE(pace.Overdue(2024));
  for (int i = 0; i < 200; ++i) pace.NoteRoundTrip(1000);
  EXPECT_EQ(pace.max_wait_ms(), node::MergePace::kMaxWaitMs);
  for (int i = 0; i < 200; ++i) pace.NoteRoundTrip(0);
  EXPECT_EQ(pace.max_wait_ms(), 25);
}

// Large models (docs/results/large-models.md): the ceiling is 500 ms plus the exchange's request
// and reply at the slowest assumed rate, as an offer's time-out (ExchangeTiming::TransferMs), so
// that a wait of 4 round trips of 80 MB messages (1.6-14 s between loaded daemons at d = 1e7) is
// not cut at 500 ms. Small models keep 500 ms.
TEST(MergePace, TheCeilingFollowsTheExchangesSize) {
  const node::ExchangeTiming timing;  // 8 MiB/s
  EXPECT_EQ(timing.TransferMs(8 * 123), 0) << "a9a's d";
  EXPECT_EQ(timing.TransferMs(8 * 7850), 14) << "MNIST's multinomial d: 2 x 62.8 KB";
  EXPECT_EQ(timing.TransferMs(80000000), 19073) << "d = 1e7: 2 x 80 MB at 8 MiB/s";
  EXPECT_EQ(node::MergePace(1.0, 25).ceiling_ms(), 500);
  EXPECT_EQ(node::MergePace(1.0, 25, 0).ceiling_ms(), 500);
  node::MergePace pace(1.0, 25, timing.TransferMs(80000000));
  EXPECT_EQ(pace.ceiling_ms(), 500 + 19073);
  // Round trips of 3 s: 4 of them, 12 s, above the former 500 ms and below the ceiling.
  for (int i = 0; i < 200; ++i) pace.NoteRoundTrip(3000);
  EXPECT_EQ(pace.max_wait_ms(), 12000);
  pace.Start(0, 0);
  EXPECT_TRUE(pace.Holds(1, 0, 0));
  EXPECT_TRUE(pace.Holds(1, 0, 11999));
  EXPECT_FALSE(pace.Holds(1, 0, 12000));
  EXPECT_TRUE(pace.timed_out());
  // 14 s round trips: 56 s, cut at the ceiling.
  for (int i = 0; i < 200; ++i) pace.NoteRoundTrip(14000);
  EXPECT_EQ(pace.max_wait_ms(), 19573);
  // Fast round trips bring it back to the floor.
  for (int i = 0; i < 200; ++i) pace.NoteRoundTrip(0);
  EXPECT_EQ(pace.max_wait_ms(), 25);
}

node::RunConfig Config(const std::string& dir, double pace) {
  node::RunConfig c;
  c.algorithm = "swarmsgd";
  c.problem = "logistic";
  c.data = testing::WriteLogisticData(dir + "/l.txt", 200, 5, 7);
  c.format = "libsvm";
  c.nodes = 4;
  c.topology = "ring";
  c.iterations = 20;
  if (pace >= 0) c.params.Set("merge-pace", pace);
  return c;
}

TEST(MergePace, TheOptionIsInTheRunIdOnlyWhenSetAndReachesEveryVariant) {
  const std::string dir = testing::FreshTempDir("merge-pace-id");
  const topology::Graph ring = topology::Ring(4);
  const std::string unset = node::CanonicalRunText(Config(dir, -1), ring);
  EXPECT_EQ(unset.find("merge-pace"), std::string::npos) << unset;
  EXPECT_EQ(node::CanonicalRunText(Config(dir, 0.0), ring), unset);
  const std::string set = node::CanonicalRunText(Config(dir, 1.5), ring);
  EXPECT_NE(set.find("merge-pace=0x1.8p+0"), std::string::npos) << set;
  EXPECT_NE(node::RunIdFor(Config(dir, 1.5), ring), node::RunIdFor(Config(dir, 1.0), ring));
  for (const std::string compression : {"none", "lattice:12", "topk:3", "vq:4"}) {
    node::RunConfig config = Config(dir, 1.5);
    config.compression = compression;
    const node::RunSetup setup = node::BuildRunSetup(config);
    const auto algorithm =
        algorithms::MakePairwiseAlgorithm(node::PairwiseOptionsFor(config, setup), setup.nodes[0]);
    EXPECT_EQ(algorithm->merge_pace(), 1.5) << compression;
  }
  fs::remove_all(dir);
}

TEST(MergePace, OutOfRangeIsRefusedNamingTheOption) {
  for (double bad : {-0.5, 4.5}) {
    algorithms::ParamValues v;
    v.Set("merge-pace", bad);
    try {
      algorithms::SwarmSgdParamTable().Validate(v, {});
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--merge-pace"), std::string::npos) << e.what();
    }
  }
}

// What a node's "stepping:" line says (PairwiseNode::Finish).
struct Stepping {
  bool found = false;
  double merges = 0, steps = 0, ratio = 0, timeouts = 0;
};

Stepping SteppingOf(const std::string& log) {
  static const std::regex line(
      R"(stepping: (\d+) merges \(\d+ started, \d+ served\) in (\d+) local steps, ([0-9.]+) merges )"
      R"(per local step; --merge-pace [0-9.]+: waited before \d+ steps, \d+ ms in all, (\d+) pace )"
      R"(time-outs)");
  std::smatch m;
  Stepping s;
  if (!std::regex_search(log, m, line)) return s;
  s.found = true;
  s.merges = std::atof(m[1].str().c_str());
  s.steps = std::atof(m[2].str().c_str());
  s.ratio = std::atof(m[3].str().c_str());
  s.timeouts = std::atof(m[4].str().c_str());
  return s;
}

// Six daemons on a ring with the shared a9a data, H = 1, batch 8, pace R = 1.5 (the simulator
// merges about 2 per step; the daemons without the pace about 0.5-0.7 on a busy machine, since a
// node steps on while its offer is in flight). Each step of a node is either paced (it waited for
// the merges it owed) or followed a time-out that forgave at most R merges, so merges >= R x
// (steps - time-outs - 1) holds exactly, whatever the load; the time-outs must stay a minority of
// the steps for that to say anything.
TEST(MergePace, DaemonsMergeAtLeastRTimesPerLocalStep) {
  const std::string a9a = testing::SharedData("a9a");
  if (!fs::exists(a9a)) GTEST_SKIP() << "no a9a at " << a9a;
  const int n = 6, steps = 800;
  const double pace = 1.5;
  const std::string dir = testing::FreshTempDir("merge-pace-daemons");
  const std::string cluster =
      testing::WriteLoopbackCluster(dir, topology::Ring(n), testing::PortBase() + 2, true);
  std::vector<std::unique_ptr<testing::Subprocess>> procs;
  for (int i = 0; i < n; ++i) {
    const std::string node = std::to_string(i);
    procs.push_back(std::make_unique<testing::Subprocess>(
        std::vector<std::string>{testing::kDaemonBinary,
                                 "--cluster",
                                 cluster,
                                 "--id",
                                 node,
                                 "--secret-key",
                                 dir + "/keys/node-" + node + ".key",
                                 "--algorithm",
                                 "swarmsgd",
                                 "--problem",
                                 "logistic",
                                 "--l2",
                                 "1e-4",
                                 "--data",
                                 a9a,
                                 "--format",
                                 "libsvm",
                                 "--features",
                                 "123",
                                 "--partition",
                                 "dirichlet:0.5",
                                 "--iterations",
                                 std::to_string(steps),
                                 "--batch",
                                 "8",
                                 "--step",
                                 "0.1",
                                 "--seed",
                                 "5",
                                 "--merge-pace",
                                 "1.5"},
        dir + "/node-" + node + ".log"));
  }
  for (int i = 0; i < n; ++i) {
    const int code = procs[i]->Wait(std::chrono::seconds(300));
    const std::string log = testing::ReadFile(dir + "/node-" + std::to_string(i) + ".log");
    ASSERT_EQ(code, 0) << "node " << i << ":\n" << log;
    const Stepping s = SteppingOf(log);
    ASSERT_TRUE(s.found) << "node " << i << " has no stepping line:\n" << log;
    std::printf("node %d: %.0f merges in %.0f local steps (%.3f per step), %.0f pace time-outs\n",
                i, s.merges, s.steps, s.ratio, s.timeouts);
    EXPECT_EQ(s.steps, steps);
    EXPECT_LE(s.timeouts, steps / 4) << log;
    EXPECT_GE(s.merges, pace * (s.steps - s.timeouts - 1)) << log;
    EXPECT_GE(s.ratio, 0.75 * pace) << log;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace starling
