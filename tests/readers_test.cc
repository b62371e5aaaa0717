// Data set readers and Dataset helpers: real data (a9a, Fashion-MNIST) checked against numbers
// obtained outside this code, and bad input written to temp files.
#include "algorithms/data/readers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/data/dataset.h"
#include "tests/test_data.h"

namespace starling::algorithms {
namespace {

using ::starling::testing::FashionMnist;
using ::starling::testing::SharedData;
using ::testing::AllOf;
using ::testing::HasSubstr;

// A fresh folder per test for the files it writes, removed afterwards.
class TempFiles {
 public:
  TempFiles() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("starling-readers-" + std::to_string(getpid()) + "-" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~TempFiles() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string Write(const std::string& name, const std::string& bytes) const {
    const std::string path = (dir_ / name).string();
    std::ofstream out(path, std::ios::binary);
    out << bytes;
    EXPECT_TRUE(out.good()) << path;
    return path;
  }
  std::string WriteGzip(const std::string& name, const std::string& bytes) const {
    const std::string path = (dir_ / name).string();
    gzFile file = gzopen(path.c_str(), "wb");
    EXPECT_NE(file, nullptr) << path;
    EXPECT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
    gzclose(file);
    return path;
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

// The message of the std::runtime_error that `read` throws; a test failure if it throws none.
std::string ErrorOf(const std::function<void()>& read) {
  try {
    read();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a std::runtime_error";
  return "";
}

// Big-endian IDX header words followed by data bytes.
std::string Idx(std::vector<uint32_t> words, const std::vector<uint8_t>& data) {
  std::string bytes;
  for (uint32_t w : words) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>(w >> shift));
  }
  bytes.append(data.begin(), data.end());
  return bytes;
}

int CountLabel(const Dataset& data, double label) {
  return static_cast<int>((data.labels.array() == label).count());
}

// ---------------------------------------------------------------------------------------------
// a9a. Expected numbers: rows, positive/negative counts as the data set's own description gives
// them; the dimension 123, the 677,323 stored values and line 7 (the first with an index above 100,
// 101) from awk over the file; the first and last rows from `head`/`tail`.

TEST(LibsvmA9a, ShapeLabelsAndKnownRows) {
  const std::string path = SharedData("a9a");
  STARLING_REQUIRE_FILE(path);
  // CPU time, not wall time: other work on the machine stretches the latter, not the former.
  const std::clock_t start = std::clock();
  const Dataset data = ReadLibsvm(path);
  const double seconds = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;

  EXPECT_TRUE(data.is_sparse);
  EXPECT_EQ(data.dense.size(), 0);
  EXPECT_EQ(data.source, path);
  ASSERT_EQ(data.num_samples(), 48842);
  EXPECT_EQ(data.num_features, 123);
  EXPECT_EQ(data.sparse.rows(), 48842);
  EXPECT_EQ(data.sparse.cols(), 123);
  EXPECT_EQ(CountLabel(data, +1), 11687);
  EXPECT_EQ(CountLabel(data, -1), 37155);
  EXPECT_EQ(data.sparse.nonZeros(), 677323);
  EXPECT_DOUBLE_EQ(data.Density(), 677323.0 / (48842.0 * 123.0));
  EXPECT_EQ(data.NumClasses(), 0);  // +-1 labels are not class indices

  // Line 1: "-1 3:1 11:1 14:1 19:1 39:1 42:1 55:1 64:1 67:1 73:1 75:1 76:1 80:1 83:1".
  EXPECT_EQ(data.labels[0], -1);
  const std::vector<int> row0 = {3, 11, 14, 19, 39, 42, 55, 64, 67, 73, 75, 76, 80, 83};
  double row0_sum = 0;
  for (int feature = 1; feature <= 123; ++feature) {
    const bool present = std::find(row0.begin(), row0.end(), feature) != row0.end();
    EXPECT_EQ(data.sparse.coeff(0, feature - 1), present ? 1.0 : 0.0) << "feature " << feature;
    row0_sum += data.sparse.coeff(0, feature - 1);
  }
  EXPECT_EQ(row0_sum, 14);
  // Line 2 starts "-1 5:1 7:1 14:1"; the last line is "+1 3:1 8:1 16:1 19:1 ... 82:1 83:1".
  EXPECT_EQ(data.labels[1], -1);
  EXPECT_EQ(data.sparse.coeff(1, 4), 1.0);
  EXPECT_EQ(data.sparse.coeff(1, 5), 0.0);
  EXPECT_EQ(data.sparse.coeff(1, 6), 1.0);
  EXPECT_EQ(data.labels[48841], +1);
  EXPECT_EQ(data.sparse.coeff(48841, 7), 1.0);
  EXPECT_EQ(data.sparse.coeff(48841, 8), 0.0);
  EXPECT_EQ(data.sparse.coeff(48841, 82), 1.0);
  EXPECT_EQ(data.sparse.coeff(48841, 83), 0.0);

#ifdef NDEBUG
  // A loose bound on the parse's CPU time that still catches a per-token iostream or quadratic
  // parser; typically ~0.1 s.
  EXPECT_LT(seconds, 3.0);
#endif
  (void)seconds;
}

TEST(LibsvmA9a, DeclaredDimension) {
  const std::string path = SharedData("a9a");
  STARLING_REQUIRE_FILE(path);
  EXPECT_EQ(ReadLibsvm(path, 200).num_features, 200);
  EXPECT_EQ(ReadLibsvm(path, 200).sparse.cols(), 200);
  EXPECT_THAT(ErrorOf([&] { ReadLibsvm(path, 100); }),
              AllOf(HasSubstr(path + ":7: "), HasSubstr("feature index 101"),
                    HasSubstr("beyond the declared dimension 100")));
}

TEST(LibsvmA9a, AutoFormatAndSubset) {
  const std::string path = SharedData("a9a");
  STARLING_REQUIRE_FILE(path);
  const Dataset data = ReadDataset(path, "auto");  // no extension: detected from the content
  ASSERT_TRUE(data.is_sparse);
  ASSERT_EQ(data.num_samples(), 48842);

  const Dataset subset = data.Subset({48841, 0, 0});
  ASSERT_EQ(subset.num_samples(), 3);
  EXPECT_TRUE(subset.is_sparse);
  EXPECT_EQ(subset.num_features, 123);
  EXPECT_EQ(subset.sparse.rows(), 3);
  EXPECT_EQ(subset.sparse.cols(), 123);
  EXPECT_EQ(subset.labels[0], +1);
  EXPECT_EQ(subset.labels[1], -1);
  EXPECT_EQ(subset.labels[2], -1);
  EXPECT_EQ(subset.sparse.nonZeros(), 3 * 14);  // all three lines have 14 features
  EXPECT_EQ(subset.sparse.coeff(0, 7), 1.0);    // last line's feature 8
  EXPECT_EQ(subset.sparse.coeff(1, 2), 1.0);    // first line's feature 3
  EXPECT_EQ(subset.sparse.coeff(2, 82), 1.0);   // first line's feature 83
  EXPECT_EQ(subset.sparse.coeff(2, 7), 0.0);
}

// ---------------------------------------------------------------------------------------------
// Fashion-MNIST. Expected values were obtained with a separate Python script (gzip + struct)
// reading the same files:
//   train: labels[0] = 9, labels[59999] = 5, 6000 images of each class; image 0 has pixel 99 =
//   13, pixel 100 = 73, pixel 404 = 237 and pixel sum 76247; image 59999 has pixels 400..404 =
//   129 153 34 0 3 and pixel sum 16684.
//   test: labels[0..4] = 9 2 1 1 6, labels[9999] = 5, 1000 of each class; image 0 has pixel 215 =
//   3, pixel 221 = 37 and pixel sum 33456.

TEST(IdxFashionMnist, Train) {
  const std::string images = FashionMnist("train-images-idx3-ubyte.gz");
  STARLING_REQUIRE_FILE(images);
  const std::string labels = IdxLabelsPathFor(images);
  EXPECT_EQ(labels, FashionMnist("train-labels-idx1-ubyte.gz"));
  const Dataset data = ReadIdx(images, labels);

  EXPECT_FALSE(data.is_sparse);
  EXPECT_EQ(data.source, images);
  ASSERT_EQ(data.num_samples(), 60000);
  EXPECT_EQ(data.num_features, 784);
  ASSERT_EQ(data.dense.rows(), 60000);
  ASSERT_EQ(data.dense.cols(), 784);
  EXPECT_EQ(data.NumClasses(), 10);
  for (int c = 0; c < 10; ++c) EXPECT_EQ(CountLabel(data, c), 6000) << "class " << c;
  EXPECT_EQ(data.labels[0], 9);
  EXPECT_EQ(data.labels[59999], 5);

  EXPECT_DOUBLE_EQ(data.dense(0, 99), 13 / 255.0);
  EXPECT_DOUBLE_EQ(data.dense(0, 100), 73 / 255.0);
  EXPECT_DOUBLE_EQ(data.dense(0, 404), 237 / 255.0);
  EXPECT_EQ(data.dense(0, 0), 0.0);
  EXPECT_NEAR(data.dense.row(0).sum() * 255.0, 76247, 1e-6);
  const std::vector<int> last = {129, 153, 34, 0, 3};
  for (int k = 0; k < 5; ++k) EXPECT_DOUBLE_EQ(data.dense(59999, 400 + k), last[k] / 255.0);
  EXPECT_NEAR(data.dense.row(59999).sum() * 255.0, 16684, 1e-6);
  EXPECT_GE(data.dense.minCoeff(), 0.0);
  EXPECT_LE(data.dense.maxCoeff(), 1.0);
}

TEST(IdxFashionMnist, TestSplitThroughReadDataset) {
  const std::string images = FashionMnist("t10k-images-idx3-ubyte.gz");
  STARLING_REQUIRE_FILE(images);
  for (const char* format : {"idx", "auto"}) {
    SCOPED_TRACE(format);
    const Dataset data = ReadDataset(images, format);
    ASSERT_EQ(data.num_samples(), 10000);
    EXPECT_EQ(data.num_features, 784);
    EXPECT_EQ(data.NumClasses(), 10);
    for (int c = 0; c < 10; ++c) EXPECT_EQ(CountLabel(data, c), 1000) << "class " << c;
    const std::vector<double> first = {9, 2, 1, 1, 6};
    for (int i = 0; i < 5; ++i) EXPECT_EQ(data.labels[i], first[i]);
    EXPECT_EQ(data.labels[9999], 5);
    EXPECT_DOUBLE_EQ(data.dense(0, 215), 3 / 255.0);
    EXPECT_DOUBLE_EQ(data.dense(0, 221), 37 / 255.0);
    EXPECT_NEAR(data.dense.row(0).sum() * 255.0, 33456, 1e-6);
  }
  EXPECT_THAT(ErrorOf([&] { ReadDataset(images, "idx", 100); }),
              AllOf(HasSubstr(images), HasSubstr("784"), HasSubstr("100")));
}

// ---------------------------------------------------------------------------------------------
// LIBSVM on small files.

TEST(Libsvm, AcceptsTheFormatsVariants) {
  TempFiles files;
  const std::string text =
      "# a comment line\n"
      "+1 1:0.5 3:-2 # trailing comment\n"
      "-1\n"
      "\n"
      "   \t\n"
      "3.5 2:1e-3 4:7\n"
      "0 qid:3 1:1 2:0\n"
      "1 5:+2.5";  // no final newline
  for (const std::string& path :
       {files.Write("plain.svm", text), files.WriteGzip("zipped.svm.gz", text)}) {
    SCOPED_TRACE(path);
    const Dataset data = ReadLibsvm(path);
    ASSERT_EQ(data.num_samples(), 5);
    EXPECT_EQ(data.num_features, 5);
    EXPECT_TRUE(data.is_sparse);
    EXPECT_EQ(data.labels[0], 1);
    EXPECT_EQ(data.labels[1], -1);
    EXPECT_EQ(data.labels[2], 3.5);
    EXPECT_EQ(data.labels[3], 0);
    EXPECT_EQ(data.labels[4], 1);
    EXPECT_EQ(data.sparse.coeff(0, 0), 0.5);
    EXPECT_EQ(data.sparse.coeff(0, 2), -2);
    EXPECT_EQ(data.sparse.row(1).nonZeros(), 0);  // a label alone is a row of zeros
    EXPECT_EQ(data.sparse.coeff(2, 1), 1e-3);
    EXPECT_EQ(data.sparse.coeff(2, 3), 7);
    EXPECT_EQ(data.sparse.coeff(3, 0), 1);
    EXPECT_EQ(data.sparse.coeff(4, 4), 2.5);
    // Six non-zero values; 2:0 is not stored.
    EXPECT_EQ(data.sparse.nonZeros(), 6);
    EXPECT_DOUBLE_EQ(data.Density(), 6.0 / 25.0);
  }
}

TEST(Libsvm, CrlfLineEndings) {
  TempFiles files;
  const Dataset data = ReadLibsvm(files.Write("crlf.svm", "1 1:2\r\n-1 2:3\r\n"));
  ASSERT_EQ(data.num_samples(), 2);
  EXPECT_EQ(data.sparse.coeff(0, 0), 2);
  EXPECT_EQ(data.sparse.coeff(1, 1), 3);
}

struct BadLine {
  const char* text;
  int line;
  const char* what;
};

TEST(Libsvm, BadInputNamesPathLineAndProblem) {
  TempFiles files;
  const std::vector<BadLine> cases = {
      {"+1 1:0.5\n1 3:\n", 2, "truncated feature '3:' (expected index:value)"},
      {"-1 3:1 2:1\n", 1, "not greater than the previous index 3"},
      {"-1 3:1 3:1\n", 1, "strictly increasing"},
      {"1 1:1\n\nabc 1:1\n", 3, "label 'abc' is not a number"},
      {"1:1 2:1\n", 1, "label '1:1' is not a number"},
      {"nan 1:1\n", 1, "label 'nan' is not a finite number"},
      {"1 2:nan\n", 1, "not a finite number"},
      {"1 2:inf\n", 1, "not a finite number"},
      {"1 2:-1e999\n", 1, "not a finite number"},
      {"1 2:x\n", 1, "feature value 'x'"},
      {"1 2:1.5.5\n", 1, "is not a number"},
      {"1 3\n", 1, "has no ':'"},
      {"1 0:1\n", 1, "1-based"},
      {"1 -2:1\n", 1, "not a positive integer"},
      {"1 a:1\n", 1, "not a positive integer"},
      {"1 99999999999:1\n", 1, "too large"},
      {"1 :1\n", 1, "not a positive integer"},
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    const std::string path = files.Write("bad" + std::to_string(k) + ".svm", cases[k].text);
    SCOPED_TRACE(cases[k].text);
    EXPECT_THAT(ErrorOf([&] { ReadLibsvm(path); }),
                AllOf(HasSubstr(path + ":" + std::to_string(cases[k].line) + ": "),
                      HasSubstr(cases[k].what)));
  }
}

TEST(Libsvm, IndexBeyondDeclaredDimension) {
  TempFiles files;
  const std::string path = files.Write("wide.svm", "1 1:1\n1 2:1 130:1\n");
  EXPECT_EQ(ReadLibsvm(path).num_features, 130);
  EXPECT_EQ(ReadLibsvm(path, 130).num_features, 130);
  EXPECT_EQ(ErrorOf([&] { ReadLibsvm(path, 123); }),
            path + ":2: feature index 130 beyond the declared dimension 123");
}

TEST(Libsvm, MissingEmptyAndBinaryFiles) {
  TempFiles files;
  const std::string missing = files.Path("missing.svm");
  EXPECT_EQ(ErrorOf([&] { ReadLibsvm(missing); }),
            missing + ": cannot open (No such file or directory)");
  EXPECT_THAT(ErrorOf([&] { ReadLibsvm(files.Path("")); }), HasSubstr("cannot open"));
  const std::string empty = files.Write("empty.svm", "# only a comment\n\n");
  EXPECT_THAT(ErrorOf([&] { ReadLibsvm(empty); }),
              AllOf(HasSubstr(empty), HasSubstr("no samples")));
  // Binary bytes, including NUL, give an error rather than a crash or a silent success.
  const std::string binary = files.Write("binary.svm", std::string("1 2:\0\x01\xff 3:1\n", 12));
  EXPECT_THAT(ErrorOf([&] { ReadLibsvm(binary); }), HasSubstr(binary + ":1: "));
}

TEST(Libsvm, TruncatedGzip) {
  TempFiles files;
  std::string text;
  for (int i = 0; i < 2000; ++i) text += std::to_string(i % 2) + " 1:" + std::to_string(i) + "\n";
  const std::string whole = files.WriteGzip("whole.svm.gz", text);
  std::ifstream in(whole, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(ReadLibsvm(whole).num_samples(), 2000);
  const std::string cut = files.Write("cut.svm.gz", bytes.substr(0, bytes.size() / 2));
  EXPECT_THAT(ErrorOf([&] { ReadLibsvm(cut); }), AllOf(HasSubstr(cut + ": "), HasSubstr("gzip")));
}

// ---------------------------------------------------------------------------------------------
// IDX on small files.

TEST(Idx, ReadsUncompressedAndGzipped) {
  TempFiles files;
  const std::string images = Idx({0x803, 3, 2, 2}, {0, 255, 51, 102, 1, 2, 3, 4, 255, 255, 0, 0});
  const std::string labels = Idx({0x801, 3}, {7, 0, 9});
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {files.Write("a-images-idx3-ubyte", images), files.Write("a-labels-idx1-ubyte", labels)},
      {files.WriteGzip("b-images-idx3-ubyte.gz", images),
       files.WriteGzip("b-labels-idx1-ubyte.gz", labels)},
  };
  for (const auto& [image_path, label_path] : pairs) {
    SCOPED_TRACE(image_path);
    EXPECT_EQ(IdxLabelsPathFor(image_path), label_path);
    const Dataset data = ReadDataset(image_path, "auto");
    ASSERT_EQ(data.num_samples(), 3);
    EXPECT_EQ(data.num_features, 4);
    EXPECT_FALSE(data.is_sparse);
    EXPECT_EQ(data.labels[0], 7);
    EXPECT_EQ(data.labels[1], 0);
    EXPECT_EQ(data.labels[2], 9);
    EXPECT_EQ(data.dense(0, 0), 0.0);
    EXPECT_EQ(data.dense(0, 1), 1.0);
    EXPECT_DOUBLE_EQ(data.dense(0, 2), 0.2);
    EXPECT_DOUBLE_EQ(data.dense(0, 3), 0.4);
    EXPECT_DOUBLE_EQ(data.dense(1, 3), 4 / 255.0);
    EXPECT_EQ(data.dense(2, 0), 1.0);
    EXPECT_EQ(data.NumClasses(), 10);
    EXPECT_DOUBLE_EQ(data.Density(), 9.0 / 12.0);
  }
}

TEST(Idx, BadFilesNamePathAndProblem) {
  TempFiles files;
  const std::string good_images =
      files.Write("g-images-idx3-ubyte", Idx({0x803, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}));
  const std::string good_labels = files.Write("g-labels-idx1-ubyte", Idx({0x801, 2}, {1, 2}));
  ASSERT_EQ(ReadIdx(good_images, good_labels).num_samples(), 2);

  // The labels file given as the images file, and the other way round.
  EXPECT_THAT(ErrorOf([&] { ReadIdx(good_labels, good_labels); }),
              AllOf(HasSubstr(good_labels + ": wrong magic number 0x00000801"),
                    HasSubstr("expected 0x00000803")));
  EXPECT_THAT(ErrorOf([&] { ReadIdx(good_images, good_images); }),
              AllOf(HasSubstr(good_images + ": wrong magic number 0x00000803"),
                    HasSubstr("expected 0x00000801")));
  const std::string text = files.Write("text-images-idx3-ubyte", "1 1:1\n2 2:1\n3 3:1\n4 4:1\n");
  EXPECT_THAT(ErrorOf([&] { ReadIdx(text, good_labels); }),
              AllOf(HasSubstr(text + ": wrong magic number 0x3120313a"), HasSubstr("not")));

  const std::string short_images =
      files.Write("s-images-idx3-ubyte", Idx({0x803, 2, 2, 2}, {1, 2, 3, 4, 5}));
  EXPECT_THAT(ErrorOf([&] { ReadIdx(short_images, good_labels); }),
              AllOf(HasSubstr(short_images + ": truncated"), HasSubstr("8 data bytes"),
                    HasSubstr("only 5")));
  const std::string short_labels = files.Write("s-labels-idx1-ubyte", Idx({0x801, 2}, {1}));
  EXPECT_THAT(ErrorOf([&] { ReadIdx(good_images, short_labels); }),
              HasSubstr(short_labels + ": truncated"));
  const std::string short_header = files.Write("h-images-idx3-ubyte", Idx({0x803, 2}, {0, 0}));
  EXPECT_THAT(ErrorOf([&] { ReadIdx(short_header, good_labels); }),
              AllOf(HasSubstr(short_header + ": truncated header"), HasSubstr("row count")));
  const std::string empty = files.Write("e-images-idx3-ubyte", "");
  EXPECT_THAT(ErrorOf([&] { ReadIdx(empty, good_labels); }),
              HasSubstr(empty + ": truncated header"));

  const std::string three_labels = files.Write("3-labels-idx1-ubyte", Idx({0x801, 3}, {1, 2, 3}));
  EXPECT_EQ(ErrorOf([&] { ReadIdx(good_images, three_labels); }),
            three_labels + ": holds 3 labels but " + good_images + " holds 2 images");

  const std::string trailing =
      files.Write("t-images-idx3-ubyte", Idx({0x803, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_THAT(ErrorOf([&] { ReadIdx(trailing, good_labels); }),
              AllOf(HasSubstr(trailing + ": "), HasSubstr("unexpected data")));

  // Lying headers must be refused before anything is sized from them.
  const std::string huge =
      files.Write("x-images-idx3-ubyte", Idx({0x803, 0xffffffff, 0xffffffff, 0xffffffff}, {1}));
  EXPECT_THAT(ErrorOf([&] { ReadIdx(huge, good_labels); }),
              AllOf(HasSubstr(huge + ": "), HasSubstr("not a plausible IDX file")));
  const std::string big_but_short =
      files.Write("y-images-idx3-ubyte", Idx({0x803, 1000000, 28, 28}, {1, 2, 3}));
  const std::string big_labels = files.Write("y-labels-idx1-ubyte", Idx({0x801, 1000000}, {}));
  EXPECT_THAT(ErrorOf([&] { ReadIdx(big_but_short, big_labels); }),
              AllOf(HasSubstr(big_but_short + ": truncated"), HasSubstr("only 3")));
  const std::string zero = files.Write("z-images-idx3-ubyte", Idx({0x803, 0, 28, 28}, {}));
  EXPECT_THAT(ErrorOf([&] { ReadIdx(zero, good_labels); }),
              HasSubstr(zero + ": header declares 0"));

  const std::string missing = files.Path("m-labels-idx1-ubyte");
  EXPECT_EQ(ErrorOf([&] { ReadIdx(good_images, missing); }),
            missing + ": cannot open (No such file or directory)");
}

TEST(Idx, LabelsPathFor) {
  EXPECT_EQ(IdxLabelsPathFor("/d/train-images-idx3-ubyte.gz"), "/d/train-labels-idx1-ubyte.gz");
  EXPECT_EQ(IdxLabelsPathFor("t10k-images-idx3-ubyte"), "t10k-labels-idx1-ubyte");
  EXPECT_EQ(IdxLabelsPathFor("/m/train-images.idx3-ubyte"), "/m/train-labels.idx1-ubyte");
  // Only the file name counts, not a folder that happens to match.
  EXPECT_THAT(ErrorOf([] { IdxLabelsPathFor("/images-idx3-ubyte/data.bin"); }),
              HasSubstr("/images-idx3-ubyte/data.bin: not an IDX images file name"));
  EXPECT_THAT(ErrorOf([] { IdxLabelsPathFor("train-images-idx3-ubyte.zip"); }),
              HasSubstr("not an IDX images file name"));
  EXPECT_THAT(ErrorOf([] { IdxLabelsPathFor("train-labels-idx1-ubyte.gz"); }),
              HasSubstr("not an IDX images file name"));
}

// ---------------------------------------------------------------------------------------------
// CSV.

TEST(Csv, HeaderCommentsQuotesAndLabelColumn) {
  TempFiles files;
  const std::string path = files.Write("h.csv",
                                       "# produced by hand\n"
                                       "\"label\",\"x, one\",x2\n"
                                       "1, 0.5 ,2\n"
                                       "\n"
                                       "0,-1e-3,\"3\"\r\n");
  const Dataset data = ReadCsv(path);
  EXPECT_FALSE(data.is_sparse);
  ASSERT_EQ(data.num_samples(), 2);
  EXPECT_EQ(data.num_features, 2);
  ASSERT_EQ(data.dense.rows(), 2);
  ASSERT_EQ(data.dense.cols(), 2);
  EXPECT_EQ(data.labels[0], 1);
  EXPECT_EQ(data.labels[1], 0);
  EXPECT_EQ(data.dense(0, 0), 0.5);
  EXPECT_EQ(data.dense(0, 1), 2);
  EXPECT_EQ(data.dense(1, 0), -1e-3);
  EXPECT_EQ(data.dense(1, 1), 3);
  EXPECT_EQ(data.NumClasses(), 2);

  const Dataset last = ReadCsv(path, 2);
  EXPECT_EQ(last.labels[0], 2);
  EXPECT_EQ(last.labels[1], 3);
  EXPECT_EQ(last.dense(0, 0), 1);
  EXPECT_EQ(last.dense(0, 1), 0.5);
  EXPECT_EQ(last.dense(1, 1), -1e-3);
}

TEST(Csv, NoHeaderAndAutoFormat) {
  TempFiles files;
  const std::string text = "2.5,1,0\n-1,0,0\n";
  for (const std::string& path : {files.Write("n.csv", text), files.Write("noext", text),
                                  files.WriteGzip("z.csv.gz", text)}) {
    SCOPED_TRACE(path);
    const Dataset data = ReadDataset(path, "auto");
    ASSERT_EQ(data.num_samples(), 2);
    EXPECT_FALSE(data.is_sparse);
    EXPECT_EQ(data.num_features, 2);
    EXPECT_EQ(data.labels[0], 2.5);
    EXPECT_EQ(data.labels[1], -1);
    EXPECT_EQ(data.NumClasses(), 0);
    EXPECT_DOUBLE_EQ(data.Density(), 0.25);
  }
}

TEST(Csv, BadInputNamesPathLineAndProblem) {
  TempFiles files;
  const std::string ragged = files.Write("r.csv", "a,b,c\n1,2,3\n# note\n4,5\n");
  EXPECT_EQ(ErrorOf([&] { ReadCsv(ragged); }),
            ragged + ":4: 2 columns, expected 3 (as in the header on line 1)");
  const std::string long_row = files.Write("l.csv", "1,2\n3,4,5\n");
  EXPECT_EQ(ErrorOf([&] { ReadCsv(long_row); }),
            long_row + ":2: 3 columns, expected 2 (as on line 1)");
  const std::string word = files.Write("w.csv", "y,x\n1,2\n3,abc\n");
  EXPECT_THAT(ErrorOf([&] { ReadCsv(word); }),
              AllOf(HasSubstr(word + ":3: "), HasSubstr("'abc'"), HasSubstr("column 1")));
  const std::string empty_field = files.Write("e.csv", "1,2\n3,\n");
  EXPECT_THAT(ErrorOf([&] { ReadCsv(empty_field); }),
              AllOf(HasSubstr(empty_field + ":2: "), HasSubstr("column 1 is empty")));
  const std::string nan = files.Write("nan.csv", "1,2\nnan,4\n");
  EXPECT_THAT(ErrorOf([&] { ReadCsv(nan); }), HasSubstr(nan + ":2: "));
  const std::string quote = files.Write("q.csv", "1,2\n3,\"4\n");
  EXPECT_THAT(ErrorOf([&] { ReadCsv(quote); }),
              AllOf(HasSubstr(quote + ":2: "), HasSubstr("unterminated")));
  const std::string narrow = files.Write("c.csv", "1,2\n");
  EXPECT_THAT(ErrorOf([&] { ReadCsv(narrow, 2); }),
              AllOf(HasSubstr(narrow + ":1: "), HasSubstr("label column 2")));
  const std::string header_only = files.Write("ho.csv", "a,b\n");
  EXPECT_THAT(ErrorOf([&] { ReadCsv(header_only); }), HasSubstr("no samples"));
  const std::string missing = files.Path("missing.csv");
  EXPECT_EQ(ErrorOf([&] { ReadCsv(missing); }),
            missing + ": cannot open (No such file or directory)");
  EXPECT_THAT(ErrorOf([&] { ReadDataset(narrow, "csv", 5); }),
              AllOf(HasSubstr(narrow + ": "), HasSubstr("1 features but 5")));
}

TEST(ReadDatasetTest, UnknownFormatIsInvalidArgument) {
  TempFiles files;
  const std::string path = files.Write("x.svm", "1 1:1\n");
  EXPECT_EQ(ReadDataset(path, "libsvm").num_samples(), 1);
  EXPECT_EQ(ReadDataset(path, "auto").num_samples(), 1);
  try {
    ReadDataset(path, "parquet");
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("'parquet'"));
  }
  const std::string missing = files.Path("nothing");
  EXPECT_EQ(ErrorOf([&] { ReadDataset(missing, "auto"); }),
            missing + ": cannot open (No such file or directory)");
}

// ---------------------------------------------------------------------------------------------
// Dataset helpers on hand-made data.

TEST(DatasetTest, NumClasses) {
  Dataset data;
  EXPECT_EQ(data.NumClasses(), 0);
  data.labels = Vec::LinSpaced(3, 0, 2);  // 0 1 2
  EXPECT_EQ(data.NumClasses(), 3);
  data.labels = (Vec(3) << 0, 4, 4).finished();  // classes 1..3 absent, e.g. in a shard
  EXPECT_EQ(data.NumClasses(), 5);
  data.labels = (Vec(2) << -1, 1).finished();
  EXPECT_EQ(data.NumClasses(), 0);
  data.labels = (Vec(2) << 0, 1.5).finished();
  EXPECT_EQ(data.NumClasses(), 0);
}

TEST(DatasetTest, DenseSubsetAndDensity) {
  Dataset data;
  data.num_features = 2;
  data.dense.resize(3, 2);
  data.dense << 1, 0, 0, 0, 3, 4;
  data.labels = (Vec(3) << 10, 11, 12).finished();
  data.source = "hand";
  EXPECT_DOUBLE_EQ(data.Density(), 0.5);

  const Dataset subset = data.Subset({2, 0, 2});
  ASSERT_EQ(subset.num_samples(), 3);
  EXPECT_FALSE(subset.is_sparse);
  EXPECT_EQ(subset.num_features, 2);
  EXPECT_EQ(subset.source, "hand");
  EXPECT_EQ(subset.labels[0], 12);
  EXPECT_EQ(subset.labels[1], 10);
  EXPECT_EQ(subset.dense(0, 1), 4);
  EXPECT_EQ(subset.dense(1, 0), 1);
  EXPECT_EQ(subset.dense(2, 0), 3);
  EXPECT_EQ(data.Subset({}).num_samples(), 0);
  EXPECT_THROW(data.Subset({3}), std::out_of_range);
  EXPECT_THROW(data.Subset({-1}), std::out_of_range);
}

TEST(DatasetTest, SparseSubsetOfUncompressedMatrix) {
  Dataset data;
  data.is_sparse = true;
  data.num_features = 3;
  data.sparse.resize(2, 3);
  data.sparse.reserve(Eigen::VectorXi::Constant(2, 3));
  data.sparse.insert(0, 2) = 5;
  data.sparse.insert(1, 0) = 6;
  data.sparse.insert(1, 1) = 0;  // an explicit zero does not count for Density()
  ASSERT_FALSE(data.sparse.isCompressed());
  data.labels = (Vec(2) << 1, -1).finished();
  EXPECT_DOUBLE_EQ(data.Density(), 2.0 / 6.0);
  const Dataset subset = data.Subset({1, 1, 0});
  ASSERT_EQ(subset.sparse.rows(), 3);
  EXPECT_EQ(subset.sparse.coeff(0, 0), 6);
  EXPECT_EQ(subset.sparse.coeff(1, 0), 6);
  EXPECT_EQ(subset.sparse.coeff(2, 2), 5);
  EXPECT_EQ(subset.labels[2], 1);
}

}  // namespace
}  // namespace starling::algorithms
