#include "node/sim/simulated_run.h"

#include <iomanip>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "node/config/slow_nodes.h"
#include "node/sim/adfs_simulator.h"
#include "node/sim/churn_pairwise_simulator.h"
#include "node/sim/dadao_simulator.h"
#include "node/sim/faulty_pairwise_simulator.h"
#include "node/sim/faulty_round_simulator.h"
#include "node/sim/pairwise_simulator.h"
#include "node/sim/round_simulator.h"

namespace starling::node {

namespace {

std::string Scientific(double v) {
  std::ostringstream s;
  s << std::scientific << std::setprecision(3) << v;
  return s.str();
}

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
  std::vector<Vec> MeanBlockPredictors() const override {
    std::vector<Vec> mean;
    if (sim_.node(0).BlockPredictors() == nullptr) return mean;
    mean = *sim_.node(0).BlockPredictors();
    for (int i = 1; i < sim_.num_nodes(); ++i) {
      const std::vector<Vec>& p = *sim_.node(i).BlockPredictors();
      for (size_t b = 0; b < mean.size(); ++b) mean[b] += p[b];
    }
    for (Vec& v : mean) v /= static_cast<double>(sim_.num_nodes());
    return mean;
  }

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
  const Vec* NodeModel(int i) const override { return &sim_.node(i).ReportedModel(); }
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
      : PairwiseRunOf(setup.nodes, PairwiseOptionsFor(config, setup), config.seed) {
    sim_.SetSlowFactors(SlowFactors(config.slow_nodes, static_cast<int>(setup.nodes.size())));
  }
};

// DADAO in the order of the nodes' own Poisson clocks (dadao_simulator.h).
class DadaoRun : public PairwiseRunOf<DadaoSimulator> {
 public:
  DadaoRun(const RunConfig& config, const RunSetup& setup)
      : PairwiseRunOf(setup.nodes, PairwiseOptionsFor(config, setup), config.seed) {}
};

// ADFS in the order of the nodes' own Poisson clocks (adfs_simulator.h).
class AdfsRun : public PairwiseRunOf<AdfsSimulator> {
 public:
  AdfsRun(const RunConfig& config, const RunSetup& setup)
      : PairwiseRunOf(setup.nodes, PairwiseOptionsFor(config, setup), config.seed) {}
};

// The same runs over a simulated faulty network (fault injection).
class FaultyRoundRun : public RoundRunOf<FaultyRoundSimulator> {
 public:
  FaultyRoundRun(const RunConfig& config, const RunSetup& setup, const SimOptions& options)
      : RoundRunOf(setup.nodes, RoundOptionsFor(config, setup), *options.faults, options.resend_ms,
                   config.iterations) {}
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
                      *options.faults) {
    sim_.SetSlowFactors(SlowFactors(config.slow_nodes, static_cast<int>(setup.nodes.size())));
  }
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

// A pairwise run whose members come and go (churn_pairwise_simulator.h).
class ChurnPairwiseRun : public SimulatedRun {
 public:
  ChurnPairwiseRun(const RunConfig& config, const RunSetup& setup, const ChurnOptions& churn)
      : sim_(setup.nodes, PairwiseOptionsFor(config, setup), config.seed,
             BuildChurnEvents(churn, static_cast<int>(setup.nodes.size()),
                              static_cast<double>(config.iterations)),
             churn.seed) {}
  void Step() override { sim_.Activate(); }
  int64_t iteration() const override { return sim_.total_local_steps() / sim_.num_nodes(); }
  ModelSpread Spread() const override { return sim_.Spread(); }
  int64_t comm_rounds() const override { return sim_.exchanges() / sim_.num_nodes(); }
  int64_t bytes() const override { return sim_.bytes_sent(); }
  double gradient_passes() const override { return sim_.gradient_passes(); }
  std::string FaultReport() const override {
    const ChurnCounters& c = sim_.counters();
    return "churn_joins " + std::to_string(c.joins) + "\nchurn_leaves " + std::to_string(c.leaves) +
           "\nchurn_crashes " + std::to_string(c.crashes) + "\nchurn_skipped " +
           std::to_string(c.skipped) + "\nmembers_at_end " + std::to_string(sim_.num_members()) +
           "\nleave_drift " + Scientific(c.leave_drift) + "\ncrash_shift " +
           Scientific(c.crash_shift) + "\njoin_bytes " + std::to_string(c.join_bytes);
  }

 private:
  ChurnPairwiseSimulator sim_;
};

}  // namespace

std::unique_ptr<SimulatedRun> MakeSimulatedRun(const RunConfig& config, const RunSetup& setup,
                                               const SimOptions& options) {
  if (!algorithms::IsPairwiseAlgorithm(config.algorithm) &&
      AnySlow(SlowFactors(config.slow_nodes, static_cast<int>(setup.nodes.size())))) {
    throw std::invalid_argument(
        "--slow-node: the simulator runs round-based methods in lockstep, "
        "without time (every node waits for the slowest at every step); "
        "run starlingd daemons to measure a straggler's cost");
  }
  if (options.churn != nullptr && options.churn->any()) {
    if (!algorithms::IsPairwiseAlgorithm(config.algorithm)) {
      throw std::invalid_argument(
          "--churn-*: the simulator runs churn for pairwise methods (swarmsgd); round-based "
          "methods keep their members for the whole run");
    }
    if (options.faults != nullptr && options.faults->any()) {
      throw std::invalid_argument("--churn-*: not with --fault-* (one or the other per run)");
    }
    if (AnySlow(SlowFactors(config.slow_nodes, static_cast<int>(setup.nodes.size())))) {
      throw std::invalid_argument("--churn-*: not with --slow-node (one or the other per run)");
    }
    return std::make_unique<ChurnPairwiseRun>(config, setup, *options.churn);
  }
  if (config.algorithm == "dadao") {
    if (options.faults != nullptr && options.faults->any()) {
      throw std::invalid_argument(
          "--fault-*: the simulator runs dadao on its nodes' own clocks over the ideal network "
          "only; run starlingd daemons (or tests/dadao_test's fake channel) for dadao under "
          "faults");
    }
    // The order of events is the nodes' own unit-rate clocks (dadao_simulator.h): a slow node
    // there would need a slower gradient clock, which Dadao does not have. Accepting the option
    // and running every node at the same speed would report a straggler that is not one.
    if (AnySlow(SlowFactors(config.slow_nodes, static_cast<int>(setup.nodes.size())))) {
      throw std::invalid_argument(
          "--slow-node: the simulator runs dadao on unit-rate clocks for every node (no "
          "straggler); run starlingd daemons to measure a straggler's cost");
    }
    return std::make_unique<DadaoRun>(config, setup);
  }
  if (config.algorithm == "adfs") {
    if (options.faults != nullptr && options.faults->any()) {
      throw std::invalid_argument(
          "--fault-*: the simulator runs adfs on its nodes' own clocks over the ideal network "
          "only; run starlingd daemons (or tests/adfs_test's fake channel) for adfs under "
          "faults");
    }
    if (AnySlow(SlowFactors(config.slow_nodes, static_cast<int>(setup.nodes.size())))) {
      throw std::invalid_argument(
          "--slow-node: the simulator runs adfs on equal-rate clocks for every node (no "
          "straggler); run starlingd daemons to measure a straggler's cost");
    }
    return std::make_unique<AdfsRun>(config, setup);
  }
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

}  // namespace starling::node
