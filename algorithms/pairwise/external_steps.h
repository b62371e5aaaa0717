// A pairwise algorithm whose local steps can be made outside it: the C ABI's caller trains the
// model with its own optimizer and hands each step over (capi/external_pairwise.h). Taking one
// sets the model to the caller's and advances the cadence and the counters as LocalStep does;
// exchanges, merges, compression and checkpoints stay the algorithm's own.
#pragma once

#include "algorithms/types.h"

namespace starling::algorithms {

class TakesExternalSteps {
 public:
  virtual ~TakesExternalSteps() = default;
  // In place of LocalStep: the model after a local step computed elsewhere is `x`.
  virtual void ExternalStep(const Vec& x) = 0;
};

}  // namespace starling::algorithms
