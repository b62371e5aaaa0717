// starlingd's command line: its options, their checks against each other and against the
// cluster file, and the fault plan. Shared by the daemon's main() and by the C ABI (capi/), so
// that a node embedded in a training process takes exactly the daemon's options.
#pragma once

#include <atomic>
#include <boost/program_options.hpp>
#include <memory>
#include <optional>
#include <string>

#include "node/config/fault_options.h"
#include "node/config/process_rank.h"
#include "node/daemon/daemon.h"
#include "node/daemon/join_run.h"

namespace starling::node {

struct DaemonCommandLine {
  DaemonOptions options;
  std::string log_level = "info";
  std::string keygen_prefix;  // --keygen PREFIX: write a key pair and exit
  bool help = false;          // --help: print help_text and exit
  std::string help_text;      // the usage and the option table
  // For JoinDaemonRun: --id/--rendezvous (join_run.h), the rank from the process manager with
  // --id auto, the fault options and which options were given.
  LaunchOptions launch;
  std::optional<ProcessRank> rank;
  FaultOptions fault_options;
  boost::program_options::variables_map vm;
  bool external_model = false;
  // With --join: the join ports and the member list, kept for as long as the node runs.
  std::shared_ptr<JoinSession> join_session;
};

// Parses argv (argv[0] is the program's name; options as starlingd --help lists them) and
// checks what needs no cluster file: the node's numbers, the node id (--id N, or auto: the
// process manager's rank, with "{id}" replaced in the file options; with --join the id comes
// later, from the members) and the run options. With
// --help or --keygen nothing else is checked. Throws std::invalid_argument naming the option.
// Does not touch the logger or the process. `external_model`: the node will exchange the
// caller's model (the C ABI, capi/): no data is read, so --data is refused rather than required.
DaemonCommandLine ParseDaemonCommandLine(int argc, const char* const* argv,
                                         bool external_model = false);

// The rest, once the logger is up: with --rendezvous, publishes this node and waits for the
// others; with --join, joins the run by its seeds (join_run.h: RendezvousTimeout or JoinTimeout
// after the deadline, `stop` ends the wait), then checks
// --nodes/--topology against the cluster file (which is read), the run options with the
// number of nodes, and builds the fault plan into cl->options. Throws std::invalid_argument
// or std::runtime_error naming the option or file.
void JoinDaemonRun(DaemonCommandLine* cl, const std::atomic<bool>* stop);

}  // namespace starling::node
