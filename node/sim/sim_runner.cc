#include "node/sim/sim_runner.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <iomanip>
#include <memory>
#include <ostream>
#include <stdexcept>

#include "algorithms/problems/reference_solver.h"
#include "node/config/reference_cache.h"
#include "node/config/run_header.h"
#include "node/report/divergence_guard.h"
#include "node/report/json_line.h"
#include "node/report/metrics_file.h"
#include "node/report/metrics_header.h"
#include "node/sim/simulated_run.h"

namespace starling::node {

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

std::optional<double> ResolveReferenceOptimum(const RunConfig& config, const RunSetup& setup,
                                              std::ostream* log) {
  const std::string& spec = config.reference_optimum;
  if (spec.empty()) return std::nullopt;
  if (spec == "auto") {
    // The reference cache first (node/config/reference_cache.h); a fresh solve is stored there.
    const std::string dir = ReferenceCacheDir();
    const std::string key =
        ReferenceKeyText(config, setup, *setup.global, algorithms::ReferenceOptions().grad_tol);
    std::ostream& warn = log ? *log : std::cerr;
    if (const std::optional<CachedReference> hit = LoadCachedReference(dir, key, warn)) {
      if (log) {
        *log << "reference optimum: f* = " << std::setprecision(15) << hit->solution.value
             << " (from the reference cache: " << ReferenceEntryPath(dir, key) << ")"
             << std::endl;
      }
      return hit->solution.value;
    }
    const auto start = Clock::now();
    const algorithms::ReferenceSolution ref = algorithms::SolveReference(*setup.global);
    CachedReference entry{ref, std::nullopt};
    if (setup.test) entry.test_accuracy = setup.test->Accuracy(ref.x);
    StoreCachedReference(dir, key, entry, warn);
    if (log) {
      *log << "reference optimum: f* = " << std::setprecision(15) << ref.value << " (gradient norm "
           << std::setprecision(3) << ref.grad_norm << ", " << ref.iterations
           << " Newton iterations, " << std::fixed << std::setprecision(1) << SecondsSince(start)
           << " s)" << std::defaultfloat << std::endl;
    }
    return ref.value;
  }
  char* end = nullptr;
  const double value = std::strtod(spec.c_str(), &end);
  if (end == spec.c_str() || *end != '\0' || !std::isfinite(value) || value <= 0) {
    throw std::invalid_argument("--reference-optimum '" + spec +
                                "': expected a positive number or 'auto'");
  }
  return value;
}

namespace {

// One run of RunSimulation: steps the simulated run, records the global metrics at the metrics
// points (the summary keeps the last of them) and reports progress.
class Simulation {
 public:
  Simulation(const RunConfig& config, const RunSetup& setup, const SimOptions& options);
  SimSummary Run();

 private:
  // Evaluates the metrics at the current average model and writes them; returns true to stop.
  bool Record();
  // The optional parts of a metrics point, in the order of its JSON keys.
  void RecordBregman(JsonLine* line);
  void RecordRelativeGap(JsonLine* line);
  void RecordBlockAccuracy(const Vec& mean, JsonLine* line);
  void ReportProgress();

  const RunConfig& config_;
  const RunSetup& setup_;
  const SimOptions& options_;
  const Clock::time_point start_;
  SimSummary summary_;
  std::optional<MetricsFile> metrics_;
  int64_t log_every_ = 1;
  std::unique_ptr<SimulatedRun> run_;
  Clock::time_point last_progress_;
  std::optional<BregmanGap> bregman_;
  // Set at the first metrics point, from the starting point's objective and model norm.
  std::optional<DivergenceGuard> guard_;
};

// The order of the steps is the old single function's: the reference optimum is solved (and
// logged) before the metrics file is opened, and both before the simulator is built.
Simulation::Simulation(const RunConfig& config, const RunSetup& setup, const SimOptions& options)
    : config_(config), setup_(setup), options_(options), start_(Clock::now()) {
  summary_.f_star = ResolveReferenceOptimum(config, setup, options.progress);
  if (options.stop_at_gap > 0 && !summary_.f_star) {
    throw std::invalid_argument("--stop-at-gap needs --reference-optimum");
  }
  metrics_.emplace(config.metrics);
  metrics_->Write(MetricsHeaderLine("starling-sim", RunHeaderFields(config, setup)));
  log_every_ =
      config.log_every > 0 ? config.log_every : std::max<int64_t>(1, config.iterations / 200);
  run_ = MakeSimulatedRun(config, setup, options);
  last_progress_ = Clock::now();
  if (setup.x_star.size() > 0) bregman_.emplace(setup);
}

SimSummary Simulation::Run() {
  bool stop = Record();
  int64_t next_record = log_every_;
  while (!stop && run_->iteration() < config_.iterations) {
    run_->Step();
    const bool last = run_->iteration() >= config_.iterations;
    if (run_->iteration() >= next_record || last) {
      stop = Record();
      next_record = (run_->iteration() / log_every_ + 1) * log_every_;
    }
    ReportProgress();
  }
  metrics_->Finish();
  summary_.seconds = SecondsSince(start_);
  run_->Finish();
  summary_.fault_report = run_->FaultReport();
  return summary_;
}

bool Simulation::Record() {
  const ModelSpread spread = run_->Spread();
  const Vec& mean = spread.mean;
  summary_.iterations = run_->iteration();
  summary_.objective = setup_.global->Value(mean);
  summary_.consensus = spread.consensus;
  summary_.comm_rounds = run_->comm_rounds();
  summary_.bytes = run_->bytes();
  JsonLine line;
  line.Add("iter", summary_.iterations)
      .Add("objective", summary_.objective)
      .Add("consensus", summary_.consensus)
      .Add("comm_rounds", summary_.comm_rounds)
      .Add("bytes", summary_.bytes)
      .Add("gradient_passes", run_->gradient_passes());
  if (config_.compression != "none") line.Add("decode_failures", run_->decode_failures());
  RecordBregman(&line);
  RecordRelativeGap(&line);
  if (setup_.test) {
    summary_.test_accuracy = setup_.test->Accuracy(mean);
    if (summary_.test_accuracy) line.Add("test_accuracy", *summary_.test_accuracy);
  }
  RecordBlockAccuracy(mean, &line);
  summary_.seconds = SecondsSince(start_);
  line.Add("time", summary_.seconds);
  metrics_->Write(line);
  // The root-mean-square of the node models' norms: (1/N) sum_i ||x_i||^2 = ||x-bar||^2 + Gamma.
  const double norm = std::sqrt(mean.squaredNorm() + spread.consensus);
  if (!guard_) {
    guard_.emplace(summary_.objective, norm);
    summary_.start_objective = summary_.objective;
  }
  if (auto why = guard_->Check(summary_.objective, norm)) {
    metrics_->Finish();
    throw RunDiverged("the run diverged at iteration " + std::to_string(summary_.iterations) +
                      ": " + *why + "; try a smaller --step");
  }
  return options_.stop_at_gap > 0 && summary_.rel_gap && *summary_.rel_gap <= options_.stop_at_gap;
}

void Simulation::RecordBregman(JsonLine* line) {
  if (!bregman_) return;
  auto model_of = [&](int i) {
    const Vec* model = run_->NodeModel(i);
    if (model == nullptr) throw std::invalid_argument("--x-star: not available with faults");
    return model;
  };
  summary_.bregman = bregman_->At(model_of);
  line->Add("bregman", *summary_.bregman);
  // The OPTRA authors' evaluate.m variant (see BregmanGap::EvaluateMAt), logged beside it.
  line->Add("bregman_evaluate_m", bregman_->EvaluateMAt(model_of));
}

void Simulation::RecordRelativeGap(JsonLine* line) {
  if (!summary_.f_star) return;
  summary_.rel_gap = (summary_.objective - *summary_.f_star) / *summary_.f_star;
  line->Add("rel_gap", *summary_.rel_gap);
  if (*summary_.rel_gap <= 1e-6 && !summary_.iterations_to_1e6) {
    summary_.iterations_to_1e6 = summary_.iterations;
  }
  if (*summary_.rel_gap <= 1e-8 && !summary_.iterations_to_1e8) {
    summary_.iterations_to_1e8 = summary_.iterations;
  }
}

// Block b's test rows with predictor b where the method has them, else with the mean model.
void Simulation::RecordBlockAccuracy(const Vec& mean, JsonLine* line) {
  if (setup_.test_blocks.empty()) return;
  const std::vector<Vec> predictors = run_->MeanBlockPredictors();
  summary_.block_predictors = !predictors.empty();
  summary_.block_test_accuracy.assign(setup_.test_blocks.size(), std::nullopt);
  for (size_t b = 0; b < setup_.test_blocks.size(); ++b) {
    if (!setup_.test_blocks[b]) continue;
    summary_.block_test_accuracy[b] =
        setup_.test_blocks[b]->Accuracy(predictors.empty() ? mean : predictors[b]);
    if (summary_.block_test_accuracy[b]) {
      line->Add("test_accuracy_block" + std::to_string(b), *summary_.block_test_accuracy[b]);
    }
  }
}

void Simulation::ReportProgress() {
  if (!(options_.progress && SecondsSince(last_progress_) >= options_.progress_seconds)) return;
  last_progress_ = Clock::now();
  std::ostream& out = *options_.progress;
  // The objective (and gap) are the last metrics point's; between points, say which iteration
  // that was, so that a large --log-every does not read as a method standing still.
  out << "iter " << run_->iteration() << "/" << config_.iterations << "  objective "
      << std::setprecision(10) << summary_.objective;
  if (summary_.iterations != run_->iteration()) out << " (at iter " << summary_.iterations << ")";
  if (summary_.rel_gap) out << "  rel_gap " << std::setprecision(3) << *summary_.rel_gap;
  out << std::endl;
}

}  // namespace

SimSummary RunSimulation(const RunConfig& config, const RunSetup& setup,
                         const SimOptions& options) {
  return Simulation(config, setup, options).Run();
}

}  // namespace starling::node
