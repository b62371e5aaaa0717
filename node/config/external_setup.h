// The RunSetup of a node whose model lives outside Starling (the C ABI, capi/starling.h): a
// training process owns the model and computes its steps; the node only exchanges it. A graph
// and per-node seeds as in any run, no data and no problems; the dimension is the caller's.
#pragma once

#include "algorithms/types.h"
#include "node/config/run_config.h"
#include "node/config/run_setup.h"

namespace starling::node {

// Every node's place in the graph of `config` (its --topology: the daemon's cluster file), with
// the same seeds and neighbour order as any other run; node `scope.only_node`'s starting point
// is `x0` (the caller's model), the others' are zeros of its size (no node sees them). Throws
// std::invalid_argument for an empty model or a node id out of range. `problem` (not owned, may
// be null) is that node's objective for round-based methods (NodeSetup::problem only: the
// reporter and the divergence guard, which would evaluate it, see no problem).
RunSetup BuildExternalSetup(const RunConfig& config, const BuildScope& scope, const Vec& x0,
                            const algorithms::Problem* problem = nullptr);

}  // namespace starling::node
