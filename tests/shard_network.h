// Heterogeneous shards written here for the unit tests of the asynchronous pairwise methods
// (ASY-SONATA, DADAO, ADFS): small least-squares or logistic problems whose nodes' data differ
// in scale and in their targets, so that the local optima disagree and only the network's
// exchanges can reach the optimum of the sum.
#pragma once

#include <Eigen/Dense>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "algorithms/data/dataset.h"
#include "algorithms/node_setup.h"
#include "algorithms/problems/problem_factory.h"
#include "algorithms/types.h"
#include "node/config/run_setup.h"
#include "topology/graph.h"
#include "topology/mixing.h"

namespace starling::testing {

struct ShardNetwork {
  topology::Graph graph;
  std::vector<Eigen::MatrixXd> a;  // node i's features
  std::vector<Vec> b;              // and targets (least squares) or labels (+-1)
  std::vector<std::unique_ptr<algorithms::Problem>> problems;
  std::vector<algorithms::NodeSetup> setups;
  double l2 = 0.0;
  double smoothness = 0.0;  // max_i of the problems' smoothness bounds
};

// How the shards differ: node i's features are standard normal times (1 + feature_step (i % 3)),
// its targets t = N(0, 1) + target_shift i (logistic: the label is the sign of t + a_0 - 0.3).
struct ShardSpread {
  double feature_step = 1.0;
  double target_shift = 0.5;
};

// `kind` "least-squares" or "logistic"; rows x dim per node; f_i = the shard's mean loss +
// (l2 / 2) |x|^2. setups[i]: Metropolis-Hastings weights of `graph`, problems[i], x0 = 0.3 i - 0.5
// in every coordinate, seed 7 + i (callers may change x0 and seed). Deterministic for `seed`.
inline void FillShardNetwork(const topology::Graph& graph, const std::string& kind, int rows,
                             int dim, double l2, uint64_t seed, const std::string& source,
                             ShardSpread spread, ShardNetwork* net) {
  net->graph = graph;
  net->l2 = l2;
  const Eigen::MatrixXd w = topology::MetropolisHastings(graph);
  const int n = graph.num_nodes();
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  for (int i = 0; i < n; ++i) {
    algorithms::Dataset shard;
    shard.num_features = dim;
    shard.dense.resize(rows, dim);
    shard.labels.resize(rows);
    shard.source = source;
    for (int r = 0; r < rows; ++r) {
      for (int k = 0; k < dim; ++k) {
        shard.dense(r, k) = normal(rng) * (1.0 + spread.feature_step * (i % 3));
      }
      const double t = normal(rng) + spread.target_shift * i;
      shard.labels(r) = kind == "logistic" ? (t + shard.dense(r, 0) > 0.3 ? 1.0 : -1.0) : t;
    }
    net->a.push_back(shard.dense);
    net->b.push_back(shard.labels);
    net->problems.push_back(algorithms::MakeProblem({kind, l2, 0}, shard, 1.0 / rows));
    net->smoothness = std::max(net->smoothness, net->problems.back()->SmoothnessBound());
  }
  for (int i = 0; i < n; ++i) {
    algorithms::NodeSetup s = node::NodeSetupOf(graph, w, i);
    s.problem = net->problems[i].get();
    s.x0 = Vec::Constant(dim, 0.3 * i - 0.5);
    s.seed = 7 + i;
    net->setups.push_back(s);
  }
}

}  // namespace starling::testing
