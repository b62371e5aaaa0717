// The reference cache (node/config/reference_cache.h): its key changes with each input that
// determines the centralized solution and with nothing else (not the data file's path); a second
// run takes the stored solution instead of solving (its log says so); an entry that is corrupt,
// truncated or of other inputs is ignored with a warning naming it and solved again. Every test
// points XDG_CACHE_HOME at a folder of its own.
#include "node/config/reference_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "node/config/run_setup.h"
#include "node/probe/background_reference.h"
#include "node/sim/sim_runner.h"
#include "tests/temp_dir_test.h"
#include "tests/written_data.h"

namespace starling {
namespace {

namespace fs = std::filesystem;

class ReferenceCacheTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    const char* old = std::getenv("XDG_CACHE_HOME");
    if (old != nullptr) saved_ = old, had_ = true;
    cache_ = dir_ + "/xdg-cache";
    setenv("XDG_CACHE_HOME", cache_.c_str(), 1);
    train_ = testing::WriteLogisticData(dir_ + "/train.svm", 300, 6, 11);
    test_ = testing::WriteLogisticData(dir_ + "/test.svm", 100, 6, 12);
  }
  void TearDown() override {
    if (had_) {
      setenv("XDG_CACHE_HOME", saved_.c_str(), 1);
    } else {
      unsetenv("XDG_CACHE_HOME");
    }
    TempDirTest::TearDown();
  }

  node::RunConfig Config() const {
    node::RunConfig c;
    c.algorithm = "swarmsgd";
    c.problem = "logistic";
    c.l2 = 1e-2;
    c.data = train_;
    c.test_data = test_;
    c.format = "libsvm";
    c.nodes = 3;
    c.topology = "ring";
    c.reference_optimum = "auto";
    return c;
  }
  static std::string KeyOf(const node::RunConfig& c, double tol = 1e-8) {
    const node::RunSetup setup = node::BuildRunSetup(c);
    return node::ReferenceKeyText(c, setup, *setup.global, tol);
  }

  // One monitor's reference: constructed, then waited for; returns what it printed.
  struct Outcome {
    std::string log;
    double f_star = 0;
    Vec x;
    bool solving = false;  // the solve ran here (what the monitor announces at its start)
  };
  Outcome Reference(const node::RunConfig& c) {
    node::RunSetup setup = node::BuildRunSetup(c);
    std::shared_ptr<algorithms::Problem> global = std::move(setup.global);
    std::ostringstream out;
    node::BackgroundReference ref(c, setup, global, 1e-8, out);
    Outcome o;
    o.solving = ref.solving();
    const std::atomic<bool> stop{false};
    ref.Wait(std::chrono::steady_clock::now() + std::chrono::minutes(5), &stop, out);
    o.log = out.str();
    EXPECT_TRUE(ref.f_star().has_value()) << o.log;
    if (ref.f_star()) o.f_star = *ref.f_star();
    if (ref.solution()) o.x = ref.solution()->x;
    return o;
  }
  std::string EntryPath(const node::RunConfig& c) const {
    return node::ReferenceEntryPath(cache_ + "/starling", KeyOf(c));
  }

  std::string cache_, train_, test_, saved_;
  bool had_ = false;
};

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_F(ReferenceCacheTest, CacheFolderFollowsXdg) {
  EXPECT_EQ(node::ReferenceCacheDir(), cache_ + "/starling");
  setenv("XDG_CACHE_HOME", "relative/ignored", 1);  // the XDG rule: only absolute paths count
  const char* home = std::getenv("HOME");
  if (home != nullptr) {
    EXPECT_EQ(node::ReferenceCacheDir(), std::string(home) + "/.cache/starling");
  }
}

TEST_F(ReferenceCacheTest, KeyChangesWithEachInputAndNotWithThePath) {
  const node::RunConfig base = Config();
  const std::string key = KeyOf(base);
  EXPECT_EQ(KeyOf(base), key);  // deterministic

  // The same bytes under another name: the same key (the cache follows contents, not paths).
  node::RunConfig c = base;
  c.data = dir_ + "/copy-of-train.svm";
  fs::copy_file(train_, c.data);
  EXPECT_EQ(KeyOf(c), key);
  // One byte of the data changed, same size: a label flipped.
  {
    std::ifstream in(train_);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t at = text.find("\n+1");
    ASSERT_NE(at, std::string::npos);
    text[at + 1] = '-';
    std::ofstream(c.data) << text;
    ASSERT_EQ(fs::file_size(c.data), fs::file_size(train_));
  }
  EXPECT_NE(KeyOf(c), key) << "data bytes";
  // The test file's bytes (its accuracy is cached too).
  c = base;
  c.test_data = testing::WriteLogisticData(dir_ + "/test2.svm", 100, 6, 13);
  EXPECT_NE(KeyOf(c), key) << "test data";
  c = base;
  c.l2 = 2e-2;
  EXPECT_NE(KeyOf(c), key) << "lambda";
  c = base;
  c.scale = "standard";
  EXPECT_NE(KeyOf(c), key) << "scaling";
  c = base;
  c.problem = "least-squares";
  EXPECT_NE(KeyOf(c), key) << "problem";
  c = base;
  c.features = 9;
  EXPECT_NE(KeyOf(c), key) << "features";
  c = base;
  c.loss_scale = 0.5;
  EXPECT_NE(KeyOf(c), key) << "loss scale";
  EXPECT_NE(KeyOf(base, 1e-6), key) << "tolerance";
  // The label map: the same multinomial file read with 3 classes or with 4 (one absent).
  c = base;
  c.problem = "multinomial";
  c.data = testing::WriteMultinomialData(dir_ + "/multi.svm", 200, 4, 3, 5);
  c.test_data.clear();
  const std::string three = KeyOf(c);
  c.num_classes = 4;
  const std::string four = KeyOf(c);
  EXPECT_NE(three, four) << "label map";
  EXPECT_TRUE(Has(four, "num_classes=4")) << four;
  // What cannot change the centralized problem does not change the key. (The node count can,
  // by one rounding: the centralized loss scale is (N/M)/N, keyed at full precision.)
  c = base;
  c.partition = "label";
  c.seed = 9;
  c.step = 0.3;
  c.iterations = 77;
  EXPECT_EQ(KeyOf(c), key);
}

TEST_F(ReferenceCacheTest, SecondRunTakesTheStoredSolution) {
  const node::RunConfig c = Config();
  const Outcome first = Reference(c);
  EXPECT_FALSE(Has(first.log, "from the reference cache")) << first.log;
  EXPECT_TRUE(Has(first.log, "stored in the reference cache: " + EntryPath(c))) << first.log;
  ASSERT_TRUE(fs::exists(EntryPath(c)));
  // A first run solves, and says how long the solve took.
  EXPECT_TRUE(first.solving);
  EXPECT_TRUE(Has(first.log, " s beside the run)")) << first.log;

  const Outcome second = Reference(c);
  EXPECT_TRUE(Has(second.log, "from the reference cache: " + EntryPath(c))) << second.log;
  EXPECT_FALSE(Has(second.log, "stored in")) << second.log;
  EXPECT_FALSE(second.solving);
  EXPECT_FALSE(Has(second.log, "beside the run")) << second.log;
  EXPECT_EQ(second.f_star, first.f_star);  // bit for bit: 17 significant digits round-trip
  ASSERT_EQ(second.x.size(), first.x.size());
  EXPECT_EQ(second.x, first.x);

  // The simulator's --reference-optimum auto uses the cache too (its own tolerance: 1e-10).
  std::ostringstream sim_log;
  const node::RunSetup setup = node::BuildRunSetup(c);
  const auto f1 = node::ResolveReferenceOptimum(c, setup, &sim_log);
  EXPECT_FALSE(Has(sim_log.str(), "from the reference cache")) << sim_log.str();
  std::ostringstream again;
  const auto f2 = node::ResolveReferenceOptimum(c, setup, &again);
  EXPECT_TRUE(Has(again.str(), "from the reference cache")) << again.str();
  EXPECT_EQ(f1, f2);

  // Another lambda is another entry: solved, not taken.
  node::RunConfig other = c;
  other.l2 = 3e-2;
  const Outcome third = Reference(other);
  EXPECT_FALSE(Has(third.log, "from the reference cache")) << third.log;
  EXPECT_NE(third.f_star, first.f_star);
}

TEST_F(ReferenceCacheTest, CorruptTruncatedOrForeignEntriesAreIgnoredAndSolvedAgain) {
  const node::RunConfig c = Config();
  const Outcome first = Reference(c);
  const std::string path = EntryPath(c);
  std::string good;
  {
    std::ifstream in(path);
    good.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  // A changed digit in f_star: the checksum fails.
  std::string corrupt = good;
  const size_t at = corrupt.find("f_star ") + 9;
  corrupt[at] = corrupt[at] == '1' ? '2' : '1';
  std::ofstream(path) << corrupt;
  Outcome o = Reference(c);
  EXPECT_TRUE(Has(o.log, "warning: reference cache entry " + path + " fails its checksum"))
      << o.log;
  EXPECT_FALSE(Has(o.log, "from the reference cache")) << o.log;
  EXPECT_EQ(o.f_star, first.f_star);  // solved again
  EXPECT_TRUE(Has(o.log, "stored in the reference cache")) << o.log;
  EXPECT_TRUE(Has(Reference(c).log, "from the reference cache")) << "rewritten";

  // Truncated (half the file), and garbage.
  std::ofstream(path) << good.substr(0, good.size() / 2);
  o = Reference(c);
  EXPECT_TRUE(Has(o.log, path + " has no checksum line")) << o.log;
  EXPECT_EQ(o.f_star, first.f_star);
  std::ofstream(path) << "\x01\x02 not an entry";
  o = Reference(c);
  EXPECT_TRUE(Has(o.log, "warning: reference cache entry " + path)) << o.log;
  EXPECT_EQ(o.f_star, first.f_star);

  // An entry of other inputs under this key's name (as a file-name collision would leave it):
  // a valid entry, checksum and all, but its key text differs.
  node::RunConfig other = c;
  other.l2 = 5e-2;
  const Outcome foreign = Reference(other);
  fs::copy_file(EntryPath(other), path, fs::copy_options::overwrite_existing);
  o = Reference(c);
  EXPECT_TRUE(Has(o.log, path + " belongs to other inputs")) << o.log;
  EXPECT_EQ(o.f_star, first.f_star);
  EXPECT_NE(o.f_star, foreign.f_star);
}

TEST_F(ReferenceCacheTest, AnUnwritableCacheOnlyWarns) {
  // XDG_CACHE_HOME is a file: the folder cannot be made. The run still gets its f*.
  std::ofstream(dir_ + "/a-file") << "x";
  setenv("XDG_CACHE_HOME", (dir_ + "/a-file").c_str(), 1);
  const Outcome o = Reference(Config());
  EXPECT_TRUE(Has(o.log, "warning: cannot write the reference cache entry")) << o.log;
  EXPECT_GT(o.f_star, 0);
}

}  // namespace
}  // namespace starling
