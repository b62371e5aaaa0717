// Run options as lines that two processes can compare, and the first option in which they
// differ, named as its command-line option with both values: what a node refused for other run
// options is told ("--step 0.05 here, 0.1 at node-2 (key ABCDEFGH...) at tcp://10.0.0.2:7000").
#pragma once

#include <string>
#include <vector>

#include "node/config/run_config.h"

namespace starling::node {

// The options every node of a run formed by seed join must share, one "name=value" per line:
// the run id's canonical text (node/config/run_id.h) for `nodes` nodes, with the --topology
// spec (a file: spec as the file's name and size) in place of the edge list, which the spec,
// --nodes and --seed determine.
std::vector<std::string> JoinOptionLines(const RunConfig& config, int nodes);

// The fingerprint of such lines (FNV-1a 64 of the lines joined by newlines).
uint64_t OptionLinesFingerprint(const std::vector<std::string>& lines);

// "" if the lines are equal; otherwise the first name whose value differs (or that one side
// lacks), as "--NAME VALUE here, VALUE at THERE" ('_' in a name becomes '-', as in the option;
// a number as the shortest decimal that is exactly it; a missing value is "(not set)").
std::string FirstDifference(const std::vector<std::string>& here,
                            const std::vector<std::string>& there, const std::string& there_name);

}  // namespace starling::node
