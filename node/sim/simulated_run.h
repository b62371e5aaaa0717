// The simulated run as the starling-sim run loop sees it: one interface over the four simulators
// (round-based or pairwise, over the ideal or a faulty network), so that the loop that evaluates
// and writes the metrics is written once. Internal to node/sim/.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "node/config/run_config.h"
#include "node/config/run_setup.h"
#include "node/report/model_spread.h"
#include "node/sim/sim_runner.h"

namespace starling::node {

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
  // The network mean of each of the method's per-block predictors (RoundAlgorithm::
  // BlockPredictors, MM-PSGD); empty for a method whose output is its one model.
  virtual std::vector<Vec> MeanBlockPredictors() const { return {}; }
  // Node i's model, for per-node metrics (the Bregman gap); null where the run does not expose it.
  virtual const Vec* NodeModel(int i) const {
    (void)i;
    return nullptr;
  }
};

// The simulator that config.algorithm and options.faults call for: FaultyPairwiseSimulator or
// FaultyRoundSimulator when the fault plan injects anything, else PairwiseSimulator or
// RoundSimulator. `setup` (its nodes and their problems) must outlive the run.
std::unique_ptr<SimulatedRun> MakeSimulatedRun(const RunConfig& config, const RunSetup& setup,
                                               const SimOptions& options);

}  // namespace starling::node
