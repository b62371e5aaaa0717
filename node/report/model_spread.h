// The network-level view of N node models: their average x-bar and the consensus distance
// (1/N) sum_i ||x_i - x-bar||^2. Shared by the simulators and the monitor.
#pragma once

#include <vector>

#include "algorithms/types.h"

namespace starling::node {

struct ModelSpread {
  Vec mean;
  double consensus = 0.0;
};

// `models` must be non-empty and all of one size.
ModelSpread SpreadOf(const std::vector<const Vec*>& models);

}  // namespace starling::node
