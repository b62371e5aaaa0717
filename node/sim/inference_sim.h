// starling-sim --algorithm diffusion: runs the noisy linear diffusion for N nodes in one process
// (algorithms::DiffusionNetwork, bit-identical to the daemons), watches the first K nodes, and
// infers the edges among them at log-spaced sample counts (docs/results/topology-inference.md).
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "node/config/run_config.h"
#include "node/config/run_setup.h"
#include "topology/inference.h"

namespace starling::node {

struct InferenceSimOptions {
  int observe = 0;                     // K: nodes 0..K-1 are observed (ER graphs are exchangeable)
  int64_t samples = 100000;            // sample pairs (y_t, y_{t+1}) after the burn-in
  std::string estimator = "granger";   // one name, or "all"
  std::string clustering = "2-means";  // 2-means | gmm (topology::Clustering)
  int64_t burn_in = 200;               // steps discarded first (the diffusion's start-up)
};

// Adds --observe, --samples, --estimator and --burn-in bound to *o.
void AddInferenceSimOptions(boost::program_options::options_description* options,
                            InferenceSimOptions* o);

// 100, 200, 500, 1000, 2000, ... below `samples`, then `samples` itself.
std::vector<int64_t> LogCheckpoints(int64_t samples);

struct InferenceRecord {
  int64_t samples = 0;
  topology::Estimator estimator = topology::Estimator::kGranger;
  topology::Classification classification;
  double gap = 0.0;
  int64_t inferred_edges = 0, true_edges = 0;
};

// Runs the diffusion of `config` over `setup` for burn_in + samples + 1 steps and returns one
// record per (checkpoint, estimator), checkpoints below an estimator's minimum left out. Writes
// them as JSON lines to config.metrics if set. Throws std::invalid_argument naming the option
// for a bad --observe / --samples / --estimator.
std::vector<InferenceRecord> RunInferenceSimulation(const RunConfig& config, const RunSetup& setup,
                                                    const InferenceSimOptions& options,
                                                    std::ostream* progress);

// starling-sim's diffusion branch: runs RunInferenceSimulation and prints the last checkpoint's
// numbers per estimator on stdout. Returns the exit code (0).
int RunInferenceSimMain(const RunConfig& config, const RunSetup& setup,
                        const InferenceSimOptions& options, std::ostream* progress);

}  // namespace starling::node
