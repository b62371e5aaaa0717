// Every metrics file starts with the run's header line ("the mapping is printed once at
// start and recorded in the metrics header and in the run id"): the simulator's, each daemon's
// node-K.jsonl and the monitor's metrics.jsonl, with the same run id, label map and scaling. The
// daemons and the monitor run as a user starts them, through examples/launch_local.py.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/subprocess.h"
#include "tests/temp_dir_test.h"

namespace starling {
namespace {

const std::string kBin = std::string(STARLING_BINARY_DIR) + "/node";
const std::string kLauncher = std::string(STARLING_SOURCE_DIR) + "/examples/launch_local.py";

// The value of "key":"..." in a flat JSON line, or "" if absent.
std::string StringField(const std::string& line, const std::string& key) {
  const std::string tag = "\"" + key + "\":\"";
  const size_t at = line.find(tag);
  if (at == std::string::npos) return "";
  const size_t end = line.find('"', at + tag.size());
  return line.substr(at + tag.size(), end - at - tag.size());
}

std::vector<std::string> LinesOf(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class MetricsHeader : public testing::TempDirTest {
 protected:
  // Binary labels written 1/2 and features of scales 1..1e4, so that both the map and the
  // scaling have something to say.
  std::string WriteData() {
    std::mt19937 rng(3);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::ostringstream csv;
    for (int i = 0; i < 120; ++i) {
      const int y = i % 2 ? 2 : 1;
      csv << y;
      double scale = 1;
      for (int j = 0; j < 4; ++j, scale *= 10) {
        csv << "," << scale * ((y == 2 ? 0.6 : -0.6) + normal(rng));
      }
      csv << "\n";
    }
    return Write("data.csv", csv.str());
  }
};

TEST_F(MetricsHeader, SimulatorDaemonsAndMonitorWriteTheSameHeader) {
  const std::string data = WriteData();
  const std::vector<std::string> run = {"--algorithm", "extra", "--iterations", "300",
                                        "--data",      data,    "--scale",      "maxabs",
                                        "--l2",        "1e-2",  "--seed",       "1"};
  // The simulator.
  std::vector<std::string> sim = {
      kBin + "/starling-sim", "--nodes", "3", "--topology", "ring", "-q", "--metrics",
      dir_ + "/sim.jsonl"};
  sim.insert(sim.end(), run.begin(), run.end());
  testing::Subprocess s(sim, dir_ + "/sim.log");
  ASSERT_EQ(s.Wait(std::chrono::seconds(300)), 0) << testing::ReadFile(dir_ + "/sim.log");

  // Three daemons and the monitor, through the launcher.
  std::vector<std::string> launch = {"/usr/bin/python3",
                                     kLauncher,
                                     "--nodes",
                                     "3",
                                     "--topology",
                                     "ring",
                                     "--out",
                                     dir_ + "/run",
                                     "--port",
                                     std::to_string(testing::PortBase()),
                                     "--bin-dir",
                                     kBin,
                                     "--no-plots",
                                     "--timeout-s",
                                     "600",
                                     "--telemetry-ms",
                                     "200",
                                     "--interval-ms",
                                     "200"};
  launch.insert(launch.end(), run.begin(), run.end());
  launch.erase(launch.end() - 2, launch.end());  // the launcher sets --seed itself
  testing::Subprocess l(launch, dir_ + "/launch.log");
  ASSERT_EQ(l.Wait(std::chrono::seconds(700)), 0) << testing::ReadFile(dir_ + "/launch.log");

  std::vector<std::pair<std::string, std::string>> files = {{"sim.jsonl", "starling-sim"}};
  for (int i = 0; i < 3; ++i)
    files.push_back({"run/node-" + std::to_string(i) + ".jsonl", "starlingd"});
  files.push_back({"run/metrics.jsonl", "starling-probe monitor"});
  std::string run_id;
  for (const auto& [file, tool] : files) {
    const std::vector<std::string> lines = LinesOf(dir_ + "/" + file);
    ASSERT_GE(lines.size(), 2u) << file;
    const std::string& header = lines[0];
    EXPECT_EQ(StringField(header, "header"), tool) << file << ": " << header;
    EXPECT_EQ(header.find("\"iter\""), std::string::npos) << file << ": " << header;
    EXPECT_EQ(StringField(header, "labels").rfind("--data " + data + ": 1 -> -1, 2 -> +1", 0), 0u)
        << file << ": " << header;
    EXPECT_EQ(StringField(header, "scale").rfind("maxabs", 0), 0u) << file << ": " << header;
    const std::string id = StringField(header, "run_id");
    EXPECT_EQ(id.size(), 18u) << file << ": " << header;
    if (run_id.empty()) run_id = id;
    EXPECT_EQ(id, run_id) << file << ": the run id differs from sim.jsonl's";
    // Every later line is a point.
    for (size_t k = 1; k < lines.size(); ++k) {
      EXPECT_NE(lines[k].find("\"iter\":"), std::string::npos) << file << " line " << k + 1;
    }
  }
}

}  // namespace
}  // namespace starling
