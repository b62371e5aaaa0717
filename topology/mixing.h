// Mixing matrices (docs/explanations/algorithms/gossip-gradient.md). Dense n x n: n is at most a
// few hundred nodes here.
#pragma once

#include <Eigen/Core>

#include "topology/graph.h"

namespace starling::topology {

// Metropolis-Hastings: w_ij = 1/(max(deg_i, deg_j) + 1) on edges, w_ii = 1 - sum_j w_ij.
// Symmetric and doubly stochastic.
Eigen::MatrixXd MetropolisHastings(const Graph& graph);
// Lazy version c W + (1 - c) I with c = 0.9 / (1 - min_i W_ii) as in the Network-DANE code, so
// the smallest diagonal entry becomes 0.1. Unlike that code, c is capped at 1: when every W_ii is
// already >= 0.1 (e.g. MH on a ring, or the OPTRA graph) W is returned unchanged rather than
// extrapolated. Symmetric doubly stochastic in, symmetric doubly stochastic out.
Eigen::MatrixXd Lazy(const Eigen::MatrixXd& w);
// The c that Lazy uses for `w` (1 when W is returned unchanged).
double LazyFactor(const Eigen::MatrixXd& w);
// L = I - W. Non-square input throws std::invalid_argument (as does Lazy).
Eigen::MatrixXd LaplacianOf(const Eigen::MatrixXd& w);

}  // namespace starling::topology
