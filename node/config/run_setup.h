// Everything a run needs, built deterministically from a RunConfig: the data split into shards,
// each node's problem, the graph and its mixing weights, the network-wide smoothness bound and
// each node's NodeSetup. The simulator builds all nodes; a daemon builds the same and keeps its
// own, so both agree bit for bit.
#pragma once

#include <Eigen/Core>
#include <memory>
#include <vector>

#include "algorithms/data/block_cyclic.h"
#include "algorithms/data/dataset.h"
#include "algorithms/data/feature_scaling.h"
#include "algorithms/data/label_map.h"
#include "algorithms/node_setup.h"
#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/problems/problem.h"
#include "algorithms/round/round_algorithm.h"
#include "node/config/run_config.h"
#include "topology/graph.h"

namespace starling::node {

// A line about the data that every program prints once at start (the label map, the scaling, a
// warning that the features look unscaled).
struct DataNotice {
  bool warning = false;
  std::string text;
};

struct RunSetup {
  // Set when built for a single node (BuildScope::only_node).
  int only_node = -1;
  topology::Graph graph;
  Eigen::MatrixXd mixing;  // W: Metropolis-Hastings, or the --mixing / --laplacian file
  // Node i's objective (loss scale N/M unless --loss-scale, so (1/N) sum f_i = the centralized
  // objective). When built
  // for one node only, the other entries are null.
  std::vector<std::unique_ptr<algorithms::Problem>> problems;
  // The centralized objective (1/N) sum_i f_i over all training data (loss scale 1/M by
  // default); null if not asked for.
  std::unique_ptr<algorithms::Problem> global;
  // Over the test set, for accuracy; null if no test data.
  std::unique_ptr<algorithms::Problem> test;
  // --block-cyclic: the spec, and with a test set its rows of each block as a problem (null for
  // a block without test rows); every node's NodeSetup::block_rows holds its shard's blocks.
  algorithms::BlockCyclicSpec blocks;
  std::vector<std::unique_ptr<algorithms::Problem>> test_blocks;
  double smoothness = 0.0;  // L = max_i L_i; 0 when an explicit step makes it unnecessary
  // Every node's shard summary (PairwiseOptions::shards), for the methods that need them (adfs);
  // empty otherwise.
  std::vector<algorithms::ShardSummary> shard_summaries;
  int num_samples = 0;  // M
  Vec x_star;           // --x-star, for the Bregman gap; empty if not given
  // Every node's setup; a node's `problem` is null where its problem was not built.
  std::vector<algorithms::NodeSetup> nodes;
  int dim = 0;
  // How --data's labels map to the problem's, fitted on the whole training file and applied to
  // every shard and to --test-data; and the feature scaling, fitted and applied likewise. Both
  // enter the run id (RunIdFor) and the simulator's metrics header.
  algorithms::LabelMap labels;
  algorithms::FeatureScaling scaling;
  std::vector<DataNotice> notices;  // in the order to print them
};

struct BuildScope {
  // -1: build every node's problem (the simulator). K: keep only node K's problem (a daemon);
  // the others are built one at a time for the smoothness bound and dropped.
  int only_node = -1;
  // False: build no node problem at all (a probe); the smoothness bound is then left at 0.
  bool node_problems = true;
  bool global = true;  // build the centralized problem (and the test problem)
};

// Throws (std::runtime_error / std::invalid_argument) with a message naming the file or option.
RunSetup BuildRunSetup(const RunConfig& config, const BuildScope& scope = {});

// Node `node`'s rows of --data under --partition, --nodes and --seed: their 0-based positions
// in the file, ascending, exactly the rows BuildRunSetup gives that node (the same reader and
// the same Partition call). Reads only what the partition needs (for IDX the labels file, for
// text every line once). Throws std::invalid_argument naming --data, --nodes or --partition,
// std::runtime_error naming the file for a file that cannot be read.
std::vector<int> ShardRows(const RunConfig& config, int node);

// Node i's place in the network: its id, its neighbours in `graph` (ascending) and their weights
// W_ij, and W_ii, from `mixing`, and its place in BfsSpanningTree(graph) (spanning_tree.h), or in
// `tree` when the caller computed it once for all nodes. Problem, starting point and seed are the
// caller's.
algorithms::NodeSetup NodeSetupOf(const topology::Graph& graph, const Eigen::MatrixXd& mixing,
                                  int i);
algorithms::NodeSetup NodeSetupOf(const topology::Graph& graph, const Eigen::MatrixXd& mixing,
                                  const std::vector<algorithms::TreePlace>& tree, int i);

// The algorithm options that `config` implies for `setup`.
algorithms::RoundOptions RoundOptionsFor(const RunConfig& config, const RunSetup& setup);
algorithms::PairwiseOptions PairwiseOptionsFor(const RunConfig& config, const RunSetup& setup);

}  // namespace starling::node
