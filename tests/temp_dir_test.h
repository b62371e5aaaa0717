// A test fixture with a folder of its own (named after the test suite and this process, so that
// parallel test processes never share one), created before each test and removed after it, and
// a way to write small files into it.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace starling::testing {

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string suite =
        ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name();
    dir_ = (std::filesystem::temp_directory_path() /
            ("starling-" + suite + "-" + std::to_string(getpid())))
               .string();
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // Writes `text` to DIR/name and returns that path.
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string dir_;
};

}  // namespace starling::testing
