#include "algorithms/algorithm_state.h"

#include <stdexcept>

namespace starling::algorithms {

void CheckStateShape(const AlgorithmState& state, const std::string& algorithm, size_t ints,
                     size_t reals, size_t vectors, size_t texts) {
  if (state.algorithm != algorithm) {
    throw std::invalid_argument("the checkpoint holds the state of '" + state.algorithm +
                                "', not of '" + algorithm + "'");
  }
  if (state.ints.size() != ints || state.reals.size() != reals ||
      state.vectors.size() != vectors || state.texts.size() != texts) {
    throw std::invalid_argument("the checkpoint of '" + algorithm +
                                "' has an unexpected layout (written by another version?)");
  }
}

}  // namespace starling::algorithms
