#include "node/sim/inference_sim.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <ostream>
#include <stdexcept>

#include "algorithms/round/diffusion.h"
#include "node/report/json_line.h"
#include "node/report/metrics_file.h"
#include "topology/graph.h"

namespace starling::node {

std::vector<int64_t> LogCheckpoints(int64_t samples) {
  std::vector<int64_t> points;
  for (int64_t decade = 100; decade < samples; decade *= 10) {
    for (int64_t m : {1, 2, 5}) {
      if (m * decade < samples) points.push_back(m * decade);
    }
  }
  points.push_back(samples);
  return points;
}

namespace {

using Clock = std::chrono::steady_clock;

// The estimators and clustering of --estimator and --clustering, checked against the run.
struct InferencePlan {
  int n = 0, k = 0;  // nodes, observed nodes
  std::vector<topology::Estimator> estimators;
  topology::Clustering clustering = topology::Clustering::kTwoMeans;
};

// Throws std::invalid_argument naming the option for a bad --observe, --burn-in, --estimator,
// --clustering or --samples (checked in this order).
InferencePlan PlanFor(const RunSetup& setup, const InferenceSimOptions& options) {
  InferencePlan plan;
  plan.n = static_cast<int>(setup.nodes.size());
  plan.k = options.observe;
  const int n = plan.n, k = plan.k;
  if (k < 2 || k > n) {
    throw std::invalid_argument("--observe " + std::to_string(k) + ": must be in 2.." +
                                std::to_string(n) + " (the number of nodes to watch)");
  }
  if (options.burn_in < 0) throw std::invalid_argument("--burn-in: must be >= 0");
  plan.estimators = topology::ParseEstimators(options.estimator);
  plan.clustering = topology::ParseClustering(options.clustering);
  int64_t minimum = 0;
  for (auto e : plan.estimators) minimum = std::max(minimum, topology::MinimumSamples(e, k));
  if (options.samples < minimum) {
    throw std::invalid_argument("--samples " + std::to_string(options.samples) + ": too few for " +
                                std::to_string(k) +
                                " observed nodes (the estimators need at "
                                "least " +
                                std::to_string(minimum) + ")");
  }
  return plan;
}

algorithms::DiffusionParams DiffusionParamsFor(const RunConfig& config, const RunSetup& setup) {
  algorithms::DiffusionParams params = algorithms::DiffusionParamTable().Read(config.params);
  params.max_degree = setup.graph.MaxDegree();
  return params;
}

// Whether each observed pair (topology::ObservedPairs order) is an edge of the graph.
struct ObservedTruth {
  std::vector<bool> edges;
  int64_t count = 0;
};

ObservedTruth TruthAmong(const topology::Graph& graph, int k) {
  ObservedTruth truth;
  for (const auto& [i, j] : topology::ObservedPairs(k)) {
    truth.edges.push_back(graph.HasEdge(i, j));
    truth.count += truth.edges.back();
  }
  return truth;
}

InferenceRecord Evaluate(int64_t samples, topology::Estimator e, const topology::Moments& m,
                         topology::Clustering clustering, const ObservedTruth& truth) {
  const topology::InferenceResult result = topology::Infer(e, m, clustering);
  InferenceRecord r;
  r.samples = samples;
  r.estimator = e;
  r.classification = topology::Compare(result.split.upper, truth.edges);
  r.gap = topology::IdentifiabilityGap(result.scores, truth.edges);
  r.true_edges = truth.count;
  r.inferred_edges = std::count(result.split.upper.begin(), result.split.upper.end(), true);
  return r;
}

JsonLine MetricsLine(const InferenceRecord& r, const InferencePlan& plan,
                     const InferenceSimOptions& options, double seconds) {
  JsonLine line;
  line.Add("samples", r.samples)
      .Add("estimator", std::string(topology::EstimatorName(r.estimator)))
      .Add("clustering", options.clustering)
      .Add("accuracy", r.classification.accuracy)
      .Add("gap", r.gap)
      .Add("sensitivity", r.classification.sensitivity)
      .Add("specificity", r.classification.specificity)
      .Add("true_edges", r.true_edges)
      .Add("inferred_edges", r.inferred_edges)
      .Add("nodes", plan.n)
      .Add("observed", plan.k)
      .Add("time", seconds);
  return line;
}

void ReportProgress(const InferenceRecord& r, std::ostream* progress) {
  if (!progress) return;
  *progress << "samples " << r.samples << "  " << topology::EstimatorName(r.estimator)
            << "  accuracy " << std::setprecision(4) << r.classification.accuracy << "  gap "
            << std::setprecision(3) << r.gap << std::endl;
}

}  // namespace

std::vector<InferenceRecord> RunInferenceSimulation(const RunConfig& config, const RunSetup& setup,
                                                    const InferenceSimOptions& options,
                                                    std::ostream* progress) {
  const InferencePlan plan = PlanFor(setup, options);
  const int k = plan.k;
  MetricsFile metrics(config.metrics);
  algorithms::DiffusionNetwork network(setup.nodes, DiffusionParamsFor(config, setup));
  const ObservedTruth truth = TruthAmong(setup.graph, k);

  const auto start = Clock::now();
  while (network.step() < options.burn_in) network.Step();
  topology::MomentAccumulator moments(k);
  moments.Add(network.state().head(k));
  std::vector<InferenceRecord> records;
  for (int64_t checkpoint : LogCheckpoints(options.samples)) {
    while (moments.pairs() < checkpoint) {
      network.Step();
      moments.Add(network.state().head(k));
    }
    const topology::Moments m = moments.Finish();
    for (auto e : plan.estimators) {
      if (checkpoint < topology::MinimumSamples(e, k)) continue;
      records.push_back(Evaluate(checkpoint, e, m, plan.clustering, truth));
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      metrics.Write(MetricsLine(records.back(), plan, options, seconds));
      ReportProgress(records.back(), progress);
    }
  }
  metrics.Finish();
  return records;
}

}  // namespace starling::node
