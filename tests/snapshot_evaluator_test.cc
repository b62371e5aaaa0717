// The snapshot evaluation (starling-probe evaluate) against a direct evaluation of the same
// vectors, computed here from the rows this test writes: the L2-logistic objective
// (1/M) sum log(1 + exp(-y a.x)) + (lambda/2)||x||^2 at the average model, the held-out accuracy,
// the consensus distance and the nodes' own objectives; and the format's edges (a record cut
// short, another run's snapshots, a node missing a step).
#include "node/probe/snapshot_evaluator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "node/config/run_id.h"
#include "node/config/run_setup.h"
#include "node/daemon/model_snapshots.h"
#include "node/report/snapshot_file.h"
#include "tests/logistic_rows.h"
#include "tests/temp_dir_test.h"
#include "topology/cluster_file.h"
#include "topology/generators.h"

namespace starling::node {
namespace {

using testing::Accuracy;
using testing::Objective;
using testing::Row;
using testing::TempDirTest;
using testing::WriteRows;

// The number after "key": in a flat JSON line; NaN if absent.
double Field(const std::string& line, const std::string& key) {
  const size_t at = line.find("\"" + key + "\":");
  if (at == std::string::npos) return std::nan("");
  return std::strtod(line.c_str() + at + key.size() + 3, nullptr);
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class SnapshotEvaluatorTest : public TempDirTest {
 protected:
  static constexpr int kNodes = 3, kDim = 4;
  static constexpr double kL2 = 0.05;

  void SetUp() override {
    TempDirTest::SetUp();
    train_ = WriteRows(dir_ + "/train.svm", 120, kDim, 11);
    test_ = WriteRows(dir_ + "/test.svm", 60, kDim, 12);
    topology::Cluster cluster;
    cluster.graph = topology::MakeTopology("ring", kNodes, 1);
    for (int i = 0; i < kNodes; ++i) {
      cluster.nodes.push_back({i, "tcp://127.0.0." + std::to_string(i + 1) + ":7100", ""});
    }
    cluster_ = dir_ + "/cluster.conf";
    topology::WriteClusterFile(cluster, cluster_);
    options_.run.algorithm = "extra";
    options_.run.problem = "logistic";
    options_.run.l2 = kL2;
    options_.run.data = dir_ + "/train.svm";
    options_.run.test_data = dir_ + "/test.svm";
    options_.run.format = "libsvm";
    options_.run.iterations = 30;
    options_.run.reference_optimum = "0.25";
    options_.run_dir = dir_;
    options_.evaluate.band_points = -1;
    options_.evaluate.threads = 2;
    RunConfig config = options_.run;
    config.nodes = kNodes;
    config.topology = "file:" + cluster_;
    BuildScope scope;
    scope.node_problems = false;
    const RunSetup setup = BuildRunSetup(config, scope);
    ASSERT_EQ(setup.dim, kDim);
    run_id_ = RunIdFor(config, setup);
  }

  std::vector<double> Model(int node, int64_t step) const {
    std::vector<double> x;
    for (int j = 0; j < kDim; ++j) x.push_back(std::sin(1.0 + node * 7.0 + step * 0.3 + j) * 0.4);
    return x;
  }

  // Node k's snapshots at `steps`, then its final model at `final_step` (if >= 0).
  void WriteNode(int k, const std::vector<int64_t>& steps, int64_t final_step, uint64_t run_id) {
    SnapshotFileWriter w(dir_ + "/snapshots-" + std::to_string(k) + ".bin", false);
    SnapshotHeader h;
    h.node = k;
    h.dim = kDim;
    h.run_id = run_id;
    h.spacing = 10;
    h.start_unix_time = 1000.0 + k;
    ASSERT_TRUE(w.WriteHeader(h));
    auto write = [&](int64_t step, bool final) {
      SnapshotRecord r;
      r.final = final;
      r.step = step;
      r.unix_time = 1000.0 + k + 0.5 * static_cast<double>(step) + (final ? 2.0 : 0.0);
      r.bytes_sent = 100 * static_cast<uint64_t>(step) + k;
      const std::vector<double> x = Model(k, final ? 999 : step);
      ASSERT_TRUE(w.Write(r, Eigen::Map<const Vec>(x.data(), kDim)));
    };
    for (int64_t s : steps) write(s, false);
    if (final_step >= 0) write(final_step, true);
  }

  std::vector<Row> train_, test_;
  std::string cluster_;
  EvaluateRunOptions options_;
  uint64_t run_id_ = 0;
};

TEST_F(SnapshotEvaluatorTest, EqualsADirectEvaluationOfTheSameModels) {
  WriteNode(0, {0, 10, 20, 30}, 30, run_id_);
  WriteNode(1, {0, 10, 20, 30}, 30, run_id_);
  WriteNode(2, {0, 20, 30}, 30, run_id_);  // no snapshot at step 10: that step is left out
  std::ostringstream out;
  ASSERT_EQ(RunEvaluate(options_, out), 0) << out.str();
  const std::vector<std::string> lines = Lines(dir_ + "/curves.jsonl");
  ASSERT_EQ(lines.size(), 5u) << out.str();  // header, steps 0, 20, 30, final
  EXPECT_EQ(lines[0].find("\"iter\""), std::string::npos) << lines[0];
  EXPECT_NE(out.str().find("1 steps left out"), std::string::npos) << out.str();
  const std::vector<int64_t> steps = {0, 20, 30, 999};
  for (size_t p = 0; p < steps.size(); ++p) {
    const std::string& line = lines[p + 1];
    const bool final = steps[p] == 999;
    std::vector<double> mean(kDim, 0.0);
    std::vector<std::vector<double>> xs;
    for (int k = 0; k < kNodes; ++k) {
      xs.push_back(Model(k, steps[p]));
      for (int j = 0; j < kDim; ++j) mean[j] += xs.back()[j] / kNodes;
    }
    double consensus = 0, lo = 1e300, hi = -1e300;
    for (const auto& x : xs) {
      for (int j = 0; j < kDim; ++j) consensus += (x[j] - mean[j]) * (x[j] - mean[j]) / kNodes;
      lo = std::min(lo, Objective(train_, kL2, x));
      hi = std::max(hi, Objective(train_, kL2, x));
    }
    const double f = Objective(train_, kL2, mean);
    SCOPED_TRACE(line);
    EXPECT_EQ(Field(line, "final"), final ? 1 : 0);
    EXPECT_EQ(Field(line, "iter"), final ? 30 : steps[p]);
    EXPECT_NEAR(Field(line, "objective"), f, 1e-12 * f);
    EXPECT_NEAR(Field(line, "rel_gap"), (f - 0.25) / 0.25, 1e-11);
    EXPECT_DOUBLE_EQ(Field(line, "test_accuracy"), Accuracy(test_, mean));
    EXPECT_NEAR(Field(line, "consensus"), consensus, 1e-12 * consensus);
    EXPECT_NEAR(Field(line, "node_objective_min"), lo, 1e-12 * lo);
    EXPECT_NEAR(Field(line, "node_objective_max"), hi, 1e-12 * hi);
    // The latest node's clock (node 2 starts last), from the first node's start (1000).
    const double latest = 2.0 + 0.5 * (final ? 30 : steps[p]) + (final ? 2.0 : 0.0);
    EXPECT_NEAR(Field(line, "time"), latest, 1e-9);
    const double step = final ? 30 : steps[p];
    EXPECT_EQ(Field(line, "bytes"), 3 * 100 * step + 0 + 1 + 2);
    EXPECT_EQ(Field(line, "total_steps"), 3 * step);
  }
}

TEST_F(SnapshotEvaluatorTest, RefusesAnotherRunsSnapshots) {
  WriteNode(0, {0, 10}, 10, run_id_);
  WriteNode(1, {0, 10}, 10, run_id_ ^ 1);
  WriteNode(2, {0, 10}, 10, run_id_);
  std::ostringstream out;
  try {
    RunEvaluate(options_, out);
    FAIL() << "evaluated another run's snapshots";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("snapshots-1.bin: snapshots of another run"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(SnapshotEvaluatorTest, DropsARecordCutShortAndRefusesGarbage) {
  WriteNode(0, {0, 10, 20}, -1, run_id_);
  const std::string path = dir_ + "/snapshots-0.bin";
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 5);  // the last record cut short
  const SnapshotFile f = ReadSnapshotFile(path, 100);
  EXPECT_TRUE(f.truncated);
  ASSERT_EQ(f.records.size(), 2u);
  EXPECT_EQ(f.records[1].step, 10);
  EXPECT_EQ(f.header.node, 0);
  EXPECT_EQ(f.header.spacing, 10);
  // A corrupted record magic names the file and the byte.
  {
    std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(kSnapshotHeaderBytes + SnapshotRecordBytes(kDim)));
    io.put('X');
  }
  try {
    ReadSnapshotFile(path, 100);
    FAIL() << "read a corrupted record";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("snapshots-0.bin (byte 136): not a snapshot record"),
              std::string::npos)
        << e.what();
  }
  // A dimension above the bound (a header from another problem) is refused before allocating.
  EXPECT_THROW(ReadSnapshotFile(path, kDim - 1), std::runtime_error);
  std::ofstream(dir_ + "/not.bin") << "hello";
  EXPECT_THROW(ReadSnapshotFile(dir_ + "/not.bin", 100), std::runtime_error);
}

TEST(SnapshotSpacing, About64PerRunWithinTheSizeBound) {
  EXPECT_EQ(SnapshotSpacing(2048, 0, 7850, 256000000), 32);
  EXPECT_EQ(SnapshotSpacing(2049, 0, 7850, 256000000), 33);  // at most 64 after step 0
  EXPECT_EQ(SnapshotSpacing(50, 0, 10, 256000000), 1);
  EXPECT_EQ(SnapshotSpacing(2000, 7, 7850, 1000), 7);  // as asked
  // 8 MB records, 100 MB: 12 fit, so steps 0, 200, ..., 2000 and the final model.
  EXPECT_EQ(SnapshotSpacing(2000, 0, 1000000, 100000000), 200);
}

TEST_F(SnapshotEvaluatorTest, WriterTakesDueStepsOnceAndKeepsRoomForTheFinalModel) {
  const std::string path = dir_ + "/w.bin";
  const uint64_t record = SnapshotRecordBytes(kDim);
  // Room for the header and four records.
  ModelSnapshots s(path, false, 5, kSnapshotHeaderBytes + 4 * record);
  SnapshotHeader h;
  h.dim = kDim;
  h.spacing = 5;
  s.Begin(h);
  const Vec x = Vec::Constant(kDim, 0.5);
  std::vector<int64_t> written;
  for (int64_t step : {0, 0, 3, 5, 5, 10, 15, 20}) {
    if (s.Offer(step, x, 0, 0, 0, 0.0, false)) written.push_back(step);
  }
  EXPECT_EQ(written, (std::vector<int64_t>{0, 5, 10}));  // 15 would leave no room for the final
  EXPECT_TRUE(s.Offer(20, x, 0, 0, 0, 0.0, true));
  const SnapshotFile f = ReadSnapshotFile(path, kDim);
  ASSERT_EQ(f.records.size(), 4u);
  EXPECT_TRUE(f.records[3].final);
  EXPECT_EQ(std::filesystem::file_size(path), kSnapshotHeaderBytes + 4 * record);
}

TEST_F(SnapshotEvaluatorTest, AResumedNodeAppendsAndItsLaterSnapshotsWin) {
  WriteNode(0, {0, 10, 20, 30}, 30, run_id_);
  WriteNode(1, {0, 10, 20, 30}, 30, run_id_);
  // Node 2's first life wrote steps 0..20 with other models; its second life (--resume, from a
  // checkpoint at step 10) appends steps 20 and 30 and its final model, without a new header.
  const std::string path = dir_ + "/snapshots-2.bin";
  {
    SnapshotFileWriter w(path, false);
    SnapshotHeader h;
    h.node = 2;
    h.dim = kDim;
    h.run_id = run_id_;
    h.spacing = 10;
    h.start_unix_time = 1002.0;
    ASSERT_TRUE(w.WriteHeader(h));
    for (int64_t step : {0, 10, 20}) {
      SnapshotRecord r;
      r.step = step;
      r.unix_time = 1002.0 + 0.5 * static_cast<double>(step);
      const Vec stale = Vec::Constant(kDim, step == 0 ? 0.0 : 9.0);  // 20's is replaced below
      const std::vector<double> x0 = Model(2, 0);
      ASSERT_TRUE(w.Write(r, step == 0 ? Eigen::Map<const Vec>(x0.data(), kDim) : stale));
    }
  }
  {
    ModelSnapshots resumed(path, /*resume=*/true, 10, 1 << 20);
    SnapshotHeader ignored;  // appending: the file keeps its header
    ignored.node = 7;
    resumed.Begin(ignored);
    for (int64_t step : {10, 20, 30}) {
      const std::vector<double> x = Model(2, step);
      resumed.Offer(step, Eigen::Map<const Vec>(x.data(), kDim), 0, 100 * step + 2, 0, 0, false);
    }
    const std::vector<double> x = Model(2, 999);
    resumed.Offer(30, Eigen::Map<const Vec>(x.data(), kDim), 0, 3002, 0, 0, true);
  }
  const SnapshotFile f = ReadSnapshotFile(path, kDim);
  EXPECT_EQ(f.header.node, 2);
  EXPECT_EQ(f.records.size(), 7u);
  std::ostringstream out;
  ASSERT_EQ(RunEvaluate(options_, out), 0) << out.str();
  const std::vector<std::string> lines = Lines(dir_ + "/curves.jsonl");
  ASSERT_EQ(lines.size(), 6u);  // header, steps 0, 10, 20, 30, final
  for (size_t p = 1; p < lines.size(); ++p) {
    const int64_t step = p == 5 ? 999 : static_cast<int64_t>(10 * (p - 1));
    std::vector<double> mean(kDim, 0.0);
    for (int k = 0; k < kNodes; ++k) {
      const std::vector<double> x = Model(k, step);
      for (int j = 0; j < kDim; ++j) mean[j] += x[j] / kNodes;
    }
    const double f_mean = Objective(train_, kL2, mean);
    EXPECT_NEAR(Field(lines[p], "objective"), f_mean, 1e-12 * f_mean) << lines[p];
  }
}

}  // namespace
}  // namespace starling::node
