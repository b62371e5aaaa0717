// starlingd's command line: its options, their checks against each other and against the
// cluster file, and the fault plan. Shared by the daemon's main() and by the C ABI (capi/), so
// that a node embedded in a training process takes exactly the daemon's options.
#pragma once

#include <string>

#include "node/daemon/daemon.h"

namespace starling::node {

struct DaemonCommandLine {
  DaemonOptions options;
  std::string log_level = "info";
  std::string keygen_prefix;  // --keygen PREFIX: write a key pair and exit
  bool help = false;          // --help: print help_text and exit
  std::string help_text;      // the usage and the option table
};

// Parses argv (argv[0] is the program's name; options as starlingd --help lists them) and
// checks it: the node's numbers, the run options, --nodes/--topology against the cluster file
// (which is read). With --help or --keygen nothing else is checked. Throws
// std::invalid_argument (or std::runtime_error for a file that cannot be read) naming the
// option or file. Does not touch the logger or the process. `external_model`: the node will
// exchange the caller's model (the C ABI, capi/): no data is read, so --data is refused rather
// than required.
DaemonCommandLine ParseDaemonCommandLine(int argc, const char* const* argv,
                                         bool external_model = false);

}  // namespace starling::node
