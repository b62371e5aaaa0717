// Explicit matrices from text files: a user's own mixing matrix W or graph Laplacian Lap = I - W
// (symmetric, rows summing to 1), and the dense numeric tables that starting points and reference
// solutions come in.
#pragma once

#include <string>

#include <Eigen/Core>

#include "topology/graph.h"

namespace starling::topology {

// A dense table of finite numbers: one row per line, fields separated by commas and/or blanks,
// blank lines and lines starting with '#' skipped. Every row must have the first row's length.
// Throws std::runtime_error "PATH:LINE: reason" (or "PATH: reason").
Eigen::MatrixXd ReadMatrixFile(const std::string& path);

// A mixing matrix from `path`, which holds W (`laplacian` false) or Lap = I - W (`laplacian`
// true). It must be `nodes` x `nodes`, symmetric, with rows of W summing to 1 (within 1e-9 of the
// largest entry), and its non-zero off-diagonal pattern must be a connected graph. Returns W.
// Throws std::runtime_error naming the file and what is wrong.
Eigen::MatrixXd ReadMixingFile(const std::string& path, bool laplacian, int nodes);

// The graph of W's non-zero off-diagonal entries.
Graph GraphOfMixing(const Eigen::MatrixXd& w);

}  // namespace starling::topology
