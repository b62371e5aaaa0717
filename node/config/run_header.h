// What a run's numbers are about, for the header line that starts every metrics file (the
// simulator's, each daemon's node-K.jsonl and the monitor's): the run id, how the labels were
// mapped and how the features were scaled, so that a file read later says what it measured.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "node/config/run_config.h"
#include "node/config/run_setup.h"

namespace starling::node {

// (key, value) pairs in a fixed order: run_id (as 0x%016x of RunIdFor(config, setup)), labels
// (LabelMap::Describe), scale (FeatureScaling::Describe).
std::vector<std::pair<std::string, std::string>> RunHeaderFields(const RunConfig& config,
                                                                 const RunSetup& setup);

}  // namespace starling::node
