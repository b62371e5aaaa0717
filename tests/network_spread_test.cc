// The progress gate across a whole network of real daemons: a slow node holds every node of a
// ring, not only its neighbours, within --iterations/40 local steps of itself, so no part of the
// network runs ahead on its own shards or ends the run alone (docs/explanations/exchange.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/daemon_cluster.h"
#include "tests/subprocess.h"
#include "topology/generators.h"

namespace starling {
namespace {

// (unix time, local steps) of every metrics line of a daemon, in file order.
std::vector<std::pair<double, int64_t>> StepsOverTime(const std::string& path) {
  std::vector<std::pair<double, int64_t>> points;
  std::istringstream in(testing::ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("\"unix_time\":") == std::string::npos) continue;  // the header
    points.emplace_back(testing::MetricsField(line, "unix_time"),
                        static_cast<int64_t>(testing::MetricsField(line, "iter")));
  }
  return points;
}

// A node's count at time t: its last line at or before t (-1 before its first line).
int64_t StepsAt(const std::vector<std::pair<double, int64_t>>& points, double t) {
  int64_t steps = -1;
  for (const auto& [when, count] : points) {
    if (when > t) break;
    steps = count;
  }
  return steps;
}

// 8 daemons on a ring (diameter 4); node 0 takes 3 x 2 ms per local step (--compute-delay-ms 2,
// --slow-node 0:3), the others 2 ms, so every other node would run ahead of it as far as the
// gate lets it, whatever the machine's load. A window of budget/40 per edge would let node 4, four
// hops from node 0, run 4 x 40 = 160 steps ahead of it, and the far side finish while node 0 still
// had 160 steps to take alone. The whole ring must stay within budget/40 = 40 steps of its slowest
// node, measured at every metrics line of any node (every 50 ms) until the last one finishes,
// with 30 steps of slack for what a metrics line and a count said every window/4 steps lag
// behind (the slow node takes about 8 steps in 50 ms).
TEST(NetworkSpread, ASlowNodeHoldsTheWholeRingWithinABudgetFortieth) {
  const std::string dir = testing::FreshTempDir("network-spread");
  {
    std::ofstream out(dir + "/d.csv");
    for (int r = 0; r < 400; ++r) {
      out << (r % 7) * 0.3 << ',' << (r % 13) * 0.01 << ',' << 1.0 - (r % 11) * 0.05 << '\n';
    }
  }
  const int n = 8;
  const int64_t budget = 1600;
  const std::string cluster =
      testing::WriteLoopbackCluster(dir, topology::Ring(n), testing::PortBase() + 40, false);
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
                                 "--batch",
                                 "8",
                                 "--step",
                                 "0.01",
                                 "--compute-delay-ms",
                                 "2",
                                 "--slow-node",
                                 "0:3",
                                 "--telemetry-ms",
                                 "50",
                                 "--metrics",
                                 dir + "/node-" + id + ".jsonl"},
        dir + "/node-" + id + ".log"));
  }
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(procs[i]->Wait(std::chrono::seconds(300)), 0)
        << testing::ReadFile(dir + "/node-" + std::to_string(i) + ".log");
  }
  std::vector<std::vector<std::pair<double, int64_t>>> steps;
  std::vector<double> times;
  for (int i = 0; i < n; ++i) {
    steps.push_back(StepsOverTime(dir + "/node-" + std::to_string(i) + ".jsonl"));
    ASSERT_FALSE(steps.back().empty()) << "node " << i << " wrote no metrics";
    ASSERT_EQ(steps.back().back().second, budget) << "node " << i << " did not end its budget";
    for (const auto& p : steps.back()) times.push_back(p.first);
  }
  std::sort(times.begin(), times.end());
  int64_t worst = 0;
  double worst_at = 0;
  std::vector<int64_t> worst_counts;
  for (double t : times) {
    std::vector<int64_t> counts;
    for (const auto& s : steps) counts.push_back(StepsAt(s, t));
    if (*std::min_element(counts.begin(), counts.end()) < 0) continue;  // a node not up yet
    const int64_t spread = *std::max_element(counts.begin(), counts.end()) -
                           *std::min_element(counts.begin(), counts.end());
    if (spread > worst) worst = spread, worst_at = t, worst_counts = counts;
    if (*std::min_element(counts.begin(), counts.end()) == budget) break;
  }
  std::string at;
  for (int64_t c : worst_counts) at += " " + std::to_string(c);
  std::printf("largest spread of local steps: %lld (nodes 0..7 at:%s)\n",
              static_cast<long long>(worst), at.c_str());
  EXPECT_LE(worst, budget / 40 + 30) << "at unix time " << worst_at << ", nodes 0..7 at" << at;
  // The gate said so at start: node 0's window on this ring.
  EXPECT_NE(testing::ReadFile(dir + "/node-0.log").find("stays within 10 local steps of each"),
            std::string::npos)
      << testing::ReadFile(dir + "/node-0.log");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace starling
