// starling-sim's diffusion front end: the inference options of its command line, and the banner
// and stdout summary around RunInferenceSimulation.
#include <chrono>
#include <iomanip>
#include <iostream>
#include <ostream>
#include <stdexcept>
#include <string>

#include "algorithms/round/diffusion.h"
#include "node/sim/inference_sim.h"

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
