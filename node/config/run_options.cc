#include "node/config/run_options.h"

#include <fstream>
#include <stdexcept>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/data/partition.h"
#include "algorithms/problems/problem_factory.h"
#include "algorithms/round/round_algorithm.h"
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
      ("top-k", po::value(&c->top_k)->default_value(c->top_k),
       "CHOCO-SGD: send the k largest entries of x - x_hat (0 = all; error feedback through the "
       "public copy x_hat)")
      ("choco-gamma", po::value(&c->choco_gamma)->default_value(c->choco_gamma),
       "CHOCO-SGD: consensus step gamma in (0, 1]")
      ("compression", po::value(&c->compression)->default_value(c->compression),
       "SwarmSGD exchanges: none; lattice:BITS[:SCALE] (dithered lattice codes of BITS bits, "
       "step SCALE, default 1e-4; a failed decoding is detected and retried at full precision; "
       "the wire carries BITS bits per coordinate); or topk:K[:GAMMA] (the K largest entries of "
       "the model's difference from a public copy kept per edge, the rest sent later: error "
       "feedback; consensus step GAMMA, default min(0.5, K/d))")
      ("optra-nu", po::value(&c->optra_nu)->default_value(c->optra_nu),
       "OPTRA: nu (its steps derive from nu, L and the horizon --iterations)")
      ("optra-inner", po::value(&c->optra_inner)->default_value(c->optra_inner),
       "OPTRA: 2K, Chebyshev gossip exchanges per iteration (even)")
      ("iterations", po::value(&c->iterations)->default_value(c->iterations),
       "outer iterations (round-based), or local steps per node (pairwise)")
      ("horizon", po::value(&c->horizon)->default_value(c->horizon),
       "OPTRA: the horizon T its steps derive from (0 = --iterations); run a prefix of a "
       "T-iteration run with --iterations < T")
      ("apmc-beta0", po::value(&c->apmc_beta0)->default_value(c->apmc_beta0),
       "APM-C: the penalty constant beta0")
      ("apmc-inner-const", po::value(&c->apmc_inner_const)->default_value(c->apmc_inner_const),
       "APM-C: c in T_k = ceil(c log(k) / sqrt(1 - lambda2(W'))) gossip rounds at iteration k")
      ("dane-mu", po::value(&c->dane_mu)->default_value(c->dane_mu),
       "Network-DANE/SVRG/SARAH: the proximal weight mu of the local problem")
      ("mix-rounds", po::value(&c->mix_rounds)->default_value(c->mix_rounds),
       "Network-DANE/SVRG/SARAH: n_mix, exchanges of (x, s) per iteration (mixing with W^n_mix)")
      ("inner-steps", po::value(&c->inner_steps)->default_value(c->inner_steps),
       "Network-SVRG/SARAH: K_in inner steps per iteration (0 = 5% of the node's samples); "
       "Network-DANE: Nesterov iterations of the local solve where it has no exact solve "
       "(0 = 100)")
      ("rho", po::value(&c->rho)->default_value(c->rho),
       "diffusion: rho in (0, 1), the spectral radius of A = rho (I - (c/d_max)(D - Adj))")
      ("c", po::value(&c->diffusion_c)->default_value(c->diffusion_c),
       "diffusion: c in (0, 1) of the Laplacian combination rule")
      ("problem", po::value(&c->problem)->default_value(c->problem), problem_help.c_str())
      ("l2", po::value(&c->l2)->default_value(c->l2), "L2 regularisation lambda")
      ("hidden", po::value(&c->hidden)->default_value(c->hidden),
       "--problem mlp: hidden units (784-64-10 on Fashion-MNIST by default)")
      ("data", po::value(&c->data), "training data file (for IDX: the images file)")
      ("format", po::value(&c->format)->default_value(c->format),
       "data format: libsvm, idx, csv or auto")
      ("label-column", po::value(&c->label_column)->default_value(c->label_column),
       "CSV: 0-based column of the label (counted in the file, node column included)")
      ("features", po::value(&c->features)->default_value(c->features),
       "declared number of features for LIBSVM data (0 = largest index seen)")
      ("test-data", po::value(&c->test_data), "optional test set in the same format, for accuracy")
      ("partition", po::value(&c->partition)->default_value(c->partition),
       partition_help.c_str())
      ("x0", po::value(&c->x0)->default_value(c->x0),
       "starting point: zeros, uniform (U[0,1], a different seeded draw per node), small "
       "(U[-0.05,0.05], the same seeded draw on every node: for the MLP), or a file of "
       "numbers (one row shared by all nodes, or N rows: row i is node i's)")
      ("loss-scale", po::value(&c->loss_scale)->default_value(c->loss_scale),
       "s in f_i(x) = s sum_{rows of node i} loss + (l2/2)||x||^2; 0 = N/M, so that the mean of "
       "the f_i is the centralized mean loss (least squares: loss = (a.x - b)^2 / 2)")
      ("x-star", po::value(&c->x_star),
       "file with a minimiser x* (one row or column of numbers): metrics get the Bregman gap "
       "|sum_i f_i(x_i) - f_i(x*) - <grad f_i(x*), x_i - x*>| (ALGORITHMS.md §1.6)")
      ("nodes", po::value(&c->nodes)->default_value(c->nodes), "number of nodes N")
      ("topology", po::value(&c->topology)->default_value(c->topology), topology_help.c_str())
      ("mixing", po::value(&c->mixing_file),
       "file with an explicit N x N mixing matrix W (symmetric, rows sum to 1); its non-zero "
       "pattern is the graph, replacing --topology and the Metropolis-Hastings weights")
      ("laplacian", po::value(&c->laplacian_file),
       "file with an explicit N x N Laplacian Lap = I - W, used as --mixing I - Lap")
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
  // The diffusion of topology inference has no data.
  if (c.data.empty() && c.algorithm != "diffusion") {
    fail("--data: required (a LIBSVM, IDX or CSV file)");
  }
  if (!(c.rho > 0 && c.rho < 1)) fail("--rho: must be in (0, 1)");
  if (!(c.diffusion_c > 0 && c.diffusion_c < 1)) fail("--c: must be in (0, 1)");
  if (c.nodes < 1) fail("--nodes " + std::to_string(c.nodes) + ": must be at least 1");
  if (c.iterations < 0) fail("--iterations: must be >= 0");
  if (c.step < 0) fail("--step: must be >= 0");
  if (c.l2 < 0) fail("--l2: must be >= 0");
  if (c.batch < 0) fail("--batch: must be >= 0");
  if (c.local_steps < 1) fail("--local-steps: must be >= 1");
  if (c.top_k < 0) fail("--top-k: must be >= 0");
  if (!(c.choco_gamma > 0) || c.choco_gamma > 1) fail("--choco-gamma: must be in (0, 1]");
  if (c.compression != "none") {
    if (c.algorithm != "swarmsgd") fail("--compression: only for --algorithm swarmsgd");
    algorithms::CheckCompressionSpec(c.compression);  // throws naming the option
  }
  if (!algorithms::IsRoundAlgorithm(c.algorithm) && !algorithms::IsPairwiseAlgorithm(c.algorithm)) {
    fail("--algorithm '" + c.algorithm + "': unknown (round-based: " +
         algorithms::RoundAlgorithmNames() + "; pairwise: " + algorithms::PairwiseAlgorithmNames() +
         ")");
  }
  if (c.log_every < 0) fail("--log-every: must be >= 0");
  if (c.x0.empty()) fail("--x0: expected zeros, uniform or a file");
  if (c.horizon < 0) fail("--horizon: must be >= 0");
  if (c.hidden < 1) fail("--hidden: must be >= 1");
  if (c.horizon > 0 && c.horizon < c.iterations) {
    fail("--horizon " + std::to_string(c.horizon) + " is shorter than --iterations " +
         std::to_string(c.iterations));
  }
  if (c.loss_scale < 0) fail("--loss-scale: must be >= 0");
  if (c.dane_mu < 0) fail("--dane-mu: must be >= 0");
  if (c.mix_rounds < 1) fail("--mix-rounds: must be >= 1");
  if (c.inner_steps < 0) fail("--inner-steps: must be >= 0");
  if (!(c.apmc_beta0 > 0)) fail("--apmc-beta0: must be > 0");
  if (!(c.apmc_inner_const > 0)) fail("--apmc-inner-const: must be > 0");
  if (c.label_column < 0) fail("--label-column: must be >= 0");
  if (!c.mixing_file.empty() && !c.laplacian_file.empty()) {
    fail("--mixing and --laplacian: give one of them, not both");
  }
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
