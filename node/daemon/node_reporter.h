// Where a node's time goes, and its reports: a TELEMETRY message on the PUB socket (for probes)
// and a line of the metrics file (JSON, docs/reference/metrics.md), every telemetry_ms.
//
// Time is split four ways, so that what is left of the wall clock is the time blocked on
// communication (blocked_s): computing (the algorithm's steps, --compute-delay-ms included),
// start-up (the wait for the first neighbour), reports and checkpoints themselves, and apart
// from those, wait_s, the polls in which a pairwise node could not compute. Single-threaded.
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/problems/problem.h"
#include "algorithms/types.h"
#include "net/transport.h"
#include "node/config/run_config.h"
#include "node/daemon/daemon.h"
#include "node/daemon/daemon_clock.h"
#include "node/daemon/stamp_clock.h"
#include "node/drivers/timed_sample_telemetry.h"

namespace starling::node {

class NodeReporter {
 public:
  // `problem` is this node's objective (null for the diffusion of topology inference, which has
  // none); it, `options` and `config` are not owned and outlive this object. Opens
  // config.metrics if set, before the network is up (so that connections cannot have taken
  // every descriptor by then), and writes `header` (RunHeaderFields) as its first line; throws
  // std::runtime_error naming it if it cannot.
  NodeReporter(const DaemonOptions& options, const RunConfig& config,
               const algorithms::Problem* problem,
               const std::vector<std::pair<std::string, std::string>>& header);
  // The transport whose counters are reported (not owned; outlives this object, or is detached
  // with nullptr first). Set before the first Report.
  void set_transport(net::Transport* transport) { transport_ = transport; }

  // The run's clock starts: `time` and the time accounts count from `start`.
  void Start(Clock::time_point start) { start_ = last_report_ = start; }
  // Reports the model at `iteration` every telemetry_ms, or now if `force`; `final` once the
  // node has finished. The local objective (a full pass over the shard) is refreshed at most
  // every local_objective_seconds, and for a final line whose model changed.
  void Report(int64_t iteration, const Vec& model, int64_t comm_rounds, bool final, bool force);

  void AddComputeSeconds(double s) { compute_seconds_ += s; }
  void AddWaitSeconds(double s) { wait_seconds_ += s; }
  void SetStartupSeconds(double s) { startup_seconds_ = s; }
  // Reports' objective passes and checkpoint writes: neither computation nor waiting.
  void AddReportSeconds(double s) { report_seconds_ += s; }
  void SetDecodeFailures(int64_t n) { decode_failures_ = n; }
  // Checkpoints written, and those that failed (a warning each, not an exit): reported on the
  // metrics lines of nodes with --checkpoint, and on the exit line.
  void CountCheckpoint(bool ok) { ++(ok ? checkpoints_written_ : checkpoint_failures_); }
  int64_t checkpoints_written() const { return checkpoints_written_; }
  int64_t checkpoint_failures() const { return checkpoint_failures_; }
  double compute_seconds() const { return compute_seconds_; }
  double report_seconds() const { return report_seconds_; }

  // The last TELEMETRY published said the node had finished.
  bool published_final() const { return last_.final; }
  // The transport's TelemetrySubscriptions() when the last TELEMETRY was published: a later
  // subscriber has not seen it.
  uint64_t subscriptions_at_last_publish() const { return last_.subscriptions; }
  // Publishes the last TELEMETRY again, the same model and figures (the byte counts current),
  // for a subscriber that arrived after it.
  void RepublishLast();

 private:
  // The local objective of the model at (iteration, comm_rounds), refreshed when due.
  double LocalObjective(Clock::time_point now, int64_t iteration, const Vec& model,
                        int64_t comm_rounds, bool final);
  void PublishTelemetry(int64_t iteration, double elapsed, double local_objective, const Vec& model,
                        int64_t comm_rounds, bool final);
  void WriteMetricsLine(int64_t iteration, double elapsed, double local_objective,
                        int64_t comm_rounds, bool final);

  const DaemonOptions& options_;
  const bool compressed_;  // compressed runs report decode_failures
  const algorithms::Problem* problem_;
  net::Transport* transport_ = nullptr;
  // The telemetry's kStampField (timed_sample_telemetry.h): when the model it carries was read, on
  // the clock probes align nodes by (starling-probe infer --live).
  const StampClock stamps_;
  std::ofstream metrics_;
  Clock::time_point start_, last_report_;
  double compute_seconds_ = 0.0;
  double report_seconds_ = 0.0;  // spent evaluating the local objective for reports
  // Pairwise: time in Poll while the staleness bound held the node (it could not compute until
  // an exchange completed): the strict "blocked on communication" (docs/results/overhead.md).
  double wait_seconds_ = 0.0;
  // Pairwise: time before the first local step spent waiting for the first neighbour to come up
  // (processes started seconds apart). Not communication: reported apart from blocked_s.
  double startup_seconds_ = 0.0;
  double local_objective_ = 0.0;
  // Compressed pairwise runs: exchanges whose lattice decoding or top-k copy check failed (each
  // retried at full precision).
  int64_t decode_failures_ = 0;
  int64_t checkpoints_written_ = 0, checkpoint_failures_ = 0;
  std::optional<Clock::time_point> last_objective_at_;
  // (iteration, comm_rounds) of the model whose objective local_objective_ holds.
  std::pair<int64_t, int64_t> objective_of_{-1, -1};
  // What the last TELEMETRY carried (RepublishLast).
  struct Published {
    int64_t iteration = 0;
    double elapsed = 0.0;
    double local_objective = 0.0;
    Vec model;
    int64_t comm_rounds = 0;
    bool final = false;
    uint64_t subscriptions = 0;
  } last_;
};

}  // namespace starling::node
