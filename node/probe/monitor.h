// starling-probe monitor: subscribes to the telemetry of every node of a run, and reports the
// network's progress at the average model: global objective, test accuracy, consensus distance
// and relative gap to the centralized optimum (docs/how-to/monitoring.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <string>

#include "node/config/run_config.h"

namespace starling::node {

struct MonitorOptions {
  RunConfig run;               // the run's options, as the daemons got them
  std::string cluster_file;
  int64_t interval_ms = 1000;  // progress period
  int64_t timeout_seconds = 900;
  double reference_tolerance = 1e-10;  // gradient norm for --reference-optimum auto
  std::string secret_key_file;  // the probe's CURVE secret key ('probe KEY' in the cluster file)
  bool allow_plaintext = false;  // without a key: plaintext only if asked for
  // --prometheus-port: serve GET /metrics on prometheus_bind:port (node/probe/prometheus_*).
  int prometheus_port = 0;  // 0: no exporter
  std::string prometheus_bind = "127.0.0.1";
  // The progress line (monitor_progress.h) is redrawn in place (a terminal), or printed as a
  // plain line every interval_ms beside the evaluation lines (a pipe, a file).
  bool redraw = false;
};

// A pairwise run in which some node did fewer than 90% of its local steps (the summary says
// which in an "incomplete: node K did S of T local steps" line).
inline constexpr int kMonitorExitIncomplete = 5;

// Runs until every node's final telemetry arrived (exit 0, or kMonitorExitIncomplete), the
// timeout passed (exit 3) or *stop (exit 0 after a last report). Progress lines and the summary go to `out`. Throws for start-up
// errors (bad cluster file, data, endpoints).
int RunMonitor(const MonitorOptions& options, const std::atomic<bool>* stop, std::ostream& out);

}  // namespace starling::node
