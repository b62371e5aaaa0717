// The network's figures as the monitor knows them, and their rendering in the Prometheus text
// exposition format, version 0.0.4 (https://prometheus.io/docs/instrumenting/exposition_formats/):
// a "# HELP name text" and a "# TYPE name gauge|counter" line before each family's samples,
// `name{node="K"} value` lines, every line ending in '\n'. Names are starling_*; a family the
// monitor has no value for yet (no evaluation, no f*, no test data) is left out, not written as 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace starling::node {

// One node's latest telemetry.
struct NodeFigures {
  bool seen = false;   // telemetry received; the other fields are meaningful only then
  bool final = false;  // its final model
  double steps = 0, exchanges = 0, bytes_sent = 0, bytes_received = 0, rejected = 0;
};

// The network at the monitor's last evaluation (global figures) and every node's latest
// telemetry (per-node figures).
struct NetworkFigures {
  int64_t evaluations = 0;  // 0: no evaluation yet, the global figures are absent
  double objective = 0, consensus = 0, evaluated_at = 0;  // evaluated_at: s since monitor start
  std::optional<double> f_star, rel_gap, test_accuracy;
  std::vector<NodeFigures> nodes;  // index = node id
  int64_t monitor_rejected = 0;    // telemetry messages the monitor refused
};

// The exposition text for `figures`. Values are written with the fewest significant digits (15
// to 17) that read back as the same double; non-finite ones as NaN, +Inf, -Inf.
std::string RenderPrometheusText(const NetworkFigures& figures);

// The Content-Type of that text.
inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace starling::node
