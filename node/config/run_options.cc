#include "node/config/run_options.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "algorithms/compression/compression_spec.h"
#include "algorithms/data/block_cyclic.h"
#include "algorithms/data/feature_scaling.h"
#include "algorithms/data/partition.h"
#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/pairwise/pairwise_method.h"
#include "algorithms/problems/problem_factory.h"
#include "algorithms/round/round_algorithm.h"
#include "algorithms/round/round_method.h"
#include "algorithms/schedule/step_schedule.h"
#include "node/config/method_params.h"
#include "node/config/slow_nodes.h"
#include "topology/generators.h"

namespace starling::node {

namespace po = boost::program_options;

namespace {

// A Boost option for `decl` that stores what it parses (or its default) into *values.
template <typename T>
po::typed_value<T>* MethodOption(const algorithms::ParamDecl& decl, const T& default_value,
                                 algorithms::ParamValues* values) {
  const std::string name = decl.name;
  return po::value<T>()->default_value(default_value)->notifier([name, values](const T& v) {
    values->Set(name, v);
  });
}

po::value_semantic* MethodOptionOf(const algorithms::ParamDecl& decl,
                                   algorithms::ParamValues* values) {
  const algorithms::ParamValue& d = decl.default_value;
  switch (decl.type) {
    case algorithms::ParamType::kInt:
      return MethodOption<int>(decl, static_cast<int>(std::get<int64_t>(d)), values);
    case algorithms::ParamType::kInt64:
      return MethodOption<int64_t>(decl, std::get<int64_t>(d), values);
    case algorithms::ParamType::kDouble:
      return MethodOption<double>(decl, std::get<double>(d), values);
    case algorithms::ParamType::kString:
      return MethodOption<std::string>(decl, std::get<std::string>(d), values);
  }
  throw std::logic_error("--" + decl.name + ": unknown parameter type");
}

// Throws std::invalid_argument for a name in `values` that no method declares (a typo in code
// that fills RunConfig::params by hand; the command line cannot produce one).
void CheckDeclared(const algorithms::ParamValues& values) {
  for (const auto& [name, value] : values.values()) {
    bool declared = false;
    for (const algorithms::ParamSet* set : MethodParamSets()) {
      for (const algorithms::ParamDecl& decl : set->decls()) declared |= decl.name == name;
    }
    if (!declared) algorithms::FailParam(name, value, "not a parameter of any method");
  }
}

}  // namespace

void AddMethodOptions(po::options_description* options, algorithms::ParamValues* values) {
  for (const algorithms::ParamSet* set : MethodParamSets()) {
    po::options_description group(set->title());
    for (const algorithms::ParamDecl& decl : set->decls()) {
      group.add_options()(decl.name.c_str(), MethodOptionOf(decl, values), decl.help.c_str());
    }
    options->add(group);
  }
}

namespace {

// The groups of AddRunOptions, in the order --help lists them. Each adds to the same
// description, so the listing is one table as before.

// Which method runs, with what step and for how long.
void AddMethodChoiceOptions(po::options_description* options, RunConfig* c) {
  static const std::string algorithms_help = std::string("algorithm: round-based ") +
                                             algorithms::RoundAlgorithmNames() + "; pairwise " +
                                             algorithms::PairwiseAlgorithmNames();
  static const std::string step_schedule_help =
      std::string(
          "how --step changes with the node's step t (SwarmSGD and variants: local steps; "
          "dgd, dpsgd, choco-sgd: iterations): ") +
      algorithms::StepScheduleSyntax() +
      ". inv-sqrt: step*sqrt(T0/(T0+t)); step: times F every N steps; cosine: from step down to "
      "min*step at t = T (default --iterations); warmup: linear from step/W over the first W "
      "steps, the decay starting after it";
  // clang-format off
  options->add_options()
      ("algorithm", po::value(&c->algorithm)->default_value(c->algorithm),
       algorithms_help.c_str())
      ("step", po::value(&c->step)->default_value(c->step),
       "step size; 0 = the algorithm's default divided by the smoothness bound L")
      ("step-schedule", po::value(&c->step_schedule)->default_value(c->step_schedule),
       step_schedule_help.c_str())
      ("batch", po::value(&c->batch)->default_value(c->batch),
       "mini-batch size for stochastic methods (0 = full local gradients)")
      ("local-steps", po::value(&c->local_steps)->default_value(c->local_steps),
       "H, local steps between the exchanges a node starts (pairwise methods)")
      ("compression", po::value(&c->compression)->default_value(c->compression),
       "SwarmSGD exchanges: none (float64); f32 (the models exchanged rounded to float32, half "
       "the bytes; both sides merge with the rounded pair); lattice:BITS[:SCALE] (dithered lattice codes of BITS bits, "
       "step SCALE, default 1e-4; a failed decoding is detected and retried at full precision; "
       "the wire carries BITS bits per coordinate); or topk:K[:GAMMA] (the K largest entries of "
       "the model's difference from a public copy kept per edge, the rest sent later: error "
       "feedback; consensus step GAMMA, default min(0.5, K/d)); or vq:S[:GAMMA] (vqSGD's "
       "cross-polytope quantizer, S samples of 1 + ceil(log2 d) bits, on the same error feedback; "
       "GAMMA default min(0.5, S/(d-1+S)/2))")
      ("iterations", po::value(&c->iterations)->default_value(c->iterations),
       "outer iterations (round-based), or local steps per node (pairwise)");
  // clang-format on
}

// The model of the local objectives.
void AddProblemOptions(po::options_description* options, RunConfig* c) {
  static const std::string problem_help =
      std::string("local objective: ") + algorithms::ProblemKinds();
  // clang-format off
  options->add_options()
      ("problem", po::value(&c->problem)->default_value(c->problem), problem_help.c_str())
      ("l2", po::value(&c->l2)->default_value(c->l2), "L2 regularisation lambda")
      ("hidden", po::value(&c->hidden)->default_value(c->hidden),
       "--problem mlp: hidden units (784-64-10 on Fashion-MNIST by default)");
  // clang-format on
}

// The data files, how to read them and how their rows are split among the nodes.
void AddDataOptions(po::options_description* options, RunConfig* c) {
  static const std::string partition_help =
      std::string("how rows are split among nodes: ") + algorithms::PartitionSpecs();
  static const std::string block_cyclic_help =
      std::string("block-cyclic data (arXiv:2002.07454): ") + algorithms::BlockCyclicSyntax() +
      ". Every row's block is its class group, floor(class * B / K) for K classes; a node's step "
      "t draws only from its rows of block floor(t/S) mod B. For dgd, dpsgd, mm-psgd and swarmsgd "
      "(t = its local steps); with "
      "--test-data, starling-sim also prints the test accuracy of each block";
  static const std::string scale_help =
      std::string("feature scaling fitted on all of --data, applied to --test-data too: ") +
      algorithms::ScalingMethods();
  // clang-format off
  options->add_options()
      ("data", po::value(&c->data), "training data file (for IDX: the images file)")
      ("format", po::value(&c->format)->default_value(c->format),
       "data format: libsvm, idx, csv or auto")
      ("label-column", po::value(&c->label_column)->default_value(c->label_column),
       "CSV: 0-based column of the label (counted in the file, node column included)")
      ("features", po::value(&c->features)->default_value(c->features),
       "declared number of features for LIBSVM data (0 = largest index seen)")
      ("num-classes", po::value(&c->num_classes)->default_value(c->num_classes),
       "classes 0..K-1 as written in the file, some possibly absent (multinomial, mlp; 2 for "
       "logistic: labels 0/1); 0 = the distinct labels of --data, sorted, become 0..K-1 "
       "(logistic: exactly two, the larger is +1)")
      ("scale", po::value(&c->scale)->default_value(c->scale),
       scale_help.c_str())
      ("test-data", po::value(&c->test_data), "optional test set in the same format, for accuracy")
      ("partition", po::value(&c->partition)->default_value(c->partition),
       partition_help.c_str())
      ("block-cyclic", po::value(&c->block_cyclic)->default_value(c->block_cyclic),
       block_cyclic_help.c_str());
  // clang-format on
}

// What an instance of its own may fix besides its data: the starting point, the loss scale and
// a known minimiser.
void AddInstanceOptions(po::options_description* options, RunConfig* c) {
  // clang-format off
  options->add_options()
      ("x0", po::value(&c->x0)->default_value(c->x0),
       "starting point: auto (zeros; small for --problem mlp), zeros, uniform (U[0,1], a "
       "different seeded draw per node), small (U[-0.05,0.05], the same seeded draw on every "
       "node), or a file of numbers (one row shared by all nodes, or N rows: row i is node i's)")
      ("loss-scale", po::value(&c->loss_scale)->default_value(c->loss_scale),
       "s in f_i(x) = s sum_{rows of node i} loss + (l2/2)||x||^2; 0 = N/M, so that the mean of "
       "the f_i is the centralized mean loss (least squares: loss = (a.x - b)^2 / 2)")
      ("x-star", po::value(&c->x_star),
       "file with a minimiser x* (one row or column of numbers): metrics get the Bregman gap "
       "|sum_i f_i(x_i) - f_i(x*) - <grad f_i(x*), x_i - x*>| and, as "
       "bregman_evaluate_m, the same gap as the OPTRA authors' evaluate.m computes it "
       "|sum_i f_i(x_i) - <grad f_i(x*), x_i> - sum_i f_i(x*)|")
      ("model-digest", po::value(&c->model_digest),
       "a digest (1-64 letters, digits, '-' or '_') of what every node's model must share but "
       "does not exchange, such as a PyTorch model's frozen parameters (starling.torch passes "
       "it); a node with another is refused, naming this option");
  // clang-format on
}

// The nodes, their graph and its weights, and the seed of every random choice of the run.
void AddNetworkOptions(po::options_description* options, RunConfig* c) {
  static const std::string topology_help =
      std::string("communication graph: ") + topology::TopologySpecs();
  // clang-format off
  options->add_options()
      ("nodes", po::value(&c->nodes)->default_value(c->nodes), "number of nodes N")
      ("topology", po::value(&c->topology)->default_value(c->topology), topology_help.c_str())
      ("mixing", po::value(&c->mixing_file),
       "file with an explicit N x N mixing matrix W (symmetric, rows sum to 1); its non-zero "
       "pattern is the graph, replacing --topology and the Metropolis-Hastings weights")
      ("laplacian", po::value(&c->laplacian_file),
       "file with an explicit N x N Laplacian Lap = I - W, used as --mixing I - Lap")
      ("seed", po::value(&c->seed)->default_value(c->seed),
       "seed for partitioning, random graphs, starting points and mini-batches")
      ("slow-node", po::value(&c->slow_nodes),
       "stragglers NODE:FACTOR[,...]: node NODE takes FACTOR times as long for each local step "
       "(pairwise) or round (round-based); give every node the same list");
  // clang-format on
}

// Where the metrics go and how often.
void AddOutputOptions(po::options_description* options, RunConfig* c) {
  // clang-format off
  options->add_options()
      ("metrics", po::value(&c->metrics), "write metrics as JSON lines to this file")
      ("reference-optimum", po::value(&c->reference_optimum),
       "f* for the relative gap: a number, or 'auto' to solve the centralized problem first")
      ("log-every", po::value(&c->log_every)->default_value(c->log_every),
       "metrics period in iterations (0 = about 200 lines per run)");
  // clang-format on
}

}  // namespace

void AddRunOptions(po::options_description* options, RunConfig* c) {
  AddMethodChoiceOptions(options, c);
  AddProblemOptions(options, c);
  AddDataOptions(options, c);
  AddInstanceOptions(options, c);
  AddNetworkOptions(options, c);
  AddOutputOptions(options, c);
  AddMethodOptions(options, &c->params);
}

void ValidateRunConfig(const RunConfig& c) {
  auto fail = [](const std::string& what) { throw std::invalid_argument(what); };
  // The diffusion of topology inference has no data.
  if (c.data.empty() && MethodNeedsData(c.algorithm)) {
    fail("--data: required (a LIBSVM, IDX or CSV file)");
  }
  if (c.nodes < 1) fail("--nodes " + std::to_string(c.nodes) + ": must be at least 1");
  if (c.iterations < 0) fail("--iterations: must be >= 0");
  if (!c.model_digest.empty()) {
    const bool plain = std::all_of(c.model_digest.begin(), c.model_digest.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_';
    });
    if (!plain || c.model_digest.size() > 64) {
      fail("--model-digest '" + c.model_digest + "': 1-64 letters, digits, '-' or '_'");
    }
  }
  ParseSlowNodes(c.slow_nodes);  // throws naming --slow-node; its node range: SlowFactors
  // !(v >= 0) refuses NaN too: `--step nan` went on as if no step had been given.
  auto finite_non_negative = [&](const char* option, double v, const char* meaning) {
    if (!(v >= 0) || std::isinf(v)) {
      std::ostringstream what;
      what << "--" << option << " " << v << ": must be a finite number >= 0" << meaning;
      fail(what.str());
    }
  };
  finite_non_negative("step", c.step, " (0 = the algorithm's default)");
  finite_non_negative("l2", c.l2, "");
  if (c.batch < 0) fail("--batch: must be >= 0");
  if (c.local_steps < 1) fail("--local-steps: must be >= 1");
  if (c.compression != "none") {
    if (c.algorithm != "swarmsgd") fail("--compression: only for --algorithm swarmsgd");
    algorithms::CheckCompressionSpec(c.compression);  // throws naming the option
  }
  if (!algorithms::IsRoundAlgorithm(c.algorithm) && !algorithms::IsPairwiseAlgorithm(c.algorithm)) {
    fail("--algorithm '" + c.algorithm +
         "': unknown (round-based: " + algorithms::RoundAlgorithmNames() +
         "; pairwise: " + algorithms::PairwiseAlgorithmNames() + ")");
  }
  // Throws naming --step-schedule and the bad part.
  const algorithms::StepSchedule schedule =
      algorithms::ParseStepSchedule(c.step_schedule, c.iterations);
  if (!schedule.constant() && algorithms::IsRoundAlgorithm(c.algorithm) &&
      !algorithms::FindRoundMethod(c.algorithm)->takes_step_schedule) {
    fail("--step-schedule " + c.step_schedule + ": --algorithm " + c.algorithm +
         " takes a constant step only (schedules are for the stochastic methods: dgd, dpsgd, "
         "choco-sgd and " +
         algorithms::PairwiseAlgorithmNames() + ")");
  }
  const bool block_cyclic = algorithms::ParseBlockCyclic(c.block_cyclic).active();  // throws
  if (c.algorithm == "mm-psgd" && !block_cyclic) {
    fail("--algorithm mm-psgd: needs block-cyclic data (--block-cyclic B:S)");
  }
  if (block_cyclic) {
    const algorithms::RoundMethod* round = algorithms::FindRoundMethod(c.algorithm);
    const algorithms::PairwiseMethod* pairwise = algorithms::FindPairwiseMethod(c.algorithm);
    if (!(round != nullptr && round->takes_block_cyclic) &&
        !(pairwise != nullptr && pairwise->takes_block_cyclic)) {
      fail("--block-cyclic " + c.block_cyclic + ": not for --algorithm " + c.algorithm +
           " (only dgd, dpsgd, mm-psgd and swarmsgd sample by blocks)");
    }
  }
  if (c.log_every < 0) fail("--log-every: must be >= 0");
  if (c.x0.empty()) fail("--x0: expected auto, zeros, uniform, small or a file");
  if (c.problem == "mlp" && c.x0 == "zeros") {
    fail(
        "--x0 zeros with --problem mlp: from zeros every hidden unit gets the same gradient and "
        "the model never learns; use --x0 small (the default for the MLP) or a file");
  }
  if (c.hidden < 1) fail("--hidden: must be >= 1");
  finite_non_negative("loss-scale", c.loss_scale, " (0 = N/M)");
  if (c.label_column < 0) fail("--label-column: must be >= 0");
  if (c.num_classes < 0 || c.num_classes == 1) {
    fail("--num-classes " + std::to_string(c.num_classes) + ": must be 0 (from the data) or >= 2");
  }
  if (c.num_classes != 0 && c.problem == "least-squares") {
    fail("--num-classes: not for --problem least-squares (its labels are used as they are)");
  }
  if (c.num_classes > 2 && c.problem == "logistic") {
    fail("--num-classes " + std::to_string(c.num_classes) +
         ": --problem logistic is binary (use --problem multinomial for more classes)");
  }
  if (c.scale != "none" && c.scale != "standard" && c.scale != "minmax" && c.scale != "maxabs") {
    fail("--scale '" + c.scale + "': expected none, standard, minmax or maxabs");
  }
  if (!c.mixing_file.empty() && !c.laplacian_file.empty()) {
    fail("--mixing and --laplacian: give one of them, not both");
  }
  // Every method's values must lie in their declared ranges, as a mistyped value is a mistake
  // whichever method runs; the chosen method's cross-checks apply to its own run only.
  CheckDeclared(c.params);
  const algorithms::ParamSet* chosen = MethodParamsOf(c.algorithm);
  for (const algorithms::ParamSet* set : MethodParamSets()) {
    if (set != chosen) set->CheckValues(c.params);
  }
  if (chosen != nullptr) chosen->Validate(c.params, {c.iterations});
}

namespace {

// Levenshtein distance, for naming the option a mistyped one was probably meant to be.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The declared long option closest to `name` (without dashes): one that starts with it, or
// within a third of its length in edits; empty if none is close.
std::string ClosestOption(const std::string& name, const po::options_description& options) {
  std::string best;
  size_t best_distance = name.size() / 3 + 1;
  for (const auto& option : options.options()) {
    const std::string& candidate = option->long_name();
    if (candidate.empty()) continue;
    const bool extends =
        candidate.size() > name.size() && candidate.compare(0, name.size(), name) == 0;
    const size_t distance =
        extends ? candidate.size() - name.size() : EditDistance(name, candidate);
    if (distance < best_distance || (extends && distance <= best_distance)) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace

po::variables_map ParseCommandLine(int argc, const char* const* argv,
                                   const po::options_description& options) {
  po::variables_map vm;
  try {
    // No guessing: a prefix of an option (--local-step for --local-steps) is an unknown
    // option, named with the close match, never silently taken as another option.
    const int style =
        po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    try {
      po::store(po::command_line_parser(argc, argv).options(options).style(style).run(), vm);
    } catch (const po::unknown_option& e) {
      std::string name = e.get_option_name();
      while (!name.empty() && name[0] == '-') name.erase(0, 1);
      const std::string close = ClosestOption(name, options);
      throw std::invalid_argument(
          "--" + name + ": unknown option" +
          (close.empty() ? std::string(" (see --help)") : "; did you mean --" + close + "?"));
    }
    if (options.find_nothrow("config", false) != nullptr && vm.count("config")) {
      const std::string path = vm["config"].as<std::string>();
      std::ifstream in(path);
      if (!in) throw std::invalid_argument(path + ": cannot open config file");
      try {
        po::store(po::parse_config_file(in, options), vm);
      } catch (const po::error& e) {
        // Which file: the same option may also come from the command line.
        throw std::invalid_argument(path + ": " + e.what());
      }
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw std::invalid_argument(e.what());
  }
  return vm;
}

}  // namespace starling::node
