// The starling-sim run loop: drives a RoundSimulator, evaluates the global metrics at the average
// model, writes them as JSON lines and reports progress. Shared by the binary and the tests.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>

#include "node/run_config.h"
#include "node/run_setup.h"

namespace starling::node {

struct SimOptions {
  // Stop as soon as a metrics point has rel_gap <= this (needs a reference optimum); 0 = never.
  double stop_at_gap = 0.0;
  // Progress lines on this stream every `progress_seconds`; null = quiet.
  std::ostream* progress = nullptr;
  double progress_seconds = 2.0;
};

struct SimSummary {
  int64_t iterations = 0;
  double objective = 0.0;
  double consensus = 0.0;
  std::optional<double> f_star;
  std::optional<double> rel_gap;
  std::optional<double> test_accuracy;
  // First metrics point (iteration) at which rel_gap <= 1e-6 / 1e-8, if reached.
  std::optional<int64_t> iterations_to_1e6;
  std::optional<int64_t> iterations_to_1e8;
  int64_t comm_rounds = 0;
  int64_t bytes = 0;
  double seconds = 0.0;
};

// Resolves config.reference_optimum: empty -> nullopt, a number -> it, "auto" -> the centralized
// reference solver on setup.global. Throws std::invalid_argument naming the option otherwise.
std::optional<double> ResolveReferenceOptimum(const RunConfig& config, const RunSetup& setup,
                                              std::ostream* log);

SimSummary RunSimulation(const RunConfig& config, const RunSetup& setup, const SimOptions& options);

}  // namespace starling::node
