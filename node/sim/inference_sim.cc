#include "node/sim/inference_sim.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <ostream>
#include <stdexcept>

#include "algorithms/round/diffusion.h"
#include "node/report/json_line.h"

namespace starling::node {

namespace po = boost::program_options;

void AddInferenceSimOptions(po::options_description* options, InferenceSimOptions* o) {
  static const std::string estimator_help = std::string("diffusion: topology estimator, one of ") +
                                            topology::EstimatorNames() + ", or all";
  // clang-format off
  options->add_options()
      ("observe", po::value(&o->observe)->default_value(o->observe),
       "diffusion: K, infer the edges among nodes 0..K-1 from their states")
      ("samples", po::value(&o->samples)->default_value(o->samples),
       "diffusion: sample pairs (y_t, y_t+1) to use, after the burn-in; metrics at log-spaced "
       "counts up to it")
      ("estimator", po::value(&o->estimator)->default_value(o->estimator),
       estimator_help.c_str())
      ("clustering", po::value(&o->clustering)->default_value(o->clustering),
       "diffusion: how pair scores are split into edges and non-edges: 2-means (exact, 1-D) or "
       "gmm (a two-Gaussian mixture fitted by EM from the 2-means split)")
      ("burn-in", po::value(&o->burn_in)->default_value(o->burn_in),
       "diffusion: steps discarded before sampling");
  // clang-format on
}

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

std::vector<InferenceRecord> RunInferenceSimulation(const RunConfig& config, const RunSetup& setup,
                                                    const InferenceSimOptions& options,
                                                    std::ostream* progress) {
  const int n = static_cast<int>(setup.nodes.size());
  const int k = options.observe;
  if (k < 2 || k > n) {
    throw std::invalid_argument("--observe " + std::to_string(k) + ": must be in 2.." +
                                std::to_string(n) + " (the number of nodes to watch)");
  }
  if (options.burn_in < 0) throw std::invalid_argument("--burn-in: must be >= 0");
  const std::vector<topology::Estimator> estimators = topology::ParseEstimators(options.estimator);
  const topology::Clustering clustering = topology::ParseClustering(options.clustering);
  int64_t minimum = 0;
  for (auto e : estimators) minimum = std::max(minimum, topology::MinimumSamples(e, k));
  if (options.samples < minimum) {
    throw std::invalid_argument("--samples " + std::to_string(options.samples) + ": too few for " +
                                std::to_string(k) +
                                " observed nodes (the estimators need at "
                                "least " +
                                std::to_string(minimum) + ")");
  }

  std::ofstream metrics;
  if (!config.metrics.empty()) {
    metrics.open(config.metrics, std::ios::trunc);
    if (!metrics) throw std::runtime_error(config.metrics + ": cannot open metrics file");
  }

  algorithms::DiffusionParams params = algorithms::DiffusionParamTable().Read(config.params);
  params.max_degree = setup.graph.MaxDegree();
  algorithms::DiffusionNetwork network(setup.nodes, params);

  std::vector<bool> truth;
  int64_t true_edges = 0;
  for (const auto& [i, j] : topology::ObservedPairs(k)) {
    truth.push_back(setup.graph.HasEdge(i, j));
    true_edges += truth.back();
  }

  const auto start = std::chrono::steady_clock::now();
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
    for (auto e : estimators) {
      if (checkpoint < topology::MinimumSamples(e, k)) continue;
      const topology::InferenceResult result = topology::Infer(e, m, clustering);
      InferenceRecord r;
      r.samples = checkpoint;
      r.estimator = e;
      r.classification = topology::Compare(result.split.upper, truth);
      r.gap = topology::IdentifiabilityGap(result.scores, truth);
      r.true_edges = true_edges;
      r.inferred_edges = std::count(result.split.upper.begin(), result.split.upper.end(), true);
      records.push_back(r);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (metrics.is_open()) {
        JsonLine line;
        line.Add("samples", r.samples)
            .Add("estimator", std::string(topology::EstimatorName(e)))
            .Add("clustering", options.clustering)
            .Add("accuracy", r.classification.accuracy)
            .Add("gap", r.gap)
            .Add("sensitivity", r.classification.sensitivity)
            .Add("specificity", r.classification.specificity)
            .Add("true_edges", r.true_edges)
            .Add("inferred_edges", r.inferred_edges)
            .Add("nodes", n)
            .Add("observed", k)
            .Add("time", seconds);
        metrics << line.str() << '\n';
      }
      if (progress) {
        *progress << "samples " << r.samples << "  " << topology::EstimatorName(e) << "  accuracy "
                  << std::setprecision(4) << r.classification.accuracy << "  gap "
                  << std::setprecision(3) << r.gap << std::endl;
      }
    }
  }
  if (metrics.is_open()) {
    metrics.flush();
    if (!metrics) throw std::runtime_error(config.metrics + ": write failed");
  }
  return records;
}

int RunInferenceSimMain(const RunConfig& config, const RunSetup& setup,
                        const InferenceSimOptions& options, std::ostream* progress) {
  const auto start = std::chrono::steady_clock::now();
  if (options.observe < 2 || options.observe > config.nodes) {
    throw std::invalid_argument("--observe " + std::to_string(options.observe) +
                                ": must be in 2.." + std::to_string(config.nodes) +
                                " (the number of nodes to watch)");
  }
  const algorithms::DiffusionParams params = algorithms::DiffusionParamTable().Read(config.params);
  std::cerr << "starling-sim: diffusion (rho " << params.rho << ", c " << params.c << ") on "
            << config.nodes << " nodes, topology " << config.topology << " ("
            << setup.graph.num_edges() << " edges, d_max " << setup.graph.MaxDegree()
            << "), observing nodes 0.." << options.observe - 1 << std::endl;
  const std::vector<InferenceRecord> records =
      RunInferenceSimulation(config, setup, options, progress);
  const int64_t last = records.empty() ? 0 : records.back().samples;
  std::cout << "samples " << last << "\n";
  for (const InferenceRecord& r : records) {
    if (r.samples != last) continue;
    const char* name = topology::EstimatorName(r.estimator);
    std::cout << std::setprecision(6) << name << "_accuracy " << r.classification.accuracy << "\n"
              << name << "_sensitivity " << r.classification.sensitivity << "\n"
              << name << "_specificity " << r.classification.specificity << "\n"
              << name << "_gap " << r.gap << "\n"
              << name << "_edges " << r.inferred_edges << " inferred, " << r.true_edges
              << " true\n";
  }
  std::cout << "seconds " << std::fixed << std::setprecision(2)
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
            << std::endl;
  return 0;
}

}  // namespace starling::node
