#include "node/probe/infer_probe.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "node/probe/inference_plot.h"
#include "node/probe/inference_report.h"
#include "node/probe/sample_collector.h"
#include "topology/cluster_file.h"
#include "topology/inference.h"

namespace starling::node {

namespace {

int ParseId(const std::string& text, const std::string& spec) {
  size_t used = 0;
  int value = -1;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || value < 0) {
    throw std::invalid_argument("--observe '" + spec + "': '" + text + "' is not a node id");
  }
  return value;
}

// The most samples any of `estimators` needs for `observed` nodes. Throws std::invalid_argument
// if --samples asks for fewer.
int64_t SamplesNeeded(const std::vector<topology::Estimator>& estimators, int observed,
                      int64_t samples) {
  int64_t minimum = 0;
  for (auto e : estimators) {
    const int64_t need = topology::MinimumSamples(e, observed);
    if (samples < need) {
      throw std::invalid_argument("--samples " + std::to_string(samples) + ": the " +
                                  topology::EstimatorName(e) + " estimator needs at least " +
                                  std::to_string(need) + " for " + std::to_string(observed) +
                                  " observed nodes");
    }
    minimum = std::max(minimum, need);
  }
  return minimum;
}

void CheckLimits(const InferProbeOptions& options) {
  if (options.burn_in < 0) throw std::invalid_argument("--burn-in: must be >= 0");
  if (!(options.connect_timeout_seconds > 0) || !(options.timeout_seconds > 0)) {
    throw std::invalid_argument("--connect-timeout-s and --timeout-s must be positive");
  }
  if (!(options.period >= 0 && options.period <= 1e6)) {
    throw std::invalid_argument("--period: must be a positive number of mean ticks");
  }
  if (!(options.drop_fraction >= 0 && options.drop_fraction < 1)) {
    throw std::invalid_argument("--drop-fraction: must be in [0, 1)");
  }
  if (options.clock_offset_batches < 1) {
    throw std::invalid_argument("--clock-offset-batches: must be >= 1");
  }
  if (options.live_stamps != "node" && options.live_stamps != "arrival") {
    throw std::invalid_argument("--live-stamps " + options.live_stamps +
                                ": must be node or arrival");
  }
  if (options.live && options.live_stamps == "arrival" && options.clock_offsets != "zero") {
    throw std::invalid_argument("--clock-offsets " + options.clock_offsets +
                                ": --live-stamps arrival stamps the reports on the probe's "
                                "clock, leave it out");
  }
}

// After the tally: false (and why) if there are fewer than `minimum` samples; a note if fewer
// than asked for.
bool EnoughSamples(const SampleCollector& collector, const InferProbeOptions& options,
                   int64_t minimum, int observed, std::ostream& out) {
  const int64_t pairs = collector.pairs();
  const std::string& stop_reason = collector.stop_reason();
  if (pairs < minimum) {
    out << "infer: only " << pairs << " aligned sample pairs"
        << (stop_reason.empty() ? "" : " (" + stop_reason + ")") << "; the estimator needs at "
        << "least " << minimum << " for " << observed << " observed nodes" << std::endl;
    return false;
  }
  if (pairs < options.samples) {
    out << "infer: " << stop_reason << " before " << options.samples
        << " samples; inferring from the " << pairs << " there are" << std::endl;
  }
  return true;
}

// The final line: the files written and, with a plot script, the PNG or why there is none.
void PrintWritten(const InferProbeOptions& options, std::ostream& out) {
  const std::string& dir = options.out_dir;
  out << "infer: wrote " << dir << "/edges.tsv, " << dir << "/inferred.dot, " << dir
      << "/summary.jsonl";
  if (!options.plot_script.empty()) {
    const std::string note = PlotInference(options.plot_script, dir);
    if (note.empty()) {
      out << ", " << dir << "/inference.png";
    } else {
      out << "\ninfer: " << note;
    }
  }
  out << std::endl;
}

}  // namespace

ClockOffsetChoice ParseClockOffsets(const std::string& spec, const std::vector<int>& observed_ids) {
  ClockOffsetChoice choice;
  if (spec == "zero") return choice;
  if (spec == "estimate") {
    choice.kind = ClockOffsetChoice::kEstimate;
    return choice;
  }
  choice.kind = ClockOffsetChoice::kKnown;
  const auto fail = [&](const std::string& why) {
    throw std::invalid_argument("--clock-offsets '" + spec + "': " + why +
                                " (zero, estimate, or ID:MS,... for known offsets)");
  };
  std::stringstream items(spec);
  std::string item;
  std::set<int> seen;
  while (std::getline(items, item, ',')) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos) fail("'" + item + "' is not ID:MS");
    size_t used = 0;
    int id = -1;
    double ms = 0;
    try {
      id = std::stoi(item.substr(0, colon), &used);
      if (used != colon) id = -1;
      const std::string value = item.substr(colon + 1);
      ms = std::stod(value, &used);
      if (used != value.size()) ms = std::nan("");
    } catch (const std::exception&) {
      fail("'" + item + "' is not ID:MS");
    }
    if (id < 0 || !std::isfinite(ms)) fail("'" + item + "' is not ID:MS");
    if (std::find(observed_ids.begin(), observed_ids.end(), id) == observed_ids.end()) {
      fail("node " + std::to_string(id) + " is not observed (--observe)");
    }
    if (!seen.insert(id).second) fail("node " + std::to_string(id) + " is listed twice");
    choice.known_ms.emplace_back(id, ms);
  }
  if (choice.known_ms.empty()) fail("no offsets");
  return choice;
}

std::vector<int> ParseObservedNodes(const std::string& spec, int num_nodes,
                                    const std::string& cluster_file) {
  std::vector<int> ids;
  std::set<int> seen;
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    const size_t dash = item.find('-', 1);
    const int lo = ParseId(item.substr(0, dash), spec);
    const int hi = dash == std::string::npos ? lo : ParseId(item.substr(dash + 1), spec);
    if (hi < lo) throw std::invalid_argument("--observe '" + spec + "': empty range " + item);
    for (int id = lo; id <= hi; ++id) {
      if (id >= num_nodes) {
        throw std::invalid_argument("--observe: node " + std::to_string(id) + " is not in " +
                                    cluster_file + " (it lists nodes 0.." +
                                    std::to_string(num_nodes - 1) + ")");
      }
      if (!seen.insert(id).second) {
        throw std::invalid_argument("--observe: node " + std::to_string(id) + " is listed twice");
      }
      ids.push_back(id);
    }
  }
  if (ids.size() < 2) {
    throw std::invalid_argument("--observe '" + spec + "': give at least two node ids");
  }
  return ids;
}

int RunInferProbe(const InferProbeOptions& options, const std::atomic<bool>* stop,
                  std::ostream& out) {
  if (options.cluster_file.empty()) throw std::invalid_argument("--cluster: required");
  if (options.observe.empty()) throw std::invalid_argument("--observe: required (node ids)");
  const topology::Cluster cluster = topology::ReadClusterFile(options.cluster_file);
  const int n = static_cast<int>(cluster.nodes.size());
  const std::vector<int> ids = ParseObservedNodes(options.observe, n, options.cluster_file);
  const int s = static_cast<int>(ids.size());
  const std::vector<topology::Estimator> estimators = topology::ParseEstimators(options.estimator);
  const topology::Clustering clustering = topology::ParseClustering(options.clustering);
  const int64_t minimum = SamplesNeeded(estimators, s, options.samples);
  CheckLimits(options);
  std::filesystem::create_directories(options.out_dir);

  SampleCollector collector(cluster, ids, options, out);
  if (!collector.Collect(stop)) return 3;
  collector.PrintTally();
  if (!EnoughSamples(collector, options, minimum, s, out)) return 3;

  // Inference and the comparison with the cluster file's graph.
  const topology::Moments m = collector.FinishMoments();
  InferenceReport report(options, ids, cluster.graph, collector.pairs(), out);
  for (const topology::Estimator e : estimators) report.Add(topology::Infer(e, m, clustering));
  report.Close();
  PrintWritten(options, out);
  return 0;
}

}  // namespace starling::node
