// starling-sim's progress lines (every --progress seconds on stderr) print the objective of the
// last metrics point, which can be many iterations old when --log-every is large against the
// progress period. Such lines can be misread as edge ADMM "flat at objective log 2
// for its first 250 steps" on ER(0.3): the iteration counter moved, the objective printed beside
// it was the starting point's. A progress line now says at which iteration its objective was
// evaluated; these tests check that every line's objective is the one at that iteration.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "node/config/run_setup.h"
#include "node/sim/sim_runner.h"
#include "tests/daemon_cluster.h"
#include "tests/written_data.h"

namespace starling {
namespace {

// iter -> objective of every metrics line of a JSON-lines metrics file.
std::map<int64_t, double> ObjectivesByIteration(const std::string& path) {
  std::map<int64_t, double> out;
  std::ifstream in(path);
  const std::regex point("\"iter\": ?([0-9]+).*\"objective\": ?([-+0-9.eE]+)");
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, point)) out[std::stoll(m[1])] = std::stod(m[2]);
  }
  return out;
}

node::RunConfig Config(const std::string& dir) {
  node::RunConfig config;
  config.algorithm = "gradient-tracking";  // every iteration moves the average model
  config.problem = "logistic";
  config.l2 = 1e-2;
  config.data = testing::WriteLogisticData(dir + "/data.libsvm", 400, 10, 4);
  config.format = "libsvm";
  config.nodes = 4;
  config.topology = "ring";
  config.iterations = 40;
  return config;
}

TEST(SimProgress, EveryLinesObjectiveIsTheOneAtTheIterationItNames) {
  const std::string dir = testing::FreshTempDir("sim-progress");
  // The truth: the same deterministic run with a metrics point at every iteration.
  node::RunConfig dense = Config(dir);
  dense.log_every = 1;
  dense.metrics = dir + "/dense.jsonl";
  node::RunSimulation(dense, node::BuildRunSetup(dense), {});
  const std::map<int64_t, double> truth = ObjectivesByIteration(dense.metrics);
  ASSERT_EQ(truth.size(), 41u);
  ASSERT_NEAR(truth.at(0), std::log(2.0), 1e-12);  // x0 = 0: every label's loss is log 2
  ASSERT_LT(truth.at(20), truth.at(0) - 1e-3);     // the run moves

  // A progress line at every step, a metrics point only every 25 iterations (and the last).
  node::RunConfig sparse = Config(dir);
  sparse.log_every = 25;
  std::ostringstream progress;
  node::SimOptions options;
  options.progress = &progress;
  options.progress_seconds = 0.0;
  node::RunSimulation(sparse, node::BuildRunSetup(sparse), options);

  // "iter 7/40  objective 0.69... (at iter 0)"; the iteration named is the one evaluated.
  const std::regex line_re("iter ([0-9]+)/40  objective ([-+0-9.eE]+)(?: \\(at iter ([0-9]+)\\))?");
  std::istringstream lines(progress.str());
  std::string line;
  int checked = 0, stale = 0;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, line_re)) continue;
    const int64_t now = std::stoll(m[1]);
    const int64_t at = m[3].matched ? std::stoll(m[3]) : now;
    const double objective = std::stod(m[2]);
    ASSERT_TRUE(truth.count(at)) << line;
    EXPECT_NEAR(objective, truth.at(at), 1e-8 * std::abs(truth.at(at))) << line;  // 10 digits
    EXPECT_LE(at, now) << line;
    ++checked;
    stale += at < now;
  }
  EXPECT_EQ(checked, 40) << progress.str();  // one line per step
  EXPECT_GT(stale, 30);                      // most lines fall between metrics points
}

}  // namespace
}  // namespace starling
