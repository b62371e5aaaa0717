// starling-sim: runs a decentralized algorithm for N nodes in one process over a simulated
// network. Same algorithm code and options as the daemon; the reference the daemon is tested
// against.
#include <cstdio>
#include <exception>
#include <iomanip>
#include <iostream>
#include <string>

#include "algorithms/round/round_method.h"
#include "node/config/fault_options.h"
#include "node/config/method_params.h"
#include "node/config/run_options.h"
#include "node/config/run_setup.h"
#include "node/sim/inference_sim.h"
#include "node/sim/pairwise_inference_sim.h"
#include "node/sim/sim_runner.h"
#include "topology/spectral.h"

namespace po = boost::program_options;
using starling::node::RunConfig;

namespace {

// What --help prints above the options.
constexpr char kUsage[] =
    "starling-sim: run a decentralized optimization algorithm for N nodes in one process.\n"
    "Example:\n"
    "  starling-sim --algorithm extra --problem logistic --l2 1e-2 --data a9a --format libsvm\n"
    "               --nodes 16 --topology ring --iterations 20000 --reference-optimum auto\n"
    "               --metrics run.jsonl\n"
    "Exit codes: 0 done, 2 bad options or input, 4 the run diverged (try a smaller --step).\n"
    "Options";

// Everything the command line sets. The option descriptions point into it, so it stays put
// while they are parsed.
struct SimCommandLine {
  RunConfig config;
  starling::node::SimOptions sim;
  starling::node::FaultOptions faults;
  starling::node::ChurnOptions churn;
  starling::node::InferenceSimOptions inference;
  starling::node::PairwiseInferenceOptions pairwise_inference;
};

// All of starling-sim's options, in the order --help lists them, bound to *cl.
void AddSimOptions(po::options_description* options, SimCommandLine* cl) {
  starling::node::SimOptions& sim_options = cl->sim;
  options->add_options()("help,h", "print this help and exit")(
      "config", po::value<std::string>(),
      "read further options from this file: one 'name = value' per line, the long option "
      "names without '--' ('algorithm = swarmsgd', 'allow-plaintext = true'), '#' starts a "
      "comment; an option given on the command line wins over the file "
      "(docs/reference/config-file.md)")(
      "stop-at-gap", po::value(&sim_options.stop_at_gap)->default_value(0.0),
      "stop once rel_gap <= this at a metrics point (needs --reference-optimum)")(
      "quiet,q", "no progress lines on stderr")(
      "resend-ms", po::value(&sim_options.resend_ms)->default_value(sim_options.resend_ms),
      "with --fault-*: simulated ms without progress before a node asks again (RESEND)");
  starling::node::AddFaultOptions(options, &cl->faults);
  starling::node::AddChurnOptions(options, &cl->churn);
  starling::node::AddRunOptions(options, &cl->config);
  starling::node::AddInferenceSimOptions(options, &cl->inference);
  starling::node::AddPairwiseInferenceOptions(options, &cl->pairwise_inference);
}

// The lines on stderr that say what runs on what: the data notices (label map, scaling,
// warnings), then one line for the run.
void PrintRunBanner(const RunConfig& config, const starling::node::RunSetup& setup) {
  for (const starling::node::DataNotice& notice : setup.notices) {
    std::cerr << "starling-sim: " << (notice.warning ? "warning: " : "") << notice.text << "\n";
  }
  std::cerr << "starling-sim: " << config.algorithm << " on " << config.problem << " ("
            << setup.num_samples << " samples, d = " << setup.dim << "), " << config.nodes
            << " nodes, topology "
            << (!config.mixing_file.empty()      ? config.mixing_file
                : !config.laplacian_file.empty() ? config.laplacian_file
                                                 : config.topology)
            << " (" << setup.graph.num_edges() << " edges, mixing rate " << std::setprecision(4)
            << starling::topology::MixingRate(setup.mixing) << ")";
  if (setup.smoothness > 0) std::cerr << ", L = " << setup.smoothness;
  // The step the method runs with, default or not, and what is known to be out of range.
  if (starling::algorithms::IsRoundAlgorithm(config.algorithm)) {
    const starling::algorithms::RoundOptions options =
        starling::node::RoundOptionsFor(config, setup);
    const starling::algorithms::RoundMethod* method =
        starling::algorithms::FindRoundMethod(config.algorithm);
    if (method->default_step_factor > 0 && config.algorithm != "network-dane" &&
        (config.step > 0 || setup.smoothness > 0)) {
      std::cerr << ", step = " << starling::algorithms::ResolveStep(options);
      if (config.step <= 0) std::cerr << " (default " << method->default_step_factor << "/L)";
    }
    std::cerr << std::endl;
    for (const std::string& warning : starling::algorithms::RoundWarnings(options)) {
      std::cerr << "starling-sim: warning: " << warning << std::endl;
    }
    return;
  }
  std::cerr << std::endl;
}

// The summary on stdout, one "name value" line each (bench/ and tests parse them).
void PrintSummary(const starling::node::SimSummary& s) {
  std::cout << std::setprecision(12) << "iterations " << s.iterations << "\nobjective "
            << s.objective << "\nconsensus " << std::setprecision(4) << s.consensus;
  if (s.f_star) std::cout << "\nf_star " << std::setprecision(15) << *s.f_star;
  if (s.rel_gap) std::cout << "\nrel_gap " << std::setprecision(4) << *s.rel_gap;
  if (s.f_star) {
    std::cout << "\niterations_to_rel_gap_1e-6 "
              << (s.iterations_to_1e6 ? std::to_string(*s.iterations_to_1e6) : "not reached")
              << "\niterations_to_rel_gap_1e-8 "
              << (s.iterations_to_1e8 ? std::to_string(*s.iterations_to_1e8) : "not reached");
  }
  if (s.test_accuracy) std::cout << "\ntest_accuracy " << std::setprecision(4) << *s.test_accuracy;
  for (size_t b = 0; b < s.block_test_accuracy.size(); ++b) {
    if (!s.block_test_accuracy[b]) continue;
    std::cout << "\nblock_test_accuracy " << b << " " << std::setprecision(4)
              << *s.block_test_accuracy[b];
  }
  if (!s.block_test_accuracy.empty()) {
    std::cout << "\nblock_test_model " << (s.block_predictors ? "per-block predictors" : "final");
  }
  if (s.bregman) std::cout << "\nbregman " << std::setprecision(9) << *s.bregman;
  if (!s.fault_report.empty()) std::cout << "\n" << s.fault_report;
  std::cout << "\ncomm_rounds " << s.comm_rounds << "\nbytes " << s.bytes << "\nseconds "
            << std::fixed << std::setprecision(2) << s.seconds << std::endl;
}

int Run(int argc, char** argv) {
  SimCommandLine cl;
  po::options_description options(kUsage);
  AddSimOptions(&options, &cl);
  const po::variables_map vm = starling::node::ParseCommandLine(argc, argv, options);
  if (vm.count("help")) {
    std::cout << options << std::endl;
    return 0;
  }
  starling::node::ValidateRunConfig(cl.config);
  for (const std::string& warning :
       starling::node::IgnoredMethodParams(cl.config.algorithm, cl.config.params)) {
    std::cerr << "starling-sim: warning: " << warning << "\n";
  }
  if (!vm.count("quiet")) cl.sim.progress = &std::cerr;
  // Simulated time is in ms: a message hop takes 1 ms, a pairwise activation 1 ms.
  const starling::net::FaultPlan fault_plan = starling::node::BuildFaultPlan(cl.faults);
  cl.sim.faults = &fault_plan;
  cl.sim.churn = &cl.churn;

  const starling::node::RunSetup setup = starling::node::BuildRunSetup(cl.config);
  if (cl.churn.any() &&
      (cl.config.algorithm == "diffusion" || cl.config.algorithm == "pairwise-diffusion" ||
       cl.pairwise_inference.live)) {
    throw std::invalid_argument(
        "--churn-*: the topology-inference runs keep their members; "
        "churn runs swarmsgd");
  }
  if (cl.config.algorithm == "diffusion" && !cl.pairwise_inference.live) {
    return starling::node::RunInferenceSimMain(cl.config, setup, cl.inference, cl.sim.progress);
  }
  if (cl.config.algorithm == "pairwise-diffusion" || cl.pairwise_inference.live) {
    return starling::node::RunPairwiseInferenceSimMain(cl.config, setup, cl.inference,
                                                       cl.pairwise_inference, cl.sim.progress);
  }
  PrintRunBanner(cl.config, setup);
  const starling::node::SimSummary summary =
      starling::node::RunSimulation(cl.config, setup, cl.sim);
  PrintSummary(summary);
  if (summary.iterations > 0 && summary.objective > summary.start_objective) {
    std::cerr << "starling-sim: warning: the final objective " << summary.objective
              << " is above the starting one, " << summary.start_objective
              << ": the run did not converge (try a smaller --step)" << std::endl;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const starling::node::RunDiverged& e) {
    std::fprintf(stderr, "starling-sim: error: %s\n", e.what());
    return 4;  // as starlingd's kExitDiverged
  } catch (const std::exception& e) {
    std::fprintf(stderr, "starling-sim: error: %s\n", e.what());
    return 2;
  }
}
