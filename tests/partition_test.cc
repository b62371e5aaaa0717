// Partitioning: coverage, sizes, determinism and the label skew of each scheme.
#include "algorithms/data/partition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/data/readers.h"
#include "tests/test_data.h"

namespace starling::algorithms {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// Labels only (the partitioners never look at the features), with a one-column dense matrix so
// the data set is well formed.
Dataset WithLabels(const std::vector<double>& labels) {
  Dataset data;
  data.num_features = 1;
  data.labels = Eigen::Map<const Vec>(labels.data(), static_cast<Eigen::Index>(labels.size()));
  data.dense = DenseMatrix::Zero(data.labels.size(), 1);
  data.source = "labels";
  return data;
}

// `classes` classes with `per_class` rows each, interleaved: row i has label i % classes.
Dataset Interleaved(int classes, int per_class) {
  std::vector<double> labels;
  for (int i = 0; i < classes * per_class; ++i) labels.push_back(i % classes);
  return WithLabels(labels);
}

// Every row in exactly one shard, every shard non-empty and in ascending order.
void ExpectPartition(const Shards& shards, int rows, int nodes) {
  ASSERT_EQ(static_cast<int>(shards.size()), nodes);
  std::vector<int> seen(rows, 0);
  for (int j = 0; j < nodes; ++j) {
    EXPECT_FALSE(shards[j].empty()) << "node " << j;
    EXPECT_TRUE(std::is_sorted(shards[j].begin(), shards[j].end())) << "node " << j;
    for (int r : shards[j]) {
      ASSERT_GE(r, 0);
      ASSERT_LT(r, rows);
      ++seen[r];
    }
  }
  for (int r = 0; r < rows; ++r) ASSERT_EQ(seen[r], 1) << "row " << r;
}

void ExpectNearEqualSizes(const Shards& shards, int rows) {
  const int nodes = static_cast<int>(shards.size());
  for (const auto& shard : shards) {
    EXPECT_GE(static_cast<int>(shard.size()), rows / nodes);
    EXPECT_LE(static_cast<int>(shard.size()), (rows + nodes - 1) / nodes);
  }
}

std::set<double> ClassesOf(const Dataset& data, const std::vector<int>& shard) {
  std::set<double> classes;
  for (int r : shard) classes.insert(data.labels[r]);
  return classes;
}

std::string ErrorOf(const std::function<void()>& run) {
  try {
    run();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a std::runtime_error";
  return "";
}

std::string InvalidArgumentOf(const std::function<void()>& run) {
  try {
    run();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a std::invalid_argument";
  return "";
}

// Shard values computed outside this code: a Python implementation of mt19937_64 (checked against
// the standard's 10000th output for the default seed, 9981545732273789042) running the documented
// algorithm, a Fisher-Yates shuffle drawing j in [0, i) by rejection (x < 2^64-1 - (2^64-1) % i,
// then x % i), cut at n*j/N, each shard sorted; for "label", a stable sort by label after the
// shuffle. Equal values pin the shards across standard libraries, not just across runs.
TEST(PartitionIid, MatchesIndependentComputation) {
  EXPECT_EQ(PartitionIid(Interleaved(1, 10), 3, 42), Shards({{1, 7, 9}, {0, 3, 8}, {2, 4, 5, 6}}));
  EXPECT_EQ(PartitionIid(Interleaved(1, 12), 4, 7),
            Shards({{0, 2, 4}, {6, 9, 10}, {1, 5, 11}, {3, 7, 8}}));
}

TEST(PartitionByLabel, MatchesIndependentComputation) {
  EXPECT_EQ(PartitionByLabel(WithLabels({0, 1, 2, 0, 1, 2, 0, 1, 2, 0}), 4, 11),
            Shards({{3, 6}, {0, 1, 9}, {4, 7}, {2, 5, 8}}));
}

TEST(PartitionIid, CoversRowsEvenlyAndMixesClasses) {
  const Dataset data = Interleaved(10, 100);
  for (int nodes : {1, 3, 7, 16, 1000}) {
    SCOPED_TRACE(nodes);
    const Shards shards = PartitionIid(data, nodes, 5);
    ExpectPartition(shards, 1000, nodes);
    ExpectNearEqualSizes(shards, 1000);
  }
  // A shuffle, not a contiguous cut: with 4 nodes of 250 rows, every node sees every class.
  const Shards shards = PartitionIid(data, 4, 5);
  for (const auto& shard : shards) EXPECT_EQ(ClassesOf(data, shard).size(), 10u);
  std::vector<int> first_rows(250);
  std::iota(first_rows.begin(), first_rows.end(), 0);
  EXPECT_NE(shards[0], first_rows);
}

TEST(PartitionIid, DeterministicPerSeed) {
  const Dataset data = Interleaved(10, 100);
  EXPECT_EQ(PartitionIid(data, 8, 123), PartitionIid(data, 8, 123));
  EXPECT_NE(PartitionIid(data, 8, 123), PartitionIid(data, 8, 124));
  EXPECT_EQ(Partition(data, "iid", 8, 123), PartitionIid(data, 8, 123));
}

TEST(PartitionByLabel, FewClassesPerNode) {
  const Dataset data = Interleaved(10, 100);
  // As many nodes as classes of equal size: exactly one class per node.
  const Shards ten = PartitionByLabel(data, 10, 3);
  ExpectPartition(ten, 1000, 10);
  for (int j = 0; j < 10; ++j) {
    EXPECT_EQ(ClassesOf(data, ten[j]), std::set<double>{static_cast<double>(j)}) << "node " << j;
  }
  // More nodes than classes, cuts off the class boundaries: at most two classes per node, in
  // label order.
  const Shards thirty = PartitionByLabel(data, 30, 3);
  ExpectPartition(thirty, 1000, 30);
  ExpectNearEqualSizes(thirty, 1000);
  for (int j = 0; j < 30; ++j) {
    const auto classes = ClassesOf(data, thirty[j]);
    EXPECT_LE(classes.size(), 2u) << "node " << j;
    if (j > 0) {
      EXPECT_LE(*ClassesOf(data, thirty[j - 1]).rbegin(), *classes.begin());
    }
  }
  // Fewer nodes than classes: a shard of 1000/7 rows spans at most ceil(10/7) + 1 = 3 classes.
  const Shards seven = PartitionByLabel(data, 7, 3);
  ExpectPartition(seven, 1000, 7);
  ExpectNearEqualSizes(seven, 1000);
  for (const auto& shard : seven) EXPECT_LE(ClassesOf(data, shard).size(), 3u);
  // Fewer nodes than classes: each node holds a contiguous run of about 10/3 classes.
  const Shards three = PartitionByLabel(data, 3, 3);
  ExpectPartition(three, 1000, 3);
  for (const auto& shard : three) EXPECT_LE(ClassesOf(data, shard).size(), 5u);
}

TEST(PartitionByLabel, DeterministicPerSeedAndSeedPicksTheSplitRows) {
  const Dataset data = Interleaved(10, 100);
  EXPECT_EQ(PartitionByLabel(data, 7, 1), PartitionByLabel(data, 7, 1));
  // The class split between nodes 0 and 1 is divided by the seed, not by file position.
  EXPECT_NE(PartitionByLabel(data, 7, 1), PartitionByLabel(data, 7, 2));
  EXPECT_EQ(Partition(data, "label", 7, 1), PartitionByLabel(data, 7, 1));
}

TEST(PartitionByLabel, A9aNegativesFillTheFirstNodes) {
  const std::string path = ::starling::testing::SharedData("a9a");
  STARLING_REQUIRE_FILE(path);
  const Dataset data = ReadLibsvm(path);
  const Shards shards = PartitionByLabel(data, 4, 9);
  ExpectPartition(shards, 48842, 4);
  ExpectNearEqualSizes(shards, 48842);
  // 37,155 negatives (the data set's own count) fill nodes 0-2 (12,210 or 12,211 rows each) and
  // part of 3.
  for (int j = 0; j < 3; ++j) EXPECT_EQ(ClassesOf(data, shards[j]), std::set<double>{-1});
  int positives = 0;
  for (int r : shards[3]) positives += data.labels[r] == 1;
  EXPECT_EQ(positives, 11687);
}

// Per node, how many rows of each class.
std::vector<std::map<double, int>> ClassCounts(const Dataset& data, const Shards& shards) {
  std::vector<std::map<double, int>> counts(shards.size());
  for (size_t j = 0; j < shards.size(); ++j) {
    for (int r : shards[j]) ++counts[j][data.labels[r]];
  }
  return counts;
}

// Mean over classes of the largest share of that class held by one node: 1/N for a perfectly
// even split, 1 when each class sits on one node.
double MeanLargestShare(const Dataset& data, const Shards& shards, int classes, int per_class) {
  const auto counts = ClassCounts(data, shards);
  double total = 0;
  for (int c = 0; c < classes; ++c) {
    int largest = 0;
    for (const auto& node : counts) {
      const auto it = node.find(c);
      if (it != node.end()) largest = std::max(largest, it->second);
    }
    total += static_cast<double>(largest) / per_class;
  }
  return total / classes;
}

TEST(PartitionDirichlet, SmallAlphaIsSkewedHugeAlphaIsUniform) {
  const Dataset data = Interleaved(10, 1000);
  const Shards skewed = PartitionDirichlet(data, 10, 0.1, 17);
  ExpectPartition(skewed, 10000, 10);
  // For Dir(0.1) over 10 nodes the largest share is typically above 0.5; i.i.d. gives ~0.12.
  EXPECT_GT(MeanLargestShare(data, skewed, 10, 1000), 0.4);
  const auto skewed_counts = ClassCounts(data, skewed);
  int nodes_missing_some_class = 0;
  for (const auto& node : skewed_counts) nodes_missing_some_class += node.size() < 10;
  EXPECT_GE(nodes_missing_some_class, 5);

  const Shards uniform = PartitionDirichlet(data, 10, 1e6, 17);
  ExpectPartition(uniform, 10000, 10);
  // Dir(1e6) shares are 0.1 +- 0.0003, so each node gets 100 +- 1 rows of each class.
  for (const auto& node : ClassCounts(data, uniform)) {
    ASSERT_EQ(node.size(), 10u);
    for (const auto& [label, count] : node) EXPECT_NEAR(count, 100, 2) << "class " << label;
  }
  EXPECT_LT(MeanLargestShare(data, uniform, 10, 1000), 0.11);
}

TEST(PartitionDirichlet, TinyAlphaDoesNotUnderflow) {
  // Gamma(0.001) draws are 0 in double precision for most nodes; proportions must still be valid
  // and put (nearly) each class on a single node.
  const Dataset data = Interleaved(4, 500);
  const Shards shards = PartitionDirichlet(data, 2, 0.001, 4);
  ExpectPartition(shards, 2000, 2);
  EXPECT_GT(MeanLargestShare(data, shards, 4, 500), 0.95);
}

TEST(PartitionDirichlet, FewRowsPerClassStillReachEveryNode) {
  // 5 rows per class over 10 nodes at near-uniform shares: each class can serve only half the
  // nodes, and the halves must differ between classes so that all 50 rows reach all 10 nodes.
  const Dataset data = Interleaved(10, 5);
  for (uint64_t seed = 0; seed < 5; ++seed) {
    const Shards shards = PartitionDirichlet(data, 10, 1e6, seed);
    ExpectPartition(shards, 50, 10);
    for (const auto& shard : shards) EXPECT_LE(shard.size(), 10u);
  }
}

TEST(PartitionDirichlet, DeterministicPerSeedAndBySpec) {
  const Dataset data = Interleaved(10, 200);
  EXPECT_EQ(PartitionDirichlet(data, 6, 0.5, 1), PartitionDirichlet(data, 6, 0.5, 1));
  EXPECT_NE(PartitionDirichlet(data, 6, 0.5, 1), PartitionDirichlet(data, 6, 0.5, 2));
  EXPECT_EQ(Partition(data, "dirichlet:0.5", 6, 1), PartitionDirichlet(data, 6, 0.5, 1));
  EXPECT_EQ(Partition(data, "dirichlet:5e-1", 6, 1), PartitionDirichlet(data, 6, 0.5, 1));
}

TEST(PartitionDirichlet, ImpossibleSpreadNamesSpecAndNodes) {
  // 20 rows of one class over 19 nodes at alpha 0.01: nearly every draw leaves nodes empty.
  const Dataset data = Interleaved(1, 20);
  EXPECT_THAT(ErrorOf([&] { Partition(data, "dirichlet:0.01", 19, 1); }),
              AllOf(HasSubstr("dirichlet:0.01"), HasSubstr("19 nodes")));
  EXPECT_THAT(ErrorOf([&] { PartitionDirichlet(data, 19, 0.01, 1); }),
              AllOf(HasSubstr("dirichlet:0.01"), HasSubstr("19 nodes")));
}

TEST(Partition, TooFewRowsNamesSpecAndNodes) {
  const Dataset data = Interleaved(2, 2);  // 4 rows
  for (const std::string spec : {"iid", "label", "dirichlet:1"}) {
    SCOPED_TRACE(spec);
    EXPECT_THAT(ErrorOf([&] { Partition(data, spec, 5, 1); }),
                AllOf(HasSubstr("'" + spec + "'"), HasSubstr("4 rows"), HasSubstr("5 nodes")));
  }
  for (const std::string spec : {"iid", "label"}) {
    ExpectPartition(Partition(data, spec, 4, 1), 4, 4);  // one row each is fine
  }
}

TEST(Partition, BadSpecsAndArguments) {
  const Dataset data = Interleaved(2, 10);
  for (const std::string spec :
       {"bogus", "", "IID", "dirichlet", "dirichlet:", "dirichlet:abc", "dirichlet:-1",
        "dirichlet:0", "dirichlet:inf", "dirichlet:nan", "dirichlet:1x"}) {
    SCOPED_TRACE(spec);
    EXPECT_THAT(InvalidArgumentOf([&] { Partition(data, spec, 2, 1); }),
                HasSubstr("'" + spec + "'"));
  }
  EXPECT_THROW(PartitionIid(data, 0, 1), std::invalid_argument);
  EXPECT_THROW(PartitionByLabel(data, -3, 1), std::invalid_argument);
  EXPECT_THROW(PartitionDirichlet(data, 2, 0, 1), std::invalid_argument);

  Dataset bad = Interleaved(2, 10);
  bad.labels[3] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THAT(ErrorOf([&] { PartitionByLabel(bad, 2, 1); }), HasSubstr("row 3"));
  EXPECT_THAT(ErrorOf([&] { PartitionDirichlet(bad, 2, 1, 1); }), HasSubstr("row 3"));
  ExpectPartition(PartitionIid(bad, 2, 1), 20, 2);  // iid ignores labels
}

TEST(Partition, SpecsHelpNamesEveryScheme) {
  const std::string help = PartitionSpecs();
  EXPECT_THAT(help, AllOf(HasSubstr("iid"), HasSubstr("label"), HasSubstr("dirichlet:ALPHA")));
}

}  // namespace
}  // namespace starling::algorithms
