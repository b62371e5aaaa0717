#include "node/sim/sim_runner.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iomanip>
#include <memory>
#include <ostream>
#include <stdexcept>

#include "algorithms/problems/reference_solver.h"
#include "node/report/json_line.h"
#include "node/sim/simulated_run.h"

namespace starling::node {

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

BregmanGap::BregmanGap(const RunSetup& setup) : setup_(setup) {
  const int n = static_cast<int>(setup.problems.size());
  grad_at_star_.resize(n);
  for (int i = 0; i < n; ++i) {
    const algorithms::Problem* p = setup.problems[i].get();
    if (p == nullptr) throw std::logic_error("BregmanGap: node problems were not built");
    value_at_star_ += p->Value(setup.x_star);
    p->Gradient(setup.x_star, &grad_at_star_[i]);
  }
}

double BregmanGap::At(const std::function<const Vec*(int)>& model_of) const {
  // sum_i f_i(x_i) - f_i(x*) - <grad f_i(x*), x_i - x*>, with the constant part
  // sum_i f_i(x*) - <grad f_i(x*), x*> subtracted once at the end. The OPTRA authors' evaluate.m
  // omits sum_i <grad f_i(x*), x*>, which is 0 only for an exact minimiser (about 3e-9 on their
  // instance, invisible above a gap of 1e-6).
  double sum = 0.0, constant = value_at_star_;
  for (size_t i = 0; i < grad_at_star_.size(); ++i) {
    const Vec& x = *model_of(static_cast<int>(i));
    sum += setup_.problems[i]->Value(x) - grad_at_star_[i].dot(x);
    constant -= grad_at_star_[i].dot(setup_.x_star);
  }
  return std::abs(sum - constant);
}

std::optional<double> ResolveReferenceOptimum(const RunConfig& config, const RunSetup& setup,
                                              std::ostream* log) {
  const std::string& spec = config.reference_optimum;
  if (spec.empty()) return std::nullopt;
  if (spec == "auto") {
    const auto start = Clock::now();
    const algorithms::ReferenceSolution ref = algorithms::SolveReference(*setup.global);
    if (log) {
      *log << "reference optimum: f* = " << std::setprecision(15) << ref.value
           << " (gradient norm " << std::setprecision(3) << ref.grad_norm << ", "
           << ref.iterations << " Newton iterations, " << std::fixed << std::setprecision(1)
           << SecondsSince(start) << " s)" << std::defaultfloat << std::endl;
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

SimSummary RunSimulation(const RunConfig& config, const RunSetup& setup,
                         const SimOptions& options) {
  const auto start = Clock::now();
  SimSummary summary;
  summary.f_star = ResolveReferenceOptimum(config, setup, options.progress);
  if (options.stop_at_gap > 0 && !summary.f_star) {
    throw std::invalid_argument("--stop-at-gap needs --reference-optimum");
  }

  std::ofstream metrics;
  if (!config.metrics.empty()) {
    metrics.open(config.metrics, std::ios::trunc);
    if (!metrics) throw std::runtime_error(config.metrics + ": cannot open metrics file");
  }
  const int64_t log_every =
      config.log_every > 0 ? config.log_every : std::max<int64_t>(1, config.iterations / 200);

  const std::unique_ptr<SimulatedRun> run = MakeSimulatedRun(config, setup, options);
  auto last_progress = Clock::now();
  const std::optional<BregmanGap> bregman =
      setup.x_star.size() > 0 ? std::optional<BregmanGap>(BregmanGap(setup)) : std::nullopt;

  // Evaluates the global metrics at the current average model; returns true to stop.
  auto record = [&]() {
    const ModelSpread spread = run->Spread();
    const Vec& mean = spread.mean;
    summary.iterations = run->iteration();
    summary.objective = setup.global->Value(mean);
    summary.consensus = spread.consensus;
    summary.comm_rounds = run->comm_rounds();
    summary.bytes = run->bytes();
    JsonLine line;
    line.Add("iter", summary.iterations)
        .Add("objective", summary.objective)
        .Add("consensus", summary.consensus)
        .Add("comm_rounds", summary.comm_rounds)
        .Add("bytes", summary.bytes)
        .Add("gradient_passes", run->gradient_passes());
    if (config.compression != "none") line.Add("decode_failures", run->decode_failures());
    if (bregman) {
      summary.bregman = bregman->At([&](int i) {
        const Vec* model = run->NodeModel(i);
        if (model == nullptr) throw std::invalid_argument("--x-star: not available with faults");
        return model;
      });
      line.Add("bregman", *summary.bregman);
    }
    if (summary.f_star) {
      summary.rel_gap = (summary.objective - *summary.f_star) / *summary.f_star;
      line.Add("rel_gap", *summary.rel_gap);
      if (*summary.rel_gap <= 1e-6 && !summary.iterations_to_1e6) {
        summary.iterations_to_1e6 = summary.iterations;
      }
      if (*summary.rel_gap <= 1e-8 && !summary.iterations_to_1e8) {
        summary.iterations_to_1e8 = summary.iterations;
      }
    }
    if (setup.test) {
      summary.test_accuracy = setup.test->Accuracy(mean);
      if (summary.test_accuracy) line.Add("test_accuracy", *summary.test_accuracy);
    }
    summary.seconds = SecondsSince(start);
    line.Add("time", summary.seconds);
    if (metrics.is_open()) metrics << line.str() << '\n';
    if (!std::isfinite(summary.objective)) {
      throw std::runtime_error("the objective diverged at iteration " +
                               std::to_string(summary.iterations) + " (try a smaller --step)");
    }
    return options.stop_at_gap > 0 && summary.rel_gap && *summary.rel_gap <= options.stop_at_gap;
  };

  bool stop = record();
  int64_t next_record = log_every;
  while (!stop && run->iteration() < config.iterations) {
    run->Step();
    const bool last = run->iteration() >= config.iterations;
    if (run->iteration() >= next_record || last) {
      stop = record();
      next_record = (run->iteration() / log_every + 1) * log_every;
    }
    if (options.progress && SecondsSince(last_progress) >= options.progress_seconds) {
      last_progress = Clock::now();
      *options.progress << "iter " << run->iteration() << "/" << config.iterations
                        << "  objective " << std::setprecision(10) << summary.objective;
      if (summary.rel_gap) *options.progress << "  rel_gap " << std::setprecision(3) << *summary.rel_gap;
      *options.progress << std::endl;
    }
  }
  if (metrics.is_open()) {
    metrics.flush();
    if (!metrics) throw std::runtime_error(config.metrics + ": write failed");
  }
  summary.seconds = SecondsSince(start);
  run->Finish();
  summary.fault_report = run->FaultReport();
  return summary;
}

}  // namespace starling::node
