// starling-probe evaluate RUN_DIR: the dense curves of a run from its nodes' model snapshots
// (starlingd --snapshots RUN_DIR/snapshots-K.bin, node/report/snapshot_file.h). At each step
// every node has a snapshot of, the average model x-bar is evaluated with the run's own
// problems: the global objective F(x-bar), the relative gap (F - f*)/f* when f* is known, the
// test accuracy with test data, the consensus distance (1/N) sum ||x_i - x-bar||^2, and on some
// points the band of the nodes' own models, min_i and max_i of F(x_i). The nodes' final models
// (their last snapshot, flagged final) give the last point, at the time the last node ended.
//
// Time on the curves is wall time (each node's clock) since the first node started: a point's
// time is the latest of its snapshots' times, when the average model existed. Bytes are the sum
// over nodes of what each had sent at its snapshot.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/problems/problem.h"
#include "node/config/run_config.h"
#include "node/report/snapshot_file.h"

namespace starling::node {

struct CurvePoint {
  int64_t step = 0;  // the snapshot step of every node (the nodes' own steps at the final point)
  bool final = false;
  double time = 0;                              // seconds since the first node started
  double total_steps = 0;                       // summed over nodes
  double comm_rounds = 0;                       // averaged over nodes
  uint64_t bytes_sent = 0, bytes_received = 0;  // summed over nodes
  double objective = 0, consensus = 0;
  std::optional<double> rel_gap, test_accuracy;
  std::optional<double> node_objective_min, node_objective_max;  // F(x_i) over nodes
};

struct Curves {
  int nodes = 0;
  int64_t spacing = 0;
  std::vector<CurvePoint> points;  // by step; the final point last
  int64_t skipped_steps = 0;       // steps that some node has no snapshot of (left out)
};

struct EvaluateOptions {
  // Per-node bands on about this many points (evenly spaced, the final one included): each costs
  // N more evaluations of F. 0 = none, -1 = every point.
  int band_points = 10;
  int threads = 0;  // 0 = the machine's cores
};

// The curves of `files` (node K's snapshots at index K; all of dimension global.dim()). `test`
// may be null. Throws std::invalid_argument if the files disagree (dimension, spacing) or some
// file is node K's but sits at another index.
Curves EvaluateSnapshots(const std::vector<SnapshotFile>& files, const algorithms::Problem& global,
                         const algorithms::Problem* test, const std::optional<double>& f_star,
                         const EvaluateOptions& options);

// The curves file (--out, RUN_DIR/curves.jsonl by default): a header line without "iter"
// ({"curves": "snapshots", "nodes", "spacing", "points", "f_star" if known}), then one JSON line
// per point: iter, total_steps, time, bytes (sent), bytes_received, comm_rounds, objective,
// rel_gap, test_accuracy, consensus, node_objective_min/max where computed, final.
void WriteCurves(const Curves& curves, const std::optional<double>& f_star,
                 const std::string& path);

struct EvaluateRunOptions {
  RunConfig run;             // the run's options, as the daemons got them
  std::string run_dir;       // holds snapshots-K.bin for every node K of the cluster
  std::string cluster_file;  // default RUN_DIR/cluster.conf
  std::string out;           // default RUN_DIR/curves.jsonl
  EvaluateOptions evaluate;
};

// Reads the cluster and the snapshots, builds the run's problems (BuildRunSetup: the same data,
// labels and scaling as the daemons), refuses snapshots of another run (their run id), writes
// the curves and prints a summary to `out`. Returns 0; throws for errors, naming the file.
int RunEvaluate(const EvaluateRunOptions& options, std::ostream& out);

}  // namespace starling::node
