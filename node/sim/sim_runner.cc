#include "node/sim/sim_runner.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iomanip>
#include <memory>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "algorithms/problems/reference_solver.h"
#include "node/report/json_line.h"
#include "node/sim/faulty_pairwise_simulator.h"
#include "node/sim/faulty_round_simulator.h"
#include "node/sim/pairwise_simulator.h"
#include "node/sim/round_simulator.h"

namespace starling::node {

namespace {

using Clock = std::chrono::steady_clock;

std::string Scientific(double v) {
  std::ostringstream s;
  s << std::scientific << std::setprecision(3) << v;
  return s.str();
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One simulated run of either algorithm shape, seen through what the metrics need.
class SimulatedRun {
 public:
  virtual ~SimulatedRun() = default;
  virtual void Step() = 0;
  // Outer iterations (round-based) or local steps per node (pairwise).
  virtual int64_t iteration() const = 0;
  virtual ModelSpread Spread() const = 0;
  virtual int64_t comm_rounds() const = 0;
  virtual int64_t bytes() const = 0;
  virtual double gradient_passes() const = 0;
  virtual std::string FaultReport() const { return ""; }
  // Quantized exchanges that fell back to full precision (pairwise runs with --compression).
  virtual int64_t decode_failures() const { return 0; }
  // Called once after the last step (a faulty network delivers what is still in flight).
  virtual void Finish() {}
  // Node i's model, for per-node metrics (the Bregman gap); null where the run does not expose it.
  virtual const Vec* NodeModel(int i) const {
    (void)i;
    return nullptr;
  }
};

// A round-based simulator of either kind (RoundSimulator, FaultyRoundSimulator) seen as a run.
template <class Sim>
class RoundRunOf : public SimulatedRun {
 public:
  template <class... Args>
  explicit RoundRunOf(Args&&... args) : sim_(std::forward<Args>(args)...) {}
  void Step() override { sim_.Step(); }
  int64_t iteration() const override { return sim_.iteration(); }
  ModelSpread Spread() const override { return sim_.Spread(); }
  int64_t comm_rounds() const override { return sim_.node(0).counters().comm_rounds; }
  int64_t bytes() const override { return sim_.bytes_sent(); }
  double gradient_passes() const override { return sim_.node(0).counters().gradient_passes; }
  const Vec* NodeModel(int i) const override { return &sim_.node(i).Model(); }

 protected:
  Sim sim_;
};

// A pairwise simulator of either kind (PairwiseSimulator, FaultyPairwiseSimulator) as a run.
template <class Sim>
class PairwiseRunOf : public SimulatedRun {
 public:
  template <class... Args>
  explicit PairwiseRunOf(Args&&... args) : sim_(std::forward<Args>(args)...) {}
  void Step() override { sim_.Activate(); }
  int64_t iteration() const override { return sim_.total_local_steps() / sim_.num_nodes(); }
  ModelSpread Spread() const override { return sim_.Spread(); }
  // Exchanges per node, the pairwise analogue of a communication round.
  int64_t comm_rounds() const override { return sim_.exchanges() / sim_.num_nodes(); }
  int64_t bytes() const override { return sim_.bytes_sent(); }
  double gradient_passes() const override {
    double passes = 0.0;
    for (int i = 0; i < sim_.num_nodes(); ++i) passes += sim_.node(i).counters().gradient_passes;
    return passes / sim_.num_nodes();
  }
  const Vec* NodeModel(int i) const override { return &sim_.node(i).Model(); }
  int64_t decode_failures() const override {
    int64_t failures = 0;
    for (int i = 0; i < sim_.num_nodes(); ++i) failures += sim_.node(i).counters().decode_failures;
    return failures;
  }

 protected:
  Sim sim_;
};

class RoundRun : public RoundRunOf<RoundSimulator> {
 public:
  RoundRun(const RunConfig& config, const RunSetup& setup)
      : RoundRunOf(setup.nodes, RoundOptionsFor(config, setup)) {}
};

class PairwiseRun : public PairwiseRunOf<PairwiseSimulator> {
 public:
  PairwiseRun(const RunConfig& config, const RunSetup& setup)
      : PairwiseRunOf(setup.nodes, PairwiseOptionsFor(config, setup), config.seed) {}
};

// The same runs over a simulated faulty network (fault injection, issue 6).
class FaultyRoundRun : public RoundRunOf<FaultyRoundSimulator> {
 public:
  FaultyRoundRun(const RunConfig& config, const RunSetup& setup, const SimOptions& options)
      : RoundRunOf(setup.nodes, RoundOptionsFor(config, setup), *options.faults,
                   options.resend_ms, config.iterations) {}
  std::string FaultReport() const override {
    const FaultyRoundCounters c = sim_.counters();
    return "faults: " + c.faults.Summary() + "\nsimulated_ms " + std::to_string(sim_.now_ms()) +
           "\npayloads_sent " + std::to_string(c.payloads_sent) + "\nresends_sent " +
           std::to_string(c.resends_sent) + "\nresends_answered " +
           std::to_string(c.resends_answered) + "\nduplicates_dropped " +
           std::to_string(c.duplicates_dropped);
  }
};

class FaultyPairwiseRun : public PairwiseRunOf<FaultyPairwiseSimulator> {
 public:
  FaultyPairwiseRun(const RunConfig& config, const RunSetup& setup, const SimOptions& options)
      : PairwiseRunOf(setup.nodes, PairwiseOptionsFor(config, setup), config.seed,
                      *options.faults) {}
  void Finish() override { sim_.Drain(); }
  std::string FaultReport() const override {
    const FaultyPairwiseCounters c = sim_.counters();
    return "faults: " + c.faults.Summary() + "\nexchanges_started " +
           std::to_string(c.exchanges_started) + "\nmerged_at_once " +
           std::to_string(c.merged_at_once) + "\nmerged_late " + std::to_string(c.merged_late) +
           "\nrequests_lost " + std::to_string(c.requests_lost) + "\nreplies_lost " +
           std::to_string(c.replies_lost) + "\nduplicate_requests_dropped " +
           std::to_string(c.duplicate_requests_dropped) + "\nstale_replies_dropped " +
           std::to_string(c.stale_replies_dropped) + "\nduplicate_replies_dropped " +
           std::to_string(c.duplicate_replies_dropped) + "\nexchange_drift " +
           Scientific(sim_.exchange_drift());
  }
};

std::unique_ptr<SimulatedRun> MakeRun(const RunConfig& config, const RunSetup& setup,
                                      const SimOptions& options) {
  if (options.faults != nullptr && options.faults->any()) {
    if (algorithms::IsPairwiseAlgorithm(config.algorithm)) {
      return std::make_unique<FaultyPairwiseRun>(config, setup, options);
    }
    return std::make_unique<FaultyRoundRun>(config, setup, options);
  }
  if (algorithms::IsPairwiseAlgorithm(config.algorithm)) {
    return std::make_unique<PairwiseRun>(config, setup);
  }
  return std::make_unique<RoundRun>(config, setup);
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

  const std::unique_ptr<SimulatedRun> run = MakeRun(config, setup, options);
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
