// The RunSetup of the diffusion used for topology inference
// (docs/explanations/algorithms/diffusion.md): a graph and
// per-node seeds, no data and no problems. Every node's state is one scalar (dim = 1).
#pragma once

#include "node/config/run_config.h"
#include "node/config/run_setup.h"

namespace starling::node {

// Called by BuildRunSetup for --algorithm diffusion. Same seeds and neighbour order as any other
// run, so that the simulator and the daemons draw the same noise. Throws like BuildRunSetup.
RunSetup BuildDiffusionSetup(const RunConfig& config, const BuildScope& scope);

}  // namespace starling::node
