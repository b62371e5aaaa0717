// starling-probe infer: watches the samples that some nodes of a running diffusion publish, either
// stepped (t, y_t) from the synchronous diffusion (node/drivers/sample_telemetry.h), aligned by
// step, or time-stamped (seq, time, y) from the pairwise diffusion
// (node/drivers/timed_sample_telemetry.h), aligned on a grid of period --period mean ticks
// (topology/time_aligner.h), with the nodes' clock offsets taken as 0, given, or estimated from
// the batches' arrivals (--clock-offsets; topology/clock_offsets.h); the kind is read from the
// first batch, and a node that publishes the other kind is an error (exit 2). It infers the edges
// among the observed nodes (topology/inference.h) and compares them with the
// cluster file's graph.
//
// Writes to the output folder: edges.tsv (every observed pair with its score, the inferred and
// the true label, per estimator), inferred.dot (the first estimator's graph, coloured by
// correctness), summary.jsonl (one line per estimator) and, with Debian's python3-matplotlib,
// inference.png (true and inferred edges side by side) drawn by examples/plot_inference.py.
//
// Every wait has a deadline: an observed node whose telemetry does not arrive within
// connect_timeout_seconds is named with its endpoint (exit 3); a run that ends, or a timeout that
// passes, with fewer aligned samples than an estimator needs is an error (exit 3); with fewer
// than asked for but enough, the probe infers from what it has and says so.
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace starling::node {

struct InferProbeOptions {
  std::string cluster_file;
  std::string observe;                 // node ids: "0,3,5", ranges "0-7", or a mix
  int64_t samples = 20000;             // aligned sample pairs to collect
  std::string estimator = "granger";   // one name, or "all"
  std::string clustering = "2-means";  // or "gmm" (topology::Clustering)
  std::string out_dir = "infer-out";
  // Stepped samples: steps below this are ignored (a probe attached at the start). Time-stamped
  // samples: the grid starts this many mean ticks after the first sample heard.
  int64_t burn_in = 200;
  // Time-stamped samples (pairwise-diffusion): the alignment period in mean ticks of the nodes
  // (topology/time_aligner.h); 0 = not given (kDefaultPeriod). Refused for stepped samples.
  double period = 0.0;
  // Time-stamped samples: the nodes' clock offsets (topology/clock_offsets.h). "zero": the stamps
  // are read as one clock (one host, NTP); "estimate": estimated from when each node's batches
  // arrive, after clock_offset_batches batches of every node; or known offsets, "ID:MS,...":
  // node ID's clock reads the reference time plus MS milliseconds (unlisted nodes: 0). Whatever
  // is chosen, the probe prints the estimate at the end.
  std::string clock_offsets = "zero";
  int64_t clock_offset_batches = 50;
  // --live: infer from the models a running optimization already publishes in its telemetry
  // (starlingd --telemetry-ms small): each node's sample is the projection of its model on one
  // seeded Gaussian direction (the same for every node), time-stamped as live_stamps says;
  // --period and --burn-in are then in milliseconds. Sample batches are refused.
  bool live = false;
  // --live: "node": each report's own stamp (kStampField, the node's clock when it read the
  // model), the nodes' clocks related as clock_offsets says; "arrival": the probe's clock when
  // the report is taken (clock_offsets must be "zero"), which adds the delivery's jitter.
  std::string live_stamps = "node";
  uint64_t projection_seed = 1;
  double connect_timeout_seconds = 10;
  double timeout_seconds = 600;
  std::string plot_script;       // empty = no PNG
  std::string secret_key_file;   // the probe's CURVE key (its public half on a 'probe' line)
  bool allow_plaintext = false;  // watch nodes that run without CURVE
  // Test hook: discard this fraction of sample batches on arrival (seeded), as a subscriber too
  // slow to keep up would lose them.
  double drop_fraction = 0.0;
};

inline constexpr double kDefaultPeriod = 0.5;

// --clock-offsets parsed: zero, estimate, or known offsets in ms per cluster node id.
struct ClockOffsetChoice {
  enum Kind { kZero, kEstimate, kKnown } kind = kZero;
  std::vector<std::pair<int, double>> known_ms;  // (node id, ms)
};
// Throws std::invalid_argument naming --clock-offsets for a malformed item, a node id that is
// not in `observed_ids` or is listed twice, or a non-finite offset.
ClockOffsetChoice ParseClockOffsets(const std::string& spec, const std::vector<int>& observed_ids);

// "0,2,5-7" -> {0, 2, 5, 6, 7}, each id in 0..num_nodes-1 and listed once. Throws
// std::invalid_argument naming --observe and the cluster file for an unknown id, a repeat, a
// malformed item, or fewer than two nodes.
std::vector<int> ParseObservedNodes(const std::string& spec, int num_nodes,
                                    const std::string& cluster_file);

// Returns the exit code (0 done, 3 deadline or too few samples). Throws std::invalid_argument /
// std::runtime_error for bad options and files (exit 2 in main).
int RunInferProbe(const InferProbeOptions& options, const std::atomic<bool>* stop,
                  std::ostream& out);

}  // namespace starling::node
