// A cache of centralized reference solutions (the optimum f*, its minimiser and its test
// accuracy) under $XDG_CACHE_HOME/starling (default ~/.cache/starling), so that the same solve is
// done once per machine rather than on every run.
//
// An entry is keyed by everything that determines the solution: the bytes of --data and of
// --test-data (hashed), the format and how it is read (label column, features, classes), the
// problem (kind, hidden units, lambda, loss scale, dimension, sample count), the label map and
// the feature scaling fitted on the data, the solver's tolerance, and this file's format version.
// The entry holds that key text in full and a checksum of its contents: an entry whose key text
// differs (a hash collision in the file name), whose checksum does not match, or that cannot be
// read or parsed is ignored with a warning naming the file, never trusted; the solve is then
// done again and the entry rewritten (atomically: a temporary file renamed over it).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "algorithms/problems/problem.h"
#include "algorithms/problems/reference_solver.h"
#include "node/config/run_config.h"
#include "node/config/run_setup.h"

namespace starling::node {

// A reference solution and the test accuracy of its minimiser (none without test data).
struct CachedReference {
  algorithms::ReferenceSolution solution;
  std::optional<double> test_accuracy;
};

// The folder of the cache: $XDG_CACHE_HOME/starling if XDG_CACHE_HOME is set to an absolute path
// (the XDG rule), else $HOME/.cache/starling; empty if neither is known (no caching).
std::string ReferenceCacheDir();

// 64-bit FNV-1a of a file's bytes; throws std::runtime_error naming the file if it cannot be read.
uint64_t FileContentHash(const std::string& path);

// The key text of the reference solve of `global` for this run, to tolerance `grad_tol`.
// Reads (hashes) the data and test files.
std::string ReferenceKeyText(const RunConfig& config, const RunSetup& setup,
                             const algorithms::Problem& global, double grad_tol);

// The entry file for `key_text` in `dir`.
std::string ReferenceEntryPath(const std::string& dir, const std::string& key_text);

// The cached solution for `key_text`, or none: no entry, or one that is ignored (a warning
// naming the file goes to `warn`).
std::optional<CachedReference> LoadCachedReference(const std::string& dir,
                                                   const std::string& key_text, std::ostream& warn);

// Writes the entry for `key_text`; on failure says so on `warn` (naming the file) and returns
// false: a cache that cannot be written only costs the next run a solve.
bool StoreCachedReference(const std::string& dir, const std::string& key_text,
                          const CachedReference& entry, std::ostream& warn);

}  // namespace starling::node
