// A daemon reads the training file streaming and keeps only its own shard. What
// it gets must be exactly what reading the whole file and taking the same rows gives: the same
// rows in the same order, the same labels, label map and features, bit for bit, for every format
// (LIBSVM, CSV, IDX, each also gzipped), label encoding and partition. The expected side is
// ReadDataset + Partition + Dataset::Subset, and BuildRunSetup's whole-file path (the simulator's).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "algorithms/data/partition.h"
#include "algorithms/data/readers.h"
#include "node/config/run_config.h"
#include "node/config/run_setup.h"
#include "tests/test_data.h"

namespace starling {
namespace {

using algorithms::Dataset;

template <typename T>
bool SameBytes(const T* a, const T* b, Eigen::Index n) {
  return n == 0 || std::memcmp(a, b, static_cast<size_t>(n) * sizeof(T)) == 0;
}

// got == want bit for bit: flags, dimensions, labels, and the feature storage itself.
void ExpectSameRows(const Dataset& got, const Dataset& want, const std::string& what) {
  EXPECT_EQ(got.is_sparse, want.is_sparse) << what;
  EXPECT_EQ(got.num_features, want.num_features) << what;
  EXPECT_EQ(got.source, want.source) << what;
  ASSERT_EQ(got.labels.size(), want.labels.size()) << what;
  EXPECT_TRUE(SameBytes(got.labels.data(), want.labels.data(), got.labels.size())) << what;
  if (want.is_sparse) {
    ASSERT_EQ(got.sparse.rows(), want.sparse.rows()) << what;
    ASSERT_EQ(got.sparse.cols(), want.sparse.cols()) << what;
    ASSERT_TRUE(got.sparse.isCompressed() && want.sparse.isCompressed()) << what;
    ASSERT_EQ(got.sparse.nonZeros(), want.sparse.nonZeros()) << what;
    EXPECT_TRUE(
        SameBytes(got.sparse.outerIndexPtr(), want.sparse.outerIndexPtr(), want.sparse.rows() + 1))
        << what;
    EXPECT_TRUE(
        SameBytes(got.sparse.innerIndexPtr(), want.sparse.innerIndexPtr(), want.sparse.nonZeros()))
        << what;
    EXPECT_TRUE(SameBytes(got.sparse.valuePtr(), want.sparse.valuePtr(), want.sparse.nonZeros()))
        << what;
  } else {
    ASSERT_EQ(got.dense.rows(), want.dense.rows()) << what;
    ASSERT_EQ(got.dense.cols(), want.dense.cols()) << what;
    EXPECT_TRUE(SameBytes(got.dense.data(), want.dense.data(), want.dense.size())) << what;
  }
}

// A label encoding of generated data: what a row's class k in 0..classes-1 is written as.
struct Encoding {
  const char* name;
  const char* problem;         // the problem the labels suit
  std::vector<double> values;  // one per class; empty: a real-valued target
};

const std::vector<Encoding>& TextEncodings() {
  static const std::vector<Encoding> encodings = {
      {"pm1", "logistic", {-1, 1}},
      {"01", "logistic", {0, 1}},
      {"1to5", "multinomial", {1, 2, 3, 4, 5}},
      {"3_7_11", "multinomial", {3, 7, 11}},
      {"real", "least-squares", {}},
  };
  return encodings;
}

const std::vector<Encoding>& IdxEncodings() {  // IDX labels are bytes
  static const std::vector<Encoding> encodings = {
      {"01", "logistic", {0, 1}},
      {"0to9", "multinomial", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
      {"2to6", "multinomial", {2, 3, 4, 5, 6}},
  };
  return encodings;
}

// Rows of generated data: a label and `dim` features, about a third of them zero, column j on a
// scale of up to 10^(j % 4) (so that raw features look unscaled to the run set-up).
struct Rows {
  std::vector<double> labels;
  std::vector<std::vector<double>> features;
  std::vector<int> node;  // for a CSV node column
};

Rows Generate(int rows, int dim, const Encoding& encoding, int nodes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  Rows out;
  for (int i = 0; i < rows; ++i) {
    if (encoding.values.empty()) {
      out.labels.push_back(uniform(rng) * 7.25);
    } else {
      // Unbalanced classes, as real data often is.
      const size_t k = std::min(rng() % 7, encoding.values.size() - 1);
      out.labels.push_back(encoding.values[k]);
    }
    std::vector<double> x(dim);
    for (int j = 0; j < dim; ++j) {
      x[j] = rng() % 3 == 0 ? 0.0 : uniform(rng) * std::pow(10.0, j % 4);
    }
    out.features.push_back(x);
    out.node.push_back(i < nodes ? i : static_cast<int>(rng() % nodes));
  }
  return out;
}

class ShardStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("starling-shard-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  static std::string Gzip(const std::string& path) {
    const std::string command = "gzip -c '" + path + "' > '" + path + ".gz'";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return path + ".gz";
  }

  std::string WriteLibsvm(const std::string& name, const Rows& rows) const {
    std::ofstream out(Path(name));
    out.precision(17);
    out << "# generated\n";
    for (size_t i = 0; i < rows.labels.size(); ++i) {
      out << rows.labels[i];
      for (size_t j = 0; j < rows.features[i].size(); ++j) {
        // Some zeros are written explicitly (not stored), most are left out.
        if (rows.features[i][j] != 0 || (i + j) % 5 == 0) {
          out << ' ' << j + 1 << ':' << rows.features[i][j];
        }
      }
      out << (i % 4 == 0 ? " # comment\n" : "\n");
      if (i % 9 == 0) out << "\n";
    }
    return Path(name);
  }

  // With node_column >= 0, the row's node id is written in that column.
  std::string WriteCsv(const std::string& name, const Rows& rows, int node_column) const {
    std::ofstream out(Path(name));
    out.precision(17);
    const size_t dim = rows.features[0].size();
    out << "label";
    for (size_t j = 0; j < dim + (node_column >= 0 ? 1 : 0); ++j) out << ",c" << j;
    out << "\n";
    for (size_t i = 0; i < rows.labels.size(); ++i) {
      out << rows.labels[i];
      size_t feature = 0;
      for (size_t column = 1; column <= dim + (node_column >= 0 ? 1 : 0); ++column) {
        out << ',';
        if (static_cast<int>(column) == node_column) {
          out << rows.node[i];
        } else {
          out << rows.features[i][feature++];
        }
      }
      out << (i % 7 == 0 ? "\r\n" : "\n");
      if (i % 11 == 0) out << "# note\n";
    }
    return Path(name);
  }

  // IDX: pixels are bytes, so the features become (|x| * 25) % 256.
  std::string WriteIdx(const std::string& stem, const Rows& rows, int side) const {
    auto words = [](std::ofstream& out, const std::vector<uint32_t>& ws) {
      for (uint32_t w : ws) {
        for (int shift = 24; shift >= 0; shift -= 8) out.put(static_cast<char>(w >> shift));
      }
    };
    const uint32_t n = static_cast<uint32_t>(rows.labels.size());
    std::ofstream images(Path(stem + "-images-idx3-ubyte"), std::ios::binary);
    words(images, {0x803, n, static_cast<uint32_t>(side), static_cast<uint32_t>(side)});
    for (const auto& x : rows.features) {
      for (int p = 0; p < side * side; ++p) {
        images.put(static_cast<char>(static_cast<int>(std::abs(x[p % x.size()]) * 25 + p) % 256));
      }
    }
    std::ofstream labels(Path(stem + "-labels-idx1-ubyte"), std::ios::binary);
    words(labels, {0x801, n});
    for (double y : rows.labels) labels.put(static_cast<char>(static_cast<int>(y)));
    return Path(stem + "-images-idx3-ubyte");
  }

  std::filesystem::path dir_;
};

// One data file to check, with how to read it.
struct Case {
  std::string path;
  std::string format;
  algorithms::CsvColumns csv;
  Encoding encoding;
  int rows;
};

std::vector<std::string> PartitionsFor(const Case& c) {
  if (c.csv.node >= 0) return {"column:" + std::to_string(c.csv.node)};
  std::vector<std::string> specs = {"iid"};
  if (!c.encoding.values.empty()) {
    specs.push_back("label");
    specs.push_back("dirichlet:0.5");
    specs.push_back("dirichlet:3");
  }
  return specs;
}

// Every shard read streaming (all of them in one pass, and each alone) equals the same rows of
// the whole file.
void ExpectShardsEqual(const Case& c, int nodes, std::vector<std::string> specs = {}) {
  const Dataset full = algorithms::ReadDataset(c.path, c.format, 0, c.csv);
  const Dataset table = algorithms::ReadDatasetLabels(c.path, c.format, 0, c.csv);
  const std::string what = c.path + " (" + c.encoding.name + ")";
  ASSERT_EQ(table.num_samples(), full.num_samples()) << what;
  EXPECT_TRUE(SameBytes(table.labels.data(), full.labels.data(), full.labels.size())) << what;
  EXPECT_EQ(table.node_of_row, full.node_of_row) << what;
  EXPECT_EQ(table.num_features, full.num_features) << what;
  EXPECT_EQ(table.is_sparse, full.is_sparse) << what;
  EXPECT_EQ(table.dense.size() + table.sparse.nonZeros(), 0) << what << ": holds no features";
  if (specs.empty()) specs = PartitionsFor(c);
  for (const std::string& spec : specs) {
    const algorithms::Shards shards = algorithms::Partition(full, spec, nodes, 11);
    EXPECT_EQ(algorithms::Partition(table, spec, nodes, 11), shards) << what << " " << spec;
    const algorithms::StreamedRows all =
        algorithms::ReadDatasetRows(c.path, c.format, 0, c.csv, shards);
    ASSERT_EQ(all.sets.size(), shards.size());
    for (int k = 0; k < nodes; ++k) {
      const std::string label = what + " " + spec + " node " + std::to_string(k);
      ExpectSameRows(all.sets[k], full.Subset(shards[k]), label);
    }
    const algorithms::StreamedRows one =
        algorithms::ReadDatasetRows(c.path, c.format, 0, c.csv, {shards[nodes - 1]});
    ExpectSameRows(one.sets[0], full.Subset(shards[nodes - 1]), what + " " + spec + " alone");
  }
}

TEST_F(ShardStreamTest, EveryFormatEncodingAndPartitionGivesTheWholeFilesRows) {
  int file = 0;
  for (int rows : {13, 700}) {
    for (int nodes : {3, 8}) {
      if (rows < 2 * nodes) continue;
      std::vector<Case> cases;
      for (const Encoding& e : TextEncodings()) {
        const Rows data = Generate(rows, 9, e, nodes, 100 + file);
        const std::string stem = "f" + std::to_string(file++) + "-" + e.name;
        const std::string svm = WriteLibsvm(stem + ".svm", data);
        const std::string csv = WriteCsv(stem + ".csv", data, -1);
        const std::string node_csv = WriteCsv(stem + "-nodes.csv", data, 4);
        cases.push_back({svm, "libsvm", {}, e, rows});
        cases.push_back({Gzip(svm), "auto", {}, e, rows});
        cases.push_back({csv, "csv", {}, e, rows});
        cases.push_back({Gzip(csv), "auto", {}, e, rows});
        cases.push_back({node_csv, "csv", {0, 4}, e, rows});
      }
      for (const Encoding& e : IdxEncodings()) {
        const Rows data = Generate(rows, 9, e, nodes, 100 + file);
        const std::string images = WriteIdx("f" + std::to_string(file++) + "-" + e.name, data, 4);
        Gzip(algorithms::IdxLabelsPathFor(images));
        cases.push_back({images, "idx", {}, e, rows});
        cases.push_back({Gzip(images), "auto", {}, e, rows});
      }
      for (const Case& c : cases) ExpectShardsEqual(c, nodes);
    }
  }
}

TEST_F(ShardStreamTest, RowSetsAreCheckedAsSubsetChecksRows) {
  const Rows data = Generate(20, 3, TextEncodings()[0], 2, 5);
  const std::string svm = WriteLibsvm("a.svm", data);
  const std::string images = WriteIdx("b", data, 2);
  for (const std::string& path : {svm, images}) {
    EXPECT_THROW(algorithms::ReadDatasetRows(path, "auto", 0, {}, {{3, 2}}), std::invalid_argument);
    EXPECT_THROW(algorithms::ReadDatasetRows(path, "auto", 0, {}, {{1, 1}}), std::invalid_argument);
    EXPECT_THROW(algorithms::ReadDatasetRows(path, "auto", 0, {}, {{-1}}), std::invalid_argument);
    EXPECT_THROW(algorithms::ReadDatasetRows(path, "auto", 0, {}, {{0}, {19, 20}}),
                 std::out_of_range);
    // Empty sets are 0-row data sets with the file's columns, as Subset makes them.
    const algorithms::StreamedRows none = algorithms::ReadDatasetRows(path, "auto", 0, {}, {{}});
    ExpectSameRows(none.sets[0], algorithms::ReadDataset(path, "auto").Subset({}), path);
  }
}

// The sets handed over one at a time, in order, each equal to the same rows of the whole file.
TEST_F(ShardStreamTest, RowsInTurnAreTheSetsInOrder) {
  const Rows data = Generate(200, 5, IdxEncodings()[1], 3, 8);
  const std::string svm = Gzip(WriteLibsvm("a.svm", data));
  const std::string csv = WriteCsv("a.csv", data, -1);
  const std::string images = Gzip(WriteIdx("t", data, 3));
  Gzip(algorithms::IdxLabelsPathFor(images.substr(0, images.size() - 3)));
  const std::vector<std::vector<int>> sets = {{0, 5, 100, 199}, {}, {1, 5, 7, 150}};
  for (const std::string& path : {svm, csv, images}) {
    const Dataset full = algorithms::ReadDataset(path, "auto");
    std::vector<int> order;
    algorithms::ReadDatasetRowsInTurn(path, "auto", 0, {}, sets, [&](int k, Dataset rows) {
      order.push_back(k);
      ExpectSameRows(rows, full.Subset(sets[k]), path + " set " + std::to_string(k));
    });
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2})) << path;
  }
}

// Moving a data set moves its sparse matrix (Eigen 3.4's own "move" copies it).
TEST_F(ShardStreamTest, MovingADatasetDoesNotCopyItsFeatures) {
  const Dataset sparse = algorithms::ReadDataset(
      WriteLibsvm("a.svm", Generate(50, 4, TextEncodings()[0], 2, 9)), "libsvm");
  Dataset from = sparse;
  const double* values = from.sparse.valuePtr();
  Dataset to(std::move(from));
  EXPECT_EQ(to.sparse.valuePtr(), values);
  ExpectSameRows(to, sparse, "moved");
  EXPECT_EQ(from.sparse.nonZeros(), 0);
  Dataset assigned;
  assigned = std::move(to);
  EXPECT_EQ(assigned.sparse.valuePtr(), values);
  ExpectSameRows(assigned, sparse, "move-assigned");
  EXPECT_EQ(to.sparse.nonZeros(), 0);
}

// A broken line that is in no shard is still reported, with ReadDataset's own message.
TEST_F(ShardStreamTest, ErrorsAnywhereInTheFileAreReadDatasetsErrors) {
  const Rows data = Generate(30, 3, TextEncodings()[2], 2, 6);
  const std::string svm = WriteLibsvm("a.svm", data);
  {
    std::ofstream out(svm, std::ios::app);
    out << "2 1:0.5 3:x\n";
  }
  const std::string csv = WriteCsv("a.csv", data, -1);
  {
    std::ofstream out(csv, std::ios::app);
    out << "1,2,3\n";
  }
  const std::string images = WriteIdx("t", data, 2);
  std::filesystem::resize_file(images, std::filesystem::file_size(images) - 3);
  for (const std::string& path : {svm, csv, images}) {
    std::string want;
    try {
      algorithms::ReadDataset(path, "auto");
      ADD_FAILURE() << path << ": no error";
    } catch (const std::runtime_error& e) {
      want = e.what();
    }
    try {
      algorithms::ReadDatasetRows(path, "auto", 0, {}, {{0, 1}});
      ADD_FAILURE() << path << ": no error";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(e.what(), want);
    }
    if (path != images) {  // the labels pass of IDX does not read the pixels
      try {
        algorithms::ReadDatasetLabels(path, "auto", 0, {});
        ADD_FAILURE() << path << ": no error";
      } catch (const std::runtime_error& e) {
        EXPECT_EQ(e.what(), want);
      }
    }
  }
  // A declared dimension is checked as ReadDataset checks it.
  const std::string good = WriteCsv("b.csv", data, -1);
  EXPECT_THROW(algorithms::ReadDatasetRows(good, "csv", 5, {}, {{0}}), std::runtime_error);
  EXPECT_THROW(algorithms::ReadDatasetLabels(good, "csv", 5, {}), std::runtime_error);
}

// The run set-up of a daemon (one node, no centralized problem, an explicit step: it reads its
// shard alone) against the whole-file set-up every node's problem comes from in the simulator:
// the same label map, notices, blocks, and problems whose value and gradient are equal bit for
// bit.
// `only`: the nodes to check (default: all).
void ExpectDaemonSetupsEqual(const node::RunConfig& c, const std::string& what,
                             std::vector<int> only = {}) {
  node::BuildScope whole;
  whole.global = false;  // every node's problem from the whole file
  const node::RunSetup want = node::BuildRunSetup(c, whole);
  if (only.empty()) {
    for (int k = 0; k < c.nodes; ++k) only.push_back(k);
  }
  for (int k : only) {
    node::BuildScope scope;
    scope.only_node = k;
    scope.global = false;
    const node::RunSetup got = node::BuildRunSetup(c, scope);
    const std::string label = what + " node " + std::to_string(k);
    ASSERT_NE(got.problems[k], nullptr) << label;
    EXPECT_EQ(got.labels.Canonical(), want.labels.Canonical()) << label;
    EXPECT_EQ(got.num_samples, want.num_samples) << label;
    EXPECT_EQ(got.dim, want.dim) << label;
    ASSERT_EQ(got.notices.size(), want.notices.size()) << label;
    for (size_t n = 0; n < got.notices.size(); ++n) {
      EXPECT_EQ(got.notices[n].text, want.notices[n].text) << label;
    }
    EXPECT_EQ(got.nodes[k].block_rows, want.nodes[k].block_rows) << label;
    EXPECT_EQ(got.problems[k]->num_samples(), want.problems[k]->num_samples()) << label;
    std::mt19937_64 rng(k);
    Vec x(got.dim);
    for (int j = 0; j < x.size(); ++j) x[j] = static_cast<double>(rng() % 1000) / 500.0 - 1;
    Vec g_got, g_want;
    got.problems[k]->Gradient(x, &g_got);
    want.problems[k]->Gradient(x, &g_want);
    EXPECT_EQ(got.problems[k]->Value(x), want.problems[k]->Value(x)) << label;
    EXPECT_TRUE(g_got == g_want) << label;
    // The rows in the same order: one mini-batch of the first samples.
    const std::vector<int> batch = {0, 1, got.problems[k]->num_samples() - 1};
    got.problems[k]->BatchGradient(x, batch, &g_got);
    want.problems[k]->BatchGradient(x, batch, &g_want);
    EXPECT_TRUE(g_got == g_want) << label << " (batch)";
  }
}

node::RunConfig DaemonConfig(const std::string& data, const std::string& problem, int nodes) {
  node::RunConfig c;
  c.algorithm = "swarmsgd";
  c.problem = problem;
  c.data = data;
  c.nodes = nodes;
  c.topology = "ring";
  c.l2 = 1e-3;
  c.step = 0.1;
  c.seed = 5;
  return c;
}

TEST_F(ShardStreamTest, DaemonSetUpEqualsTheWholeFilesSetUp) {
  int file = 0;
  for (const Encoding& e : TextEncodings()) {
    const Rows data = Generate(400, 6, e, 4, 300 + file);
    const std::string stem = "s" + std::to_string(file++) + "-" + e.name;
    const std::string svm = Gzip(WriteLibsvm(stem + ".svm", data));
    const std::string csv = WriteCsv(stem + ".csv", data, -1);
    const std::string node_csv = WriteCsv(stem + "-n.csv", data, 2);
    for (const std::string& path : {svm, csv, node_csv}) {
      std::vector<std::string> specs = {"iid"};
      if (path == node_csv) {
        specs = {"column:2"};
      } else if (!e.values.empty()) {
        specs = {"iid", "label", "dirichlet:0.5"};
      }
      for (const std::string& spec : specs) {
        node::RunConfig c = DaemonConfig(path, e.problem, 4);
        c.partition = spec;
        // Blocks need class labels; they give the nodes' block_rows to compare.
        if (!e.values.empty()) c.block_cyclic = "2:5";
        ExpectDaemonSetupsEqual(c, path + " " + spec);
      }
    }
  }
  for (const Encoding& e : IdxEncodings()) {
    const Rows data = Generate(300, 6, e, 4, 300 + file);
    const std::string images = WriteIdx("s" + std::to_string(file++) + "-" + e.name, data, 3);
    for (const char* spec : {"iid", "label", "dirichlet:0.5"}) {
      node::RunConfig c = DaemonConfig(images, e.problem, 4);
      c.partition = spec;
      ExpectDaemonSetupsEqual(c, images + " " + spec);
    }
  }
}

TEST_F(ShardStreamTest, RealDataShardsEqualTheWholeFiles) {
  const std::string fmnist = testing::FashionMnist("train-images-idx3-ubyte.gz");
  const std::string a9a = testing::SharedData("a9a");
  STARLING_REQUIRE_FILE(fmnist);
  STARLING_REQUIRE_FILE(a9a);
  // Every shard of the demo's split, and of a label split; the set-up of two daemons.
  ExpectShardsEqual({fmnist, "idx", {}, IdxEncodings()[1], 60000}, 8, {"dirichlet:0.5", "label"});
  ExpectShardsEqual({a9a, "auto", {}, TextEncodings()[0], 32561}, 8, {"dirichlet:0.5", "iid"});
  node::RunConfig c = DaemonConfig(fmnist, "multinomial", 8);
  c.partition = "dirichlet:0.5";
  ExpectDaemonSetupsEqual(c, "fashion-mnist", {0, 7});
  c = DaemonConfig(a9a, "logistic", 8);
  c.partition = "dirichlet:0.5";
  ExpectDaemonSetupsEqual(c, "a9a", {0, 7});
}

// A text file written here, with where each row's line starts and its line number as written
// (the expected side of the row index).
struct TextFile {
  std::string path;
  std::vector<int64_t> starts;
  std::vector<long> lines;
};

std::string Number(double x) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", x);
  return text;
}

// Writes `lines` (each with its own end: "\n", "\r\n" or none) and notes where the rows start:
// rows[k] is the index in `lines` of row k's line.
TextFile WriteLines(const std::string& path, const std::vector<std::string>& lines,
                    const std::vector<size_t>& rows) {
  TextFile file;
  file.path = path;
  std::vector<int64_t> line_starts;
  std::string text;
  for (const std::string& line : lines) {
    line_starts.push_back(static_cast<int64_t>(text.size()));
    text += line;
  }
  for (size_t k : rows) {
    file.starts.push_back(line_starts[k]);
    file.lines.push_back(static_cast<long>(k) + 1);
  }
  std::ofstream(path, std::ios::binary) << text;
  return file;
}

// LIBSVM with every kind of line the reader accepts: comments (whole-line, indented, trailing),
// blank and whitespace-only lines, CRLF ends, and a last line without an end.
TextFile WriteQuirkyLibsvm(const std::string& path, const Rows& rows) {
  std::vector<std::string> lines = {"# generated\n"};
  std::vector<size_t> row_lines;
  const size_t n = rows.labels.size();
  for (size_t i = 0; i < n; ++i) {
    std::string line = Number(rows.labels[i]);
    for (size_t j = 0; j < rows.features[i].size(); ++j) {
      if (rows.features[i][j] != 0 || (i + j) % 5 == 0) {
        line += " " + std::to_string(j + 1) + ":" + Number(rows.features[i][j]);
      }
    }
    if (i % 4 == 0) line += " # trailing";
    if (i + 1 < n) line += i % 5 == 0 ? "\r\n" : "\n";
    row_lines.push_back(lines.size());
    lines.push_back(line);
    if (i + 1 == n) break;
    if (i % 9 == 0) lines.push_back("\n");
    if (i % 13 == 0) lines.push_back("   # indented comment\r\n");
    if (i % 17 == 0) lines.push_back(" \t \n");
  }
  return WriteLines(path, lines, row_lines);
}

// CSV with comments and a header (or neither: the first row on line 1), quoted fields, '#' and
// blank lines, CRLF ends and a last line without an end; with node_column >= 0, the node id in that
// column.
TextFile WriteQuirkyCsv(const std::string& path, const Rows& rows, bool header, int node_column) {
  std::vector<std::string> lines;
  const size_t dim = rows.features[0].size();
  const size_t columns = dim + 1 + (node_column >= 0 ? 1 : 0);
  if (header) {  // else the rows start on line 1
    lines = {"# made by shard_stream_test\n", "\n"};
    std::string line = "label";
    for (size_t j = 1; j < columns; ++j) line += ",\"c" + std::to_string(j) + "\"";
    lines.push_back(line + "\r\n");
  }
  std::vector<size_t> row_lines;
  const size_t n = rows.labels.size();
  for (size_t i = 0; i < n; ++i) {
    std::string line = Number(rows.labels[i]);
    size_t feature = 0;
    for (size_t column = 1; column < columns; ++column) {
      if (static_cast<int>(column) == node_column) {
        line += "," + std::to_string(rows.node[i]);
      } else if ((i + column) % 6 == 0) {
        line += ", \"" + Number(rows.features[i][feature++]) + "\" ";
      } else {
        line += "," + Number(rows.features[i][feature++]);
      }
    }
    if (i + 1 < n) line += i % 7 == 0 ? "\r\n" : "\n";
    row_lines.push_back(lines.size());
    lines.push_back(line);
    if (i + 1 == n) break;
    if (i % 11 == 0) lines.push_back("# note\n");
    if (i % 19 == 0) lines.push_back("\r\n");
  }
  return WriteLines(path, lines, row_lines);
}

// Row sets that make the indexed read seek forward within a block, past it, to the first and the
// last row, and read long runs of consecutive rows.
std::vector<std::vector<int>> IndexedRowSets(int rows) {
  std::vector<std::vector<int>> sets = {{}, {0}, {rows - 1}, {0, rows - 1}, {}, {}, {}, {}};
  for (int r = 0; r < rows; ++r) {
    sets[4].push_back(r);
    if (r % 97 == 5) sets[5].push_back(r);
    if (r >= rows - 5) sets[6].push_back(r);
  }
  std::mt19937_64 rng(3);
  for (int r = 0; r < rows; ++r) {
    if (rng() % 8 == 0) sets[7].push_back(r);
  }
  return sets;
}

// ReadDatasetLabels's index holds each row's start and line as written, and the rows read from it
// (given, or made by ReadDatasetRowsInTurn itself) are the whole file's, plain and gzipped. The
// files span many of TextLines' 64 KiB blocks.
TEST_F(ShardStreamTest, IndexedReadsGiveTheWholeFilesRows) {
  const int n = 3000;
  const Rows data = Generate(n, 12, TextEncodings()[2], 4, 21);
  struct Text {
    TextFile file;
    algorithms::CsvColumns csv;
  };
  const std::vector<Text> texts = {
      {WriteQuirkyLibsvm(Path("q.svm"), data), {}},
      {WriteQuirkyCsv(Path("q.csv"), data, true, -1), {}},
      {WriteQuirkyCsv(Path("qn.csv"), data, false, 3), {0, 3}},
  };
  const std::vector<std::vector<int>> sets = IndexedRowSets(n);
  for (const Text& t : texts) {
    ASSERT_GT(std::filesystem::file_size(t.file.path), 4u << 16) << t.file.path;
    for (const std::string& path : {t.file.path, Gzip(t.file.path)}) {
      const Dataset full = algorithms::ReadDataset(path, "auto", 0, t.csv);
      ASSERT_EQ(full.num_samples(), n) << path;
      algorithms::TextRowIndex index;
      const Dataset table = algorithms::ReadDatasetLabels(path, "auto", 0, t.csv, &index);
      EXPECT_EQ(index.source, path);
      EXPECT_EQ(index.starts, t.file.starts) << path;
      ASSERT_EQ(index.rows(), n) << path;
      for (int r = 0; r < n; ++r) {
        ASSERT_EQ(index.LineOf(r), t.file.lines[r]) << path << " row " << r;
      }
      for (const algorithms::TextRowIndex* given : {&index, (algorithms::TextRowIndex*)nullptr}) {
        std::vector<int> order;
        algorithms::ReadDatasetRowsInTurn(
            path, "auto", 0, t.csv, sets,
            [&](int k, Dataset rows) {
              order.push_back(k);
              ExpectSameRows(rows, full.Subset(sets[k]),
                             path + " set " + std::to_string(k) + (given ? "" : " (own index)"));
            },
            given);
        EXPECT_EQ(order.size(), sets.size()) << path;
      }
      EXPECT_THROW(algorithms::ReadDatasetRowsInTurn(
                       path, "auto", 0, t.csv, {{0, n}}, [](int, Dataset) {}, &index),
                   std::out_of_range);
    }
  }
}

// A broken line is reported with its file and line whether or not the daemon's shard holds it:
// the labels pass parses every line, as ReadDataset does.
TEST_F(ShardStreamTest, ABrokenLineInOrOutOfTheShardNamesItsLine) {
  const int n = 400;
  const Rows data = Generate(n, 6, TextEncodings()[0], 4, 17);
  const TextFile good = WriteQuirkyLibsvm(Path("good.svm"), data);
  node::RunConfig c = DaemonConfig(good.path, "logistic", 4);
  c.partition = "iid";
  const algorithms::Shards shards =
      algorithms::Partition(algorithms::ReadDataset(good.path, "libsvm"), "iid", 4, c.seed);
  const int in_shard = shards[0][shards[0].size() / 2];
  const int outside = shards[1][shards[1].size() / 2];
  for (int row : {in_shard, outside}) {
    // The row's first feature value becomes "x", in a copy of the file.
    std::ifstream in(good.path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t colon = text.find(':', static_cast<size_t>(good.starts[row]));
    const size_t value_end = text.find_first_of(" \r\n", colon);
    text.replace(colon + 1, value_end - colon - 1, "x");
    const std::string bad = Path("bad-" + std::to_string(row) + ".svm");
    std::ofstream(bad, std::ios::binary) << text;
    const std::string want = bad + ":" + std::to_string(good.lines[row]) + ": feature value 'x'";
    node::BuildScope scope;
    scope.only_node = 0;
    scope.global = false;
    c.data = bad;
    try {
      node::BuildRunSetup(c, scope);
      ADD_FAILURE() << "row " << row << ": no error";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()).substr(0, want.size()), want) << e.what();
    }
  }
}

// A file changed after it was indexed (same length, a value broken) gives an error that names
// the line of the row read, found through the index; a file cut short, an error, not a crash.
TEST_F(ShardStreamTest, AFileChangedAfterItsIndexNamesTheLine) {
  const int n = 200;
  const Rows data = Generate(n, 5, TextEncodings()[1], 2, 4);
  const TextFile svm = WriteQuirkyLibsvm(Path("c.svm"), data);
  const TextFile csv = WriteQuirkyCsv(Path("c.csv"), data, true, -1);
  const int row = 150;
  for (const TextFile& file : {svm, csv}) {
    algorithms::TextRowIndex index;
    algorithms::ReadDatasetLabels(file.path, "auto", 0, {}, &index);
    std::string text;
    {
      std::ifstream in(file.path, std::ios::binary);
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    std::string changed = text;
    changed[static_cast<size_t>(file.starts[row])] = 'x';  // the label's first character
    std::ofstream(file.path, std::ios::binary) << changed;
    const std::string want = file.path + ":" + std::to_string(file.lines[row]) + ": ";
    try {
      algorithms::ReadDatasetRowsInTurn(
          file.path, "auto", 0, {}, {{2, row}}, [](int, Dataset) {}, &index);
      ADD_FAILURE() << file.path << ": no error";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()).substr(0, want.size()), want) << e.what();
    }
    std::filesystem::resize_file(file.path, static_cast<uintmax_t>(file.starts[row]));
    EXPECT_THROW(algorithms::ReadDatasetRowsInTurn(
                     file.path, "auto", 0, {}, {{2, row}}, [](int, Dataset) {}, &index),
                 std::runtime_error)
        << file.path;
  }
}

}  // namespace
}  // namespace starling
