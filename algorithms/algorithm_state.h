// The saved state of an algorithm, for checkpoints (node/daemon/checkpoint.h): what a node restarted
// from it needs to continue exactly where it stopped. Algorithms fill and read it in a fixed
// order of their own; the checkpoint file stores every double bit for bit, so a round-based run
// resumed from a checkpoint goes on with the same iterates as one that never stopped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/types.h"

namespace starling::algorithms {

struct AlgorithmState {
  std::string algorithm;            // name() of the algorithm that wrote it
  std::vector<int64_t> ints;
  std::vector<double> reals;
  std::vector<Vec> vectors;
  std::vector<std::string> texts;   // e.g. a random engine's state
};

// Throws std::invalid_argument unless `state` was written by `algorithm` with these counts (a
// checkpoint of another algorithm, or of another version of this one).
void CheckStateShape(const AlgorithmState& state, const std::string& algorithm, size_t ints,
                     size_t reals, size_t vectors, size_t texts);

}  // namespace starling::algorithms
