// A daemon keeps the training file compact and takes only its own rows (algorithms/data/
// training_rows.h): what it gets must be exactly what expanding the whole file and
// taking the same rows gives. The expected side is built here from ReadIdx, Partition and
// Dataset::Subset directly, the way every process built its problems before.
#include "algorithms/data/training_rows.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "algorithms/data/feature_scaling.h"
#include "algorithms/data/partition.h"
#include "algorithms/data/readers.h"
#include "algorithms/problems/problem_factory.h"
#include "node/config/run_config.h"
#include "node/config/run_setup.h"

namespace starling {
namespace {

// Big-endian IDX header words followed by data bytes, written to `path`.
void WriteIdx(const std::string& path, const std::vector<uint32_t>& words,
              const std::vector<uint8_t>& data) {
  std::ofstream out(path, std::ios::binary);
  for (uint32_t w : words) {
    for (int shift = 24; shift >= 0; shift -= 8) out.put(static_cast<char>(w >> shift));
  }
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

class TrainingRowsTest : public ::testing::Test {
 protected:
  static constexpr int kImages = 300;
  static constexpr int kSide = 5;

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("starling-rows-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    images_ = (dir_ / "t-images-idx3-ubyte").string();
    std::mt19937 rng(7);
    std::vector<uint8_t> pixels(kImages * kSide * kSide), labels(kImages);
    for (auto& p : pixels) p = static_cast<uint8_t>(rng() % 256);
    // Labels 2..6 (not 0..K-1): the label map must still come out the same on both sides.
    for (auto& l : labels) l = static_cast<uint8_t>(2 + rng() % 5);
    WriteIdx(images_, {0x803, kImages, kSide, kSide}, pixels);
    WriteIdx((dir_ / "t-labels-idx1-ubyte").string(), {0x801, kImages}, labels);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  node::RunConfig Config() const {
    node::RunConfig c;
    c.algorithm = "swarmsgd";
    c.problem = "multinomial";
    c.data = images_;
    c.format = "idx";
    c.partition = "dirichlet:0.5";
    c.nodes = 4;
    c.topology = "ring";
    c.l2 = 1e-3;
    c.seed = 3;
    return c;
  }

  std::filesystem::path dir_;
  std::string images_;
};

TEST_F(TrainingRowsTest, CompactRowsEqualTheExpandedFilesRows) {
  const algorithms::Dataset full =
      algorithms::ReadIdx(images_, algorithms::IdxLabelsPathFor(images_));
  algorithms::TrainingRows rows = algorithms::ReadTrainingRows(images_, "auto", 0, {});
  ASSERT_TRUE(rows.compact());
  EXPECT_EQ(rows.num_samples(), kImages);
  EXPECT_EQ(rows.table().num_features, kSide * kSide);
  EXPECT_TRUE(rows.table().labels == full.labels);
  EXPECT_EQ(rows.table().dense.size(), 0) << "compact rows hold no doubles";

  const std::vector<int> picked = {299, 0, 17, 17, 150};
  const algorithms::Dataset got = rows.Subset(picked);
  const algorithms::Dataset want = full.Subset(picked);
  EXPECT_TRUE(got.dense == want.dense);
  EXPECT_TRUE(got.labels == want.labels);
  EXPECT_EQ(got.source, want.source);
  EXPECT_THROW(rows.Subset({kImages}), std::out_of_range);
  EXPECT_THROW(rows.Subset({-1}), std::out_of_range);

  const algorithms::Dataset all = rows.TakeAll();
  EXPECT_TRUE(all.dense == full.dense);
  EXPECT_TRUE(all.labels == full.labels);
}

TEST_F(TrainingRowsTest, DeclaredFeaturesAreCheckedAsReadDatasetDoes) {
  try {
    algorithms::ReadTrainingRows(images_, "idx", 24, {});
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("25 features but 24 were declared"), std::string::npos)
        << e.what();
  }
}

// Every node's problem as every process built it before: the whole file as doubles, partitioned,
// each shard mapped (labels 2..6 -> classes 0..4) and scaled, then the problem.
std::vector<std::unique_ptr<algorithms::Problem>> ExpectedNodeProblems(const node::RunConfig& c) {
  algorithms::Dataset full = algorithms::ReadIdx(c.data, algorithms::IdxLabelsPathFor(c.data));
  const algorithms::Shards shards = algorithms::Partition(full, c.partition, c.nodes, c.seed);
  for (int i = 0; i < full.num_samples(); ++i) full.labels[i] -= 2;
  algorithms::FeatureScaling::Fit(full, c.scale).Apply(&full);
  algorithms::ProblemSpec spec;
  spec.kind = c.problem;
  spec.l2 = c.l2;
  spec.num_classes = 5;
  std::vector<std::unique_ptr<algorithms::Problem>> out;
  for (const auto& shard : shards) {
    out.push_back(algorithms::MakeProblem(spec, full.Subset(shard),
                                          static_cast<double>(c.nodes) / full.num_samples()));
  }
  return out;
}

TEST_F(TrainingRowsTest, DaemonsProblemsAndBoundEqualTheWholeFilesBitForBit) {
  for (const char* scale : {"none", "standard"}) {
    for (double step : {0.0, 0.3}) {  // 0: the default step needs every node's bound
      node::RunConfig c = Config();
      c.scale = scale;
      c.step = step;
      const auto expected = ExpectedNodeProblems(c);
      const node::RunSetup simulator = node::BuildRunSetup(c);
      for (int k = 0; k < c.nodes; ++k) {
        node::BuildScope scope;
        scope.only_node = k;
        scope.global = false;
        const node::RunSetup daemon = node::BuildRunSetup(c, scope);
        const algorithms::Problem& got = *daemon.problems[k];
        const algorithms::Problem& want = *expected[k];
        ASSERT_EQ(got.dim(), want.dim());
        EXPECT_EQ(daemon.smoothness, simulator.smoothness) << scale << " node " << k;
        std::mt19937_64 rng(k);
        Vec x(got.dim());
        for (int j = 0; j < x.size(); ++j) x[j] = static_cast<double>(rng() % 1000) / 500.0 - 1;
        Vec g_got, g_want, g_sim;
        got.Gradient(x, &g_got);
        want.Gradient(x, &g_want);
        simulator.problems[k]->Gradient(x, &g_sim);
        EXPECT_EQ(got.Value(x), want.Value(x)) << scale << " node " << k;
        EXPECT_TRUE(g_got == g_want) << scale << " node " << k;
        EXPECT_TRUE(g_sim == g_want) << scale << " node " << k;
        EXPECT_EQ(got.SmoothnessBound(), want.SmoothnessBound()) << scale << " node " << k;
      }
    }
  }
}

}  // namespace
}  // namespace starling
