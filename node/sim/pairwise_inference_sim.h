// starling-sim --algorithm pairwise-diffusion: the pairwise diffusion of topology inference
// (algorithms/pairwise/pairwise_diffusion.h) for N nodes in one process, in
// continuous simulated time, and the inference of the edges among the first K nodes from their
// asynchronous samples (docs/results/topology-inference.md).
//
// The model of a network that the simulation stands for:
// - Node i ticks on its own Poisson clock of rate 1 (exponential gaps, mean one time unit, from
//   a generator seeded with the node's seed). At a tick, the exchange the node wants (its coin
//   at the previous tick) happens first, at once, with a uniformly random neighbour (no round
//   trip: a daemon's exchanges take one); then the algorithm's LocalStep (decay, noise, the coin
//   for the next exchange): A6's y <- rho W(t) y + x.
// - Node i's clock reads t + offset_i, offset_i uniform in [-clock_offset/2, clock_offset/2]
//   (from --seed). After each event that changes its state (its tick, with the exchange it may
//   start, or an exchange it serves), an observed node publishes a sample (seq, clock, y_i).
// - With exchange_latency L > 0 an exchange is a round trip instead (each way exponential of mean
//   L/2, from --seed): the partner merges and publishes when the offer arrives, the initiator
//   when the reply does, and only then makes its tick's local step; a tick that falls due while
//   the previous one waits comes right after it, and the next is due one gap after the due time
//   (as a daemon's, node/daemon/pairwise_diffusion_node.h). A node serves offers while its own is
//   in flight (the merges are additive from snapshots). L = 0: the events above, exactly.
// - Delivery: each sample is lost with probability sample_loss and otherwise delivered after an
//   exponential delay of mean delay (0: at once), so samples arrive out of order; with
//   delay_floor F > 0, node i's samples each take floor_i more, floor_i uniform in [0, F] (from
//   --seed): the node's smallest one-way delay, which differs between hosts. A sample is one
//   batch (the daemons' batches are several samples; for the offsets only a batch's last stamp
//   counts).
// - The probe side aligns them with topology::TimeAligner at the common period `period`,
//   starting at time burn_in, with the nodes' offsets unknown (0) unless correct_offsets (the
//   true ones) or estimate_offsets (topology/clock_offsets.h: each node's lead over the probe's
//   clock, the simulated time, from its first offset_batches samples; the samples wait until
//   every observed node has delivered that many, then are aligned).
// Deterministic for --seed.
//
// --infer-live: the same network model and probe, but the
// nodes run the pairwise method of --algorithm (SwarmSGD, ...) with its problem and options
// (node/config/run_setup.h PairwiseOptionsFor), one local step per tick, and a node's sample is
// the projection of its model on one direction of i.i.d. standard normal coordinates drawn from
// --projection-seed (topology::ProjectionDirection, as `starling-probe infer --live`). The probe
// samples every change of a model, with no delivery jitter, so this is the live probe's best case.
// With a round-based --algorithm (dpsgd, dgd, ...), the nodes run it in lockstep instead
// (node/sim/round_simulator.h, the algorithm's own code and options): round r ends at time r for
// every node together, each observed node publishes its projected model then (stamped r + its
// offset), and the same probe aligns those samples at --period rounds (--burn-in in rounds): a
// round plays the part of a mean tick. Another kind of --algorithm is refused.
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <iosfwd>
#include <vector>

#include "node/config/run_config.h"
#include "node/config/run_setup.h"
#include "node/sim/inference_sim.h"

namespace starling::node {

struct PairwiseInferenceOptions {
  double period = 1.0;        // alignment period, in mean tick intervals
  double clock_offset = 0.0;  // spread of the nodes' clock offsets
  bool correct_offsets = false;
  bool estimate_offsets = false;  // from the arrivals (topology/clock_offsets.h)
  int64_t offset_batches = 50;    // estimate_offsets: samples per node before they are fixed
  double delay_floor = 0.0;       // spread of the nodes' smallest delivery delays
  double sample_loss = 0.0;       // in [0, 1)
  double delay = 0.0;             // mean delivery delay
  int64_t reorder_window = 256;
  double exchange_latency = 0.0;  // mean round trip of an exchange, in mean tick intervals
  bool live = false;              // --infer-live: --algorithm's models, projected
  uint64_t projection_seed = 1;   // --projection-seed
};

// Adds --period, --clock-offset, --correct-offsets, --estimate-offsets, --offset-batches,
// --sample-loss, --delay, --delay-floor, --reorder-window, --exchange-latency, --infer-live,
// --projection-seed.
void AddPairwiseInferenceOptions(boost::program_options::options_description* options,
                                 PairwiseInferenceOptions* o);

struct PairwiseInferenceTally {
  double simulated_time = 0.0;
  int64_t exchanges = 0, ticks = 0;  // ticks: rounds in a round-based --infer-live run
  int64_t rows = 0, dropped_rows = 0, lost_samples = 0, late_samples = 0;
  // Observed nodes' clock offsets relative to node 0's: the true ones, and the estimated ones
  // (estimate_offsets, once fixed; empty otherwise), in mean tick intervals.
  std::vector<double> true_offsets, estimated_offsets;
};

// Runs until `inference.samples` aligned pairs (metrics at the log-spaced counts of
// LogCheckpoints), one record per (checkpoint, estimator), written as JSON lines to
// config.metrics if set. Throws std::invalid_argument naming the option for bad values.
std::vector<InferenceRecord> RunPairwiseInferenceSimulation(
    const RunConfig& config, const RunSetup& setup, const InferenceSimOptions& inference,
    const PairwiseInferenceOptions& options, std::ostream* progress,
    PairwiseInferenceTally* tally = nullptr);

// starling-sim's pairwise-diffusion (and --infer-live) branch: the banner, the run, the last
// checkpoint's numbers on stdout. Returns the exit code (0).
int RunPairwiseInferenceSimMain(const RunConfig& config, const RunSetup& setup,
                                const InferenceSimOptions& inference,
                                const PairwiseInferenceOptions& options, std::ostream* progress);

}  // namespace starling::node
