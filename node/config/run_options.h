// Boost.Program_options bindings for RunConfig, shared by every binary so that the simulator,
// the daemon and the launcher accept the same names.
#pragma once

#include <boost/program_options.hpp>

#include "node/config/run_config.h"

namespace starling::node {

// Adds the run options (algorithm, problem, data, network, output) bound to *config.
void AddRunOptions(boost::program_options::options_description* options, RunConfig* config);

// Adds every method's own parameters (MethodParamSets()), one group per method, each storing
// what it parses (or its declared default) into *values. AddRunOptions calls it.
void AddMethodOptions(boost::program_options::options_description* options,
                      algorithms::ParamValues* values);

// Checks the run options, including values that no single option can check alone, every
// method's parameters against their declared ranges, and the chosen method's cross-checks;
// throws std::invalid_argument naming the option.
void ValidateRunConfig(const RunConfig& config);

// Parses argv into a variables_map with `options` (command line, then the config file named by
// --config if the options have one). Unknown options throw std::invalid_argument with the name.
boost::program_options::variables_map ParseCommandLine(
    int argc, const char* const* argv, const boost::program_options::options_description& options);

}  // namespace starling::node
