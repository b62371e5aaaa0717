// Paths to the real data sets used by tests, and a skip when they are absent.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace starling::testing {

inline std::string SharedData(const std::string& name) {
  return std::string(STARLING_SHARED_DATA) + "/" + name;
}
inline std::string FashionMnist(const std::string& name) {
  return std::string(STARLING_FMNIST_DIR) + "/" + name;
}
inline bool Exists(const std::string& path) { return std::filesystem::exists(path); }

}  // namespace starling::testing

// Skips the current test with a clear message when `path` does not exist.
#define STARLING_REQUIRE_FILE(path)                                              \
  do {                                                                           \
    if (!::starling::testing::Exists(path)) GTEST_SKIP() << "missing " << (path); \
  } while (0)
