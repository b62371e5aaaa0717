// The method parameters of every registered algorithm, as node/config sees them: each method
// declares its own (algorithms/params.h, next to its code); the options, their validation and the
// run id are derived from these declarations here.
#pragma once

#include <string>
#include <vector>

#include "algorithms/params.h"

namespace starling::node {

// Every method's parameter table, each once (a family shares one), in --help order.
std::vector<const algorithms::ParamSet*> MethodParamSets();
// The table of `algorithm`'s parameters; null if it has none or is unknown.
const algorithms::ParamSet* MethodParamsOf(const std::string& algorithm);

// False for the methods without an objective (the synchronous and the pairwise diffusion of
// topology inference, needs_problem = false in their registries): they take no --data. True for
// an unknown name, whose error comes from the method lookup.
bool MethodNeedsData(const std::string& algorithm);

// One warning per parameter of another method's table that `values` sets to something other
// than its default ("--gossip-bits 4: not read by --algorithm optra (a parameter of ...);
// ignored"): the run goes on without it, as it did before this check, but says what it assumed.
// Values equal to the default say nothing (the parsers fill in every default). Empty for an
// unknown algorithm, whose error comes from the method lookup.
std::vector<std::string> IgnoredMethodParams(const std::string& algorithm,
                                             const algorithms::ParamValues& values);

}  // namespace starling::node
