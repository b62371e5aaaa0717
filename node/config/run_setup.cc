#include "node/config/run_setup.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

#include "algorithms/data/partition.h"
#include "algorithms/data/readers.h"
#include "algorithms/data/training_rows.h"
#include "algorithms/pairwise/pairwise_method.h"
#include "algorithms/problems/problem_factory.h"
#include "algorithms/round/round_method.h"
#include "node/config/diffusion_setup.h"
#include "node/config/method_params.h"
#include "node/config/spanning_tree.h"
#include "topology/generators.h"
#include "topology/matrix_file.h"
#include "topology/mixing.h"
#include "topology/spectral.h"

namespace starling::node {

namespace {

// Node `node`'s row of an explicit starting-point table (one row shared, or one per node).
Vec StartingPointFromTable(const RunConfig& config, const Eigen::MatrixXd& table, int node,
                           int dim) {
  if (table.cols() != dim || (table.rows() != 1 && table.rows() != config.nodes)) {
    throw std::runtime_error("--x0 " + config.x0 + ": is " + std::to_string(table.rows()) + " x " +
                             std::to_string(table.cols()) + ", expected 1 or " +
                             std::to_string(config.nodes) + " rows of " + std::to_string(dim) +
                             " numbers");
  }
  return table.row(table.rows() == 1 ? 0 : node).transpose();
}

Vec StartingPoint(const RunConfig& config, int node, int dim) {
  const std::string x0 = ResolvedX0(config);
  if (x0 == "zeros") return Vec::Zero(dim);
  if (x0 == "small") {
    // The same small random point on every node: a non-convex model must not start at zero (its
    // hidden units would stay identical), and decentralized runs start from a common point.
    std::mt19937_64 rng(config.seed * 0x9E3779B97F4A7C15ULL + 7);
    Vec x(dim);
    for (int k = 0; k < dim; ++k) x[k] = (static_cast<double>(rng() >> 11) * 0x1.0p-53 - 0.5) * 0.1;
    return x;
  }
  // U[0,1], a different draw per node as in the Network-DANE experiments. Drawn by hand from the
  // raw generator so that every build of every binary draws the same numbers.
  std::mt19937_64 rng(config.seed * 0x9E3779B97F4A7C15ULL + 1000003ULL * (node + 1));
  Vec x(dim);
  for (int k = 0; k < dim; ++k) x[k] = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  return x;
}

}  // namespace

algorithms::NodeSetup NodeSetupOf(const topology::Graph& graph, const Eigen::MatrixXd& mixing,
                                  const std::vector<algorithms::TreePlace>& tree, int i) {
  algorithms::NodeSetup node;
  node.id = i;
  node.neighbors = graph.Neighbors(i);
  for (int j : node.neighbors) node.neighbor_weights.push_back(mixing(i, j));
  node.self_weight = mixing(i, i);
  node.tree = tree[i];
  return node;
}

algorithms::NodeSetup NodeSetupOf(const topology::Graph& graph, const Eigen::MatrixXd& mixing,
                                  int i) {
  return NodeSetupOf(graph, mixing, BfsSpanningTree(graph), i);
}

namespace {

// The steps of BuildRunSetup, in the order it takes them: the order of the reads, the random
// draws and the checks (and so of the error messages) is part of the contract.

// The columns of --data that are not features; --test-data is read with the same layout.
algorithms::CsvColumns CsvColumnsOf(const RunConfig& config) {
  algorithms::CsvColumns csv;
  csv.label = config.label_column;
  csv.node = algorithms::NodeColumnOf(config.partition);
  return csv;
}

algorithms::TrainingRows ReadTrainingData(const RunConfig& config) {
  return algorithms::ReadTrainingRows(config.data, config.format, config.features,
                                      CsvColumnsOf(config));
}

// Rows `rows` of the training data as the problems see them: the run's labels, scaled features.
// Both act on each row alone, so a shard taken this way equals the same rows of the whole file
// mapped and scaled.
algorithms::Dataset ProblemRows(const algorithms::TrainingRows& data, const std::vector<int>& rows,
                                const RunConfig& config, const RunSetup& s) {
  algorithms::Dataset subset = data.Subset(rows);
  s.labels.Apply(&subset, "--data " + config.data);
  s.scaling.Apply(&subset);
  return subset;
}

// The label map of the run, from --data as a whole (every node reads all of it).
algorithms::LabelMap FitLabels(const RunConfig& config, const algorithms::Dataset& data) {
  const std::string name = "--data " + config.data;
  const algorithms::LabelTarget target = algorithms::LabelTargetOf(config.problem, name);
  try {
    return algorithms::LabelMap::Fit(data, target, config.num_classes, name);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("--num-classes " + std::to_string(config.num_classes) + ": " +
                                e.what());
  }
}

algorithms::FeatureScaling FitScaling(const RunConfig& config, const algorithms::Dataset& data) {
  try {
    return algorithms::FeatureScaling::Fit(data, config.scale);
  } catch (const std::exception& e) {
    throw std::invalid_argument("--scale " + config.scale + ": --data " + e.what());
  }
}

// Raw features whose smoothness bound is far above the bound after scaling make every default
// step (0.5/L and the like) tiny: say so, and suggest --scale. Judged on every k-th row (at most
// kRows of them: the bound is per sample, so a spread-out subset tells the same), with maxabs
// for sparse data and standard scaling for dense data. WarnRows are the rows, `raw` those rows
// as ProblemRows gives them.
std::vector<int> WarnRows(int num_samples) {
  constexpr int kRows = 2000;
  std::vector<int> rows;
  const int stride = std::max(1, num_samples / kRows);
  for (int i = 0; i < num_samples; i += stride) rows.push_back(i);
  return rows;
}

void WarnIfUnscaled(const algorithms::ProblemSpec& spec, algorithms::Dataset raw, RunSetup* s) {
  constexpr double kRatio = 100;
  algorithms::Dataset scaled = raw;
  const std::string method = raw.is_sparse ? "maxabs" : "standard";
  algorithms::FeatureScaling::Fit(raw, method).Apply(&scaled);
  const double scale = 1.0 / static_cast<double>(raw.num_samples());
  double raw_bound = 0, scaled_bound = 0;
  try {
    raw_bound = algorithms::MakeProblem(spec, std::move(raw), scale)->SmoothnessBound();
    scaled_bound = algorithms::MakeProblem(spec, std::move(scaled), scale)->SmoothnessBound();
  } catch (const std::runtime_error&) {
    return;  // the real problems are built next and report what is wrong
  }
  if (!(scaled_bound > 0) || !(raw_bound > kRatio * scaled_bound)) return;
  char text[400];
  std::snprintf(text, sizeof text,
                "features look unscaled: the smoothness bound of the raw features is %.3g, %.3gx "
                "the %.3g after %s scaling, so default steps (which divide by it) are that much "
                "smaller; consider --scale %s",
                raw_bound, raw_bound / scaled_bound, scaled_bound, method.c_str(),
                raw.is_sparse ? "maxabs" : "standard (or maxabs)");
  s->notices.push_back({true, text});
}

void WarnIfUnscaled(const RunConfig& config, const algorithms::ProblemSpec& spec,
                    const algorithms::TrainingRows& data, RunSetup* s) {
  if (config.scale != "none" || data.num_samples() == 0) return;
  WarnIfUnscaled(spec, ProblemRows(data, WarnRows(data.num_samples()), config, *s), s);
}

// Throws std::invalid_argument for a node id outside the run or a data set with fewer samples
// than nodes.
void CheckScopeFits(const RunConfig& config, const BuildScope& scope,
                    const algorithms::Dataset& data) {
  const int n = config.nodes;
  if (scope.only_node >= n) {
    throw std::invalid_argument("node id " + std::to_string(scope.only_node) + " but only " +
                                std::to_string(n) + " nodes");
  }
  if (data.num_samples() < n) {
    throw std::invalid_argument(config.data + ": " + std::to_string(data.num_samples()) +
                                " samples cannot be split among " + std::to_string(n) + " nodes");
  }
}

// The model every problem of the run is made of; the classes are those of the label map.
algorithms::ProblemSpec ProblemSpecOf(const RunConfig& config, const algorithms::LabelMap& labels) {
  algorithms::ProblemSpec spec;
  spec.kind = config.problem;
  spec.l2 = config.l2;
  spec.num_classes = labels.num_classes();
  spec.hidden = config.hidden;
  return spec;
}

// The graph and W: from an explicit --mixing / --laplacian file (its non-zero pattern is the
// graph), or the seeded --topology with Metropolis-Hastings weights.
void BuildNetwork(const RunConfig& config, RunSetup* s) {
  if (!config.mixing_file.empty() || !config.laplacian_file.empty()) {
    const bool laplacian = config.mixing_file.empty();
    s->mixing = topology::ReadMixingFile(laplacian ? config.laplacian_file : config.mixing_file,
                                         laplacian, config.nodes);
    s->graph = topology::GraphOfMixing(s->mixing);
    return;
  }
  s->graph = topology::MakeTopology(config.topology, config.nodes, config.seed);
  if (!s->graph.IsConnected()) {
    throw std::runtime_error("--topology '" + config.topology + "': the graph is not connected");
  }
  s->mixing = topology::MetropolisHastings(s->graph);
}

// s in f_i = s sum of losses + (l2/2)||x||^2: --loss-scale, or N/M.
double NodeLossScale(const RunConfig& config, int num_samples) {
  return config.loss_scale > 0 ? config.loss_scale
                               : static_cast<double>(config.nodes) / num_samples;
}

// The method's summary of a node's shard where its constants need every node's (ADFS), else null.
using ShardSummarizer = algorithms::ShardSummary (*)(const algorithms::Problem&);
ShardSummarizer ShardSummarizerOf(const RunConfig& config) {
  const algorithms::PairwiseMethod* method = algorithms::FindPairwiseMethod(config.algorithm);
  return method != nullptr ? method->summarize_shard : nullptr;
}

// The network-wide smoothness bound serves default step sizes (and OPTRA's); with an explicit
// --step a daemon need not build (and bound) every other node's problem, unless the method needs
// every node's shard summary, which comes from the same pass.
bool NeedsSmoothness(const RunConfig& config) {
  return config.step <= 0 || algorithms::NeedsSmoothness(config.algorithm) ||
         ShardSummarizerOf(config) != nullptr;
}

// The node problems `scope` keeps, and L = max_i L_i over every node (each node's problem is
// built for its bound where L is needed, and dropped unless kept). Sets s->dim.
void BuildNodeProblems(const RunConfig& config, const BuildScope& scope,
                       const algorithms::ProblemSpec& spec, const algorithms::TrainingRows& data,
                       const algorithms::Shards& shards, double node_scale, RunSetup* s) {
  const int n = config.nodes;
  s->problems.resize(n);
  const bool need_smoothness = NeedsSmoothness(config);
  for (int i = 0; i < n && scope.node_problems; ++i) {
    const bool keep = scope.only_node < 0 || scope.only_node == i;
    if (!keep && !need_smoothness) continue;
    auto problem =
        algorithms::MakeProblem(spec, ProblemRows(data, shards[i], config, *s), node_scale);
    if (need_smoothness) s->smoothness = std::max(s->smoothness, problem->SmoothnessBound());
    if (const ShardSummarizer summarize = ShardSummarizerOf(config)) {
      s->shard_summaries.push_back(summarize(*problem));
    }
    s->dim = problem->dim();
    if (keep) s->problems[i] = std::move(problem);
  }
}

// The block of every row of `labels` (the problem's labels, mapped) for --block-cyclic.
std::vector<int> BlocksOf(const RunSetup& s, const Vec& labels) {
  if (s.labels.target() == algorithms::LabelTarget::kRaw) {
    throw std::invalid_argument("--block-cyclic: needs class labels (not --problem least-squares)");
  }
  return algorithms::BlocksOfLabels(labels, s.labels.target() == algorithms::LabelTarget::kBinary,
                                    s.labels.num_classes(), s.blocks.blocks);
}

// The blocks of every row of the training file, by its labels mapped as the problems see them.
std::vector<int> TrainingRowBlocks(const RunConfig& config, const algorithms::Dataset& table,
                                   const RunSetup& s) {
  algorithms::Dataset labels;
  labels.labels = table.labels;
  s.labels.Apply(&labels, "--data " + config.data);
  return BlocksOf(s, labels.labels);
}

// The LIBSVM data set `test` with the training data's `num_features` columns: fewer is fine (the
// missing features are zeros), a feature beyond them is an error naming the sample, the feature
// and both files.
void FitSparseTestColumns(const RunConfig& config, int num_features, algorithms::Dataset* test) {
  if (test->num_features > num_features) {
    for (Eigen::Index r = 0; r < test->sparse.outerSize(); ++r) {
      for (SparseMatrix::InnerIterator it(test->sparse, r); it; ++it) {
        if (it.col() < num_features) continue;
        throw std::runtime_error(
            "--test-data " + config.test_data + ": sample " + std::to_string(r) + " has feature " +
            std::to_string(it.col() + 1) + ", but --data " + config.data + " has " +
            std::to_string(num_features) +
            " features (its largest index); a model of the training data has no weight for it "
            "(pass --features N, at least " +
            std::to_string(test->num_features) + ", to give both files the same dimension)");
      }
    }
  }
  test->sparse.conservativeResize(test->sparse.rows(), num_features);
  test->num_features = num_features;
}

// The problem over --test-data: read with the same format, columns and declared features as
// --data, its labels mapped and its features scaled as the training data's; null without a test
// set. With --block-cyclic also fills s->test_blocks.
std::unique_ptr<algorithms::Problem> BuildTestProblem(const RunConfig& config,
                                                      const algorithms::ProblemSpec& spec,
                                                      RunSetup* s, int num_features,
                                                      double global_scale) {
  if (config.test_data.empty()) return nullptr;
  algorithms::Dataset test = algorithms::ReadDataset(config.test_data, config.format,
                                                     config.features, CsvColumnsOf(config));
  if (test.is_sparse) {
    FitSparseTestColumns(config, num_features, &test);
  } else if (test.num_features != num_features) {
    throw std::runtime_error("--test-data " + config.test_data + ": " +
                             std::to_string(test.num_features) + " features but --data " +
                             config.data + " has " + std::to_string(num_features) +
                             " (both are read with the same columns: the label in column " +
                             std::to_string(config.label_column) + ")");
  }
  test.node_of_row.clear();
  s->labels.Apply(&test, "--test-data " + config.test_data);
  s->scaling.Apply(&test);
  if (s->blocks.active()) {
    // Each block's test rows on their own (std::vector<int>: Dataset::Subset's row list).
    const std::vector<std::vector<int>> rows =
        algorithms::RowsByBlock(BlocksOf(*s, test.labels), s->blocks.blocks);
    for (const std::vector<int>& block : rows) {
      s->test_blocks.push_back(
          block.empty() ? nullptr
                        : algorithms::MakeProblem(spec, test.Subset(block), global_scale));
    }
  }
  return algorithms::MakeProblem(spec, std::move(test), global_scale);
}

// The table of an --x0 file; empty for the generated starting points.
Eigen::MatrixXd ReadStartingPointTable(const RunConfig& config) {
  const std::string x0 = ResolvedX0(config);
  if (x0 == "zeros" || x0 == "uniform" || x0 == "small") return {};
  return topology::ReadMatrixFile(config.x0);
}

// The --x-star file as a vector of `dim` numbers; empty if not given.
Vec ReadXStar(const RunConfig& config, int dim) {
  if (config.x_star.empty()) return {};
  const Eigen::MatrixXd x_star = topology::ReadMatrixFile(config.x_star);
  if (x_star.size() != dim || (x_star.rows() != 1 && x_star.cols() != 1)) {
    throw std::runtime_error("--x-star " + config.x_star + ": is " + std::to_string(x_star.rows()) +
                             " x " + std::to_string(x_star.cols()) +
                             ", expected one row or column of " + std::to_string(dim) + " numbers");
  }
  return Eigen::Map<const Vec>(x_star.data(), x_star.size());
}

// Every node's NodeSetup: its place in the network, its problem (null where not built), its
// starting point and its seed.
std::vector<algorithms::NodeSetup> NodeSetupsOf(const RunConfig& config, const RunSetup& s,
                                                const Eigen::MatrixXd& x0_table,
                                                const algorithms::Shards& shards,
                                                const std::vector<int>& row_blocks) {
  std::vector<algorithms::NodeSetup> nodes;
  const std::vector<algorithms::TreePlace> tree = BfsSpanningTree(s.graph);
  for (int i = 0; i < config.nodes; ++i) {
    algorithms::NodeSetup node = NodeSetupOf(s.graph, s.mixing, tree, i);
    node.problem = s.problems[i].get();
    node.x0 = x0_table.size() > 0 ? StartingPointFromTable(config, x0_table, i, s.dim)
                                  : StartingPoint(config, i, s.dim);
    node.seed = config.seed * 1000003ULL + static_cast<uint64_t>(i);
    if (s.blocks.active()) {
      // Shard row k is file row shards[i][k] (ProblemRows keeps the shard's order).
      std::vector<int> blocks;
      for (int row : shards[i]) blocks.push_back(row_blocks[row]);
      node.block_rows = algorithms::RowsByBlock(blocks, s.blocks.blocks);
      node.block_steps = s.blocks.steps_per_block;
    }
    nodes.push_back(std::move(node));
  }
  return nodes;
}

// A daemon that needs no other node's rows (no smoothness bound over every node's problem, no
// scaling fitted on every feature) keeps only its own shard: its memory follows its rows.
bool ReadsOwnShardOnly(const RunConfig& config, const BuildScope& scope) {
  return scope.only_node >= 0 && !scope.global && scope.node_problems && config.scale == "none" &&
         !NeedsSmoothness(config);
}

// BuildRunSetup for such a daemon, equal to it bit for bit: a first pass reads every label (for
// IDX, the labels file alone; a text file is parsed and checked in full, and where each row
// starts is kept), which fixes the label map, the partition and the blocks; then the rows
// WarnIfUnscaled looks at and the node's shard, one after the other (for IDX in one pass over the
// images, for text only those rows' lines, from where they start). Memory: every label (and a
// text file's row offsets), and the shard (the sample and the check's copies before it).
RunSetup BuildOwnShardSetup(const RunConfig& config, const BuildScope& scope) {
  RunSetup s;
  s.only_node = scope.only_node;
  const algorithms::CsvColumns csv = CsvColumnsOf(config);
  algorithms::TextRowIndex index;
  const algorithms::Dataset table =
      algorithms::ReadDatasetLabels(config.data, config.format, config.features, csv, &index);
  CheckScopeFits(config, scope, table);
  s.labels = FitLabels(config, table);
  s.scaling = FitScaling(config, table);  // "none": nothing to fit
  s.notices.push_back({false, "labels: " + s.labels.Describe()});
  const algorithms::ProblemSpec spec = ProblemSpecOf(config, s.labels);
  s.blocks = algorithms::ParseBlockCyclic(config.block_cyclic);
  const std::vector<int> row_blocks =
      s.blocks.active() ? TrainingRowBlocks(config, table, s) : std::vector<int>();
  s.num_samples = table.num_samples();
  BuildNetwork(config, &s);
  const algorithms::Shards shards =
      algorithms::Partition(table, config.partition, config.nodes, config.seed);
  auto as_problem_sees = [&](algorithms::Dataset* d) {
    s.labels.Apply(d, "--data " + config.data);
    s.scaling.Apply(d);
  };
  // The rows WarnIfUnscaled looks at, then the shard: the sample and the copies the check makes
  // (2000 rows, twice) are freed before the shard is made, not added to its peak.
  s.problems.resize(config.nodes);
  algorithms::ReadDatasetRowsInTurn(
      config.data, config.format, config.features, csv,
      {WarnRows(s.num_samples), shards[scope.only_node]},
      [&](int set, algorithms::Dataset rows) {
        as_problem_sees(&rows);
        if (set == 0) {
          WarnIfUnscaled(spec, std::move(rows), &s);
        } else {
          s.problems[scope.only_node] =
              algorithms::MakeProblem(spec, std::move(rows), NodeLossScale(config, s.num_samples));
        }
      },
      &index);
  s.dim = s.problems[scope.only_node]->dim();
  const Eigen::MatrixXd x0_table = ReadStartingPointTable(config);
  s.x_star = ReadXStar(config, s.dim);
  s.nodes = NodeSetupsOf(config, s, x0_table, shards, row_blocks);
  return s;
}

}  // namespace

std::vector<int> ShardRows(const RunConfig& config, int node) {
  if (config.data.empty()) throw std::invalid_argument("--data: no data file given");
  if (config.nodes < 1) {
    throw std::invalid_argument("--nodes " + std::to_string(config.nodes) + ": must be at least 1");
  }
  if (node < 0 || node >= config.nodes) {
    throw std::invalid_argument("node " + std::to_string(node) + " is outside 0.." +
                                std::to_string(config.nodes - 1) + " (--nodes " +
                                std::to_string(config.nodes) + ")");
  }
  // The table BuildOwnShardSetup partitions (the same reader, labels as written), so the rows
  // are those of either build.
  const algorithms::Dataset table = algorithms::ReadDatasetLabels(
      config.data, config.format, config.features, CsvColumnsOf(config));
  algorithms::Shards shards =
      algorithms::Partition(table, config.partition, config.nodes, config.seed);
  return std::move(shards[node]);
}

RunSetup BuildRunSetup(const RunConfig& config, const BuildScope& scope) {
  if (!MethodNeedsData(config.algorithm)) return BuildDiffusionSetup(config, scope);
  if (ReadsOwnShardOnly(config, scope)) return BuildOwnShardSetup(config, scope);
  RunSetup s;
  s.only_node = scope.only_node;
  algorithms::TrainingRows data = ReadTrainingData(config);
  CheckScopeFits(config, scope, data.table());
  s.labels = FitLabels(config, data.table());
  // Scaling is fitted on every feature of the file, and the centralized problem holds them all:
  // then the rows are expanded here. A daemon without --scale keeps them compact and expands
  // only the rows it takes (its shard, and the others one at a time for the smoothness bound).
  if (config.scale != "none" || scope.global) data = algorithms::TrainingRows(data.TakeAll());
  s.scaling = FitScaling(config, data.table());
  s.notices.push_back({false, "labels: " + s.labels.Describe()});
  if (s.scaling.active()) s.notices.push_back({false, "scale: " + s.scaling.Describe()});
  const algorithms::ProblemSpec spec = ProblemSpecOf(config, s.labels);
  s.blocks = algorithms::ParseBlockCyclic(config.block_cyclic);
  const std::vector<int> row_blocks =
      s.blocks.active() ? TrainingRowBlocks(config, data.table(), s) : std::vector<int>();
  s.num_samples = data.num_samples();
  BuildNetwork(config, &s);
  // The shards are cut from the file as read (the label partitions sort by the raw labels, which
  // the map keeps in order); rows get the problem's label and scaled features as they are taken.
  const algorithms::Shards shards =
      algorithms::Partition(data.table(), config.partition, config.nodes, config.seed);
  WarnIfUnscaled(config, spec, data, &s);
  const double node_scale = NodeLossScale(config, s.num_samples);
  BuildNodeProblems(config, scope, spec, data, shards, node_scale, &s);
  if (scope.global) {
    // (1/N) sum_i f_i: the centralized objective, 1/M per sample with the default scale.
    const double global_scale = node_scale / config.nodes;
    const int num_features = data.table().num_features;
    algorithms::Dataset all = data.TakeAll();
    s.labels.Apply(&all, "--data " + config.data);
    s.scaling.Apply(&all);
    s.test = BuildTestProblem(config, spec, &s, num_features, global_scale);
    s.global = algorithms::MakeProblem(spec, std::move(all), global_scale);
    s.dim = s.global->dim();
  }
  const Eigen::MatrixXd x0_table = ReadStartingPointTable(config);
  s.x_star = ReadXStar(config, s.dim);
  s.nodes = NodeSetupsOf(config, s, x0_table, shards, row_blocks);
  return s;
}

namespace {

// What both shapes' options take from the run as it is: the method, its step, L and its own
// parameters.
template <typename Options>
Options MethodOptionsFor(const RunConfig& config, const RunSetup& setup) {
  Options options;
  options.algorithm = config.algorithm;
  options.step = config.step;
  options.step_schedule = algorithms::ParseStepSchedule(config.step_schedule, config.iterations);
  options.smoothness = setup.smoothness;
  options.params = config.params;
  return options;
}

}  // namespace

algorithms::RoundOptions RoundOptionsFor(const RunConfig& config, const RunSetup& setup) {
  auto options = MethodOptionsFor<algorithms::RoundOptions>(config, setup);
  options.batch_size = config.batch;
  options.iterations = config.iterations;
  options.strong_convexity = config.l2;
  options.max_degree = setup.graph.MaxDegree();
  options.mean_shard_samples = static_cast<double>(setup.num_samples) / config.nodes;
  options.quadratic = config.problem == "least-squares";
  options.dim = setup.dim;
  // The run-wide constants that cost an eigendecomposition, only for the methods that use them.
  const algorithms::RoundMethod* method = algorithms::FindRoundMethod(config.algorithm);
  if (method != nullptr && method->needs_laplacian_spectrum) {
    const topology::LaplacianSpectrum spectrum =
        topology::LaplacianEigen(topology::LaplacianOf(setup.mixing));
    options.laplacian_lambda2 = spectrum.lambda2;
    options.laplacian_lambda_max = spectrum.lambda_max;
  }
  if (method != nullptr && method->needs_lazy_factor) {
    options.tracker_lazy_c = topology::LazyFactor(setup.mixing);
  }
  return options;
}

algorithms::PairwiseOptions PairwiseOptionsFor(const RunConfig& config, const RunSetup& setup) {
  auto options = MethodOptionsFor<algorithms::PairwiseOptions>(config, setup);
  options.batch_size = config.batch > 0 ? config.batch : 8;
  options.local_steps = config.local_steps;
  options.iterations = config.iterations;
  options.compression = config.compression;
  for (int i = 0; i < setup.graph.num_nodes(); ++i) {
    options.graph.push_back(setup.graph.Neighbors(i));
  }
  options.shards = setup.shard_summaries;
  return options;
}

}  // namespace starling::node
