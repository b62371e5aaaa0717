// The run id every message carries: a hash of the parts of the run configuration that every
// node must share (docs/reference/wire-protocol.md). Files are named by their size and a hash of
// their contents, not by their paths: the same data may sit in different folders, under other
// names, on different hosts.
#pragma once

#include <cstdint>
#include <string>

#include "node/config/run_config.h"
#include "node/config/run_setup.h"
#include "topology/graph.h"

namespace starling::node {

// A file as the run id names it: "SIZE:HASH", its size in bytes and a 64-bit hash of its
// contents (of all of it up to 16 MiB, of 64 blocks spread over a larger one); "-" for no path,
// "?" for a file that cannot be read.
std::string FileIdentity(const std::string& path);

// Canonical text: fixed key order, full-precision numbers, the graph's edge list, and of the
// method parameters only the chosen method's own (in its declaration order), so that a value
// given for another method does not make another run. This is only the options' part of a run's
// id: a daemon's HELLO and checkpoints carry RunIdFor(config, setup) below, which a test that
// talks to daemons or reads their checkpoints must use too.
std::string CanonicalRunText(const RunConfig& config, const topology::Graph& graph);
uint64_t RunIdFor(const RunConfig& config, const topology::Graph& graph);
// The id of a run as built: CanonicalRunText of its options and graph, plus what was fitted on
// its training data (the label map and the feature scaling, in full precision), so that nodes
// whose files differ in content but not in name and size do not pass for one run. Every program
// of a run (daemons, monitor, tests that talk to daemons) uses this one.
std::string CanonicalRunText(const RunConfig& config, const RunSetup& setup);
uint64_t RunIdFor(const RunConfig& config, const RunSetup& setup);

}  // namespace starling::node
