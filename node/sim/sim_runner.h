// The starling-sim run loop: drives the run's simulator (simulated_run.h), evaluates the global
// metrics at the average model, writes them as JSON lines and reports progress. Shared by the
// binary, the probe and the tests.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "net/fault_plan.h"
#include "node/config/run_config.h"
#include "node/config/run_setup.h"
#include "node/sim/bregman_gap.h"  // part of this interface: the summary's bregman
#include "node/sim/churn_plan.h"

namespace starling::node {

struct SimOptions {
  // Stop as soon as a metrics point has rel_gap <= this (needs a reference optimum); 0 = never.
  double stop_at_gap = 0.0;
  // Progress lines on this stream every `progress_seconds`; null = quiet.
  std::ostream* progress = nullptr;
  double progress_seconds = 2.0;
  // Fault injection (node/config/fault_options.h): when it injects anything, round-based runs go
  // through FaultyRoundSimulator (RESEND after resend_ms simulated ms) and pairwise runs through
  // FaultyPairwiseSimulator. Null = the ideal network.
  const net::FaultPlan* faults = nullptr;
  int64_t resend_ms = 20;
  // Churn (churn_plan.h): when it has any event source, pairwise runs go through
  // ChurnPairwiseSimulator. Null = a fixed set of nodes.
  const ChurnOptions* churn = nullptr;
};

struct SimSummary {
  int64_t iterations = 0;
  double objective = 0.0;
  // The objective at the first metrics point (the starting models' average): a run that ends
  // above it did not converge, whatever it printed (starling-sim warns).
  double start_objective = 0.0;
  double consensus = 0.0;
  std::optional<double> f_star;
  std::optional<double> rel_gap;
  std::optional<double> test_accuracy;
  // --block-cyclic with --test-data: block b's test accuracy of the network mean of predictor b
  // (MM-PSGD) or of the mean model (the other methods); nullopt for a block without test rows.
  std::vector<std::optional<double>> block_test_accuracy;
  bool block_predictors = false;  // the accuracies above are of per-block predictors
  std::optional<double> bregman;  // with --x-star
  // First metrics point (iteration) at which rel_gap <= 1e-6 / 1e-8, if reached.
  std::optional<int64_t> iterations_to_1e6;
  std::optional<int64_t> iterations_to_1e8;
  int64_t comm_rounds = 0;
  int64_t bytes = 0;
  double seconds = 0.0;
  // With fault injection: what the faults did and how the run coped, one line per item.
  std::string fault_report;
};

// Thrown by RunSimulation when the run diverges by DivergenceGuard's criterion
// (node/report/divergence_guard.h): starling-sim exits 4 on it, as a daemon does.
class RunDiverged : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Resolves config.reference_optimum: empty -> nullopt, a number -> it, "auto" -> the centralized
// reference solver on setup.global. Throws std::invalid_argument naming the option otherwise.
std::optional<double> ResolveReferenceOptimum(const RunConfig& config, const RunSetup& setup,
                                              std::ostream* log);

SimSummary RunSimulation(const RunConfig& config, const RunSetup& setup, const SimOptions& options);

}  // namespace starling::node
