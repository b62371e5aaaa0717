#include "node/run_options.h"

#include <fstream>
#include <stdexcept>

#include "algorithms/pairwise_algorithm.h"
#include "algorithms/partition.h"
#include "algorithms/problem_factory.h"
#include "algorithms/round_algorithm.h"
#include "topology/generators.h"

namespace starling::node {

namespace po = boost::program_options;

void AddRunOptions(po::options_description* options, RunConfig* c) {
  static const std::string algorithms_help = std::string("algorithm: round-based ") +
                                             algorithms::RoundAlgorithmNames() + "; pairwise " +
                                             algorithms::PairwiseAlgorithmNames();
  static const std::string problem_help =
      std::string("local objective: ") + algorithms::ProblemKinds();
  static const std::string partition_help =
      std::string("how rows are split among nodes: ") + algorithms::PartitionSpecs();
  static const std::string topology_help =
      std::string("communication graph: ") + topology::TopologySpecs();
  options->add_options()
      ("algorithm", po::value(&c->algorithm)->default_value(c->algorithm),
       algorithms_help.c_str())
      ("step", po::value(&c->step)->default_value(c->step),
       "step size; 0 = the algorithm's default divided by the smoothness bound L")
      ("batch", po::value(&c->batch)->default_value(c->batch),
       "mini-batch size for stochastic methods (0 = full local gradients)")
      ("local-steps", po::value(&c->local_steps)->default_value(c->local_steps),
       "H, local steps between the exchanges a node starts (pairwise methods)")
      ("optra-nu", po::value(&c->optra_nu)->default_value(c->optra_nu),
       "OPTRA: nu (its steps derive from nu, L and the horizon --iterations)")
      ("optra-inner", po::value(&c->optra_inner)->default_value(c->optra_inner),
       "OPTRA: 2K, Chebyshev gossip exchanges per iteration (even)")
      ("iterations", po::value(&c->iterations)->default_value(c->iterations),
       "outer iterations (round-based), or local steps per node (pairwise)")
      ("problem", po::value(&c->problem)->default_value(c->problem), problem_help.c_str())
      ("l2", po::value(&c->l2)->default_value(c->l2), "L2 regularisation lambda")
      ("data", po::value(&c->data), "training data file (for IDX: the images file)")
      ("format", po::value(&c->format)->default_value(c->format),
       "data format: libsvm, idx, csv or auto")
      ("features", po::value(&c->features)->default_value(c->features),
       "declared number of features for LIBSVM data (0 = largest index seen)")
      ("test-data", po::value(&c->test_data), "optional test set in the same format, for accuracy")
      ("partition", po::value(&c->partition)->default_value(c->partition),
       partition_help.c_str())
      ("x0", po::value(&c->x0)->default_value(c->x0),
       "starting point: zeros, or uniform (U[0,1], a different seeded draw per node)")
      ("nodes", po::value(&c->nodes)->default_value(c->nodes), "number of nodes N")
      ("topology", po::value(&c->topology)->default_value(c->topology), topology_help.c_str())
      ("seed", po::value(&c->seed)->default_value(c->seed),
       "seed for partitioning, random graphs, starting points and mini-batches")
      ("metrics", po::value(&c->metrics), "write metrics as JSON lines to this file")
      ("reference-optimum", po::value(&c->reference_optimum),
       "f* for the relative gap: a number, or 'auto' to solve the centralized problem first")
      ("log-every", po::value(&c->log_every)->default_value(c->log_every),
       "metrics period in iterations (0 = about 200 lines per run)");
}

void ValidateRunConfig(const RunConfig& c) {
  auto fail = [](const std::string& what) { throw std::invalid_argument(what); };
  if (c.data.empty()) fail("--data: required (a LIBSVM, IDX or CSV file)");
  if (c.nodes < 1) fail("--nodes " + std::to_string(c.nodes) + ": must be at least 1");
  if (c.iterations < 0) fail("--iterations: must be >= 0");
  if (c.step < 0) fail("--step: must be >= 0");
  if (c.l2 < 0) fail("--l2: must be >= 0");
  if (c.batch < 0) fail("--batch: must be >= 0");
  if (c.local_steps < 1) fail("--local-steps: must be >= 1");
  if (!algorithms::IsRoundAlgorithm(c.algorithm) && !algorithms::IsPairwiseAlgorithm(c.algorithm)) {
    fail("--algorithm '" + c.algorithm + "': unknown (round-based: " +
         algorithms::RoundAlgorithmNames() + "; pairwise: " + algorithms::PairwiseAlgorithmNames() +
         ")");
  }
  if (c.log_every < 0) fail("--log-every: must be >= 0");
  if (c.x0 != "zeros" && c.x0 != "uniform") fail("--x0 '" + c.x0 + "': expected zeros or uniform");
}

po::variables_map ParseCommandLine(int argc, const char* const* argv,
                                   const po::options_description& options) {
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, options), vm);
    if (options.find_nothrow("config", false) != nullptr && vm.count("config")) {
      const std::string path = vm["config"].as<std::string>();
      std::ifstream in(path);
      if (!in) throw std::invalid_argument(path + ": cannot open config file");
      po::store(po::parse_config_file(in, options), vm);
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw std::invalid_argument(e.what());
  }
  return vm;
}

}  // namespace starling::node
