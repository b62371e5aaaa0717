// Weighted neighbourhood sums, the one piece of arithmetic every round-based algorithm shares.
#pragma once

#include <vector>

#include "algorithms/round/round_algorithm.h"
#include "algorithms/types.h"

namespace starling::algorithms {

// out = sum_{j in {i} U N(i)} W_ij v_j, where v_i = self.segment(offset, len) and v_j is the same
// segment of the neighbour's payload inbox[k]. Terms are added in ascending node id order (the
// node itself included at its place), so every driver computes bit-identical results.
void MixSegment(const NodeSetup& setup, const Vec& self, const std::vector<const Vec*>& inbox,
                Eigen::Index offset, Eigen::Index len, Vec* out);

// Checks the inbox has one payload per neighbour, each of `expected_size` doubles. Throws
// std::logic_error (a driver bug, not bad network input: drivers validate sizes first).
void CheckInbox(const NodeSetup& setup, const std::vector<const Vec*>& inbox,
                Eigen::Index expected_size);

}  // namespace starling::algorithms
