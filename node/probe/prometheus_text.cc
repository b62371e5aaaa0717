#include "node/probe/prometheus_text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace starling::node {

namespace {

std::string Value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // The shortest of 15, 16 or 17 significant digits that reads back as the same double.
  char buf[40];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

void Family(std::string* out, const char* name, const char* type, const char* help) {
  *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void Sample(std::string* out, const char* name, double v) {
  *out += std::string(name) + " " + Value(v) + "\n";
}

// A per-node family: one sample per node that the selector admits.
template <typename Get>
void NodeFamily(std::string* out, const NetworkFigures& f, const char* name, const char* type,
                const char* help, bool seen_only, Get get) {
  bool any = false;
  for (const NodeFigures& n : f.nodes) any = any || n.seen || !seen_only;
  if (!any) return;
  Family(out, name, type, help);
  for (size_t id = 0; id < f.nodes.size(); ++id) {
    if (seen_only && !f.nodes[id].seen) continue;
    *out += std::string(name) + "{node=\"" + std::to_string(id) + "\"} " + Value(get(f.nodes[id])) +
            "\n";
  }
}

}  // namespace

std::string RenderPrometheusText(const NetworkFigures& f) {
  std::string out;
  int seen = 0, finished = 0;
  for (const NodeFigures& n : f.nodes) seen += n.seen, finished += n.seen && n.final;

  Family(&out, "starling_nodes", "gauge", "Nodes in the cluster file.");
  Sample(&out, "starling_nodes", static_cast<double>(f.nodes.size()));
  Family(&out, "starling_nodes_seen", "gauge", "Nodes whose telemetry the monitor received.");
  Sample(&out, "starling_nodes_seen", seen);
  Family(&out, "starling_nodes_finished", "gauge", "Nodes that published their final model.");
  Sample(&out, "starling_nodes_finished", finished);
  Family(&out, "starling_monitor_evaluations_total", "counter",
         "Evaluations of the network at the average model.");
  Sample(&out, "starling_monitor_evaluations_total", static_cast<double>(f.evaluations));
  Family(&out, "starling_monitor_rejected_total", "counter",
         "Telemetry messages the monitor refused (malformed, other run, wrong dimension).");
  Sample(&out, "starling_monitor_rejected_total", static_cast<double>(f.monitor_rejected));

  if (f.evaluations > 0) {
    Family(&out, "starling_objective", "gauge",
           "Global objective at the average model, at the last evaluation.");
    Sample(&out, "starling_objective", f.objective);
    if (f.f_star) {
      Family(&out, "starling_reference_objective", "gauge",
             "Centralized optimum f* of the global problem.");
      Sample(&out, "starling_reference_objective", *f.f_star);
    }
    if (f.rel_gap) {
      Family(&out, "starling_relative_gap", "gauge",
             "Relative gap (F - f*) / f* at the average model.");
      Sample(&out, "starling_relative_gap", *f.rel_gap);
    }
    if (f.test_accuracy) {
      Family(&out, "starling_test_accuracy", "gauge", "Test accuracy of the average model.");
      Sample(&out, "starling_test_accuracy", *f.test_accuracy);
    }
    Family(&out, "starling_consensus_distance", "gauge",
           "Consensus distance of the node models at the last evaluation.");
    Sample(&out, "starling_consensus_distance", f.consensus);
    Family(&out, "starling_evaluation_time_seconds", "gauge",
           "When the last evaluation was made, in seconds since the monitor started.");
    Sample(&out, "starling_evaluation_time_seconds", f.evaluated_at);
  }

  NodeFamily(&out, f, "starling_node_seen", "gauge", "1 once the node's telemetry arrived.", false,
             [](const NodeFigures& n) { return n.seen ? 1.0 : 0.0; });
  NodeFamily(&out, f, "starling_node_finished", "gauge",
             "1 once the node published its final model.", true,
             [](const NodeFigures& n) { return n.final ? 1.0 : 0.0; });
  NodeFamily(&out, f, "starling_node_steps_total", "counter",
             "Local steps (SwarmSGD) or iterations (round-based methods) of the node.", true,
             [](const NodeFigures& n) { return n.steps; });
  NodeFamily(&out, f, "starling_node_exchanges_total", "counter",
             "Exchanges (comm rounds) of the node.", true,
             [](const NodeFigures& n) { return n.exchanges; });
  NodeFamily(&out, f, "starling_node_bytes_sent_total", "counter", "Bytes the node sent to peers.",
             true, [](const NodeFigures& n) { return n.bytes_sent; });
  NodeFamily(&out, f, "starling_node_bytes_received_total", "counter",
             "Bytes the node received from peers.", true,
             [](const NodeFigures& n) { return n.bytes_received; });
  NodeFamily(&out, f, "starling_node_rejected_total", "counter",
             "Messages the node refused (malformed, unlisted key, other run, ...).", true,
             [](const NodeFigures& n) { return n.rejected; });
  return out;
}

}  // namespace starling::node
