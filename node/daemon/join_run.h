// How a starlingd finds its place in a run when a process manager starts it: `--id auto` (the
// rank from mpirun's, srun's or PMI's environment, node/config/process_rank.h) and `--rendezvous
// DIR` (the cluster file agreed through a shared directory, node/config/rendezvous.h) instead of
// a hand-written cluster file. Both are optional: `--cluster FILE --id N` works as before.
#pragma once

#include <boost/program_options.hpp>
#include <optional>
#include <string>

#include "node/config/process_rank.h"
#include "node/daemon/daemon.h"

namespace starling::node {

struct LaunchOptions {
  std::string id;             // --id: a node id or "auto"
  std::string rendezvous;     // --rendezvous DIR
  std::string host = "auto";  // the address other nodes reach this node at
  int port_base = 7000;       // node K binds port_base + 2K (telemetry port_base + 2K + 1)
  double rendezvous_timeout_s = 120;
};

// --rendezvous, --host, --port-base, --rendezvous-timeout-s (--id is among the node options).
void AddLaunchOptions(boost::program_options::options_description* options, LaunchOptions* l);

// The node id from --id: a number, or with "auto" the process manager's rank (returned in
// *rank). Throws std::invalid_argument naming --id.
int ResolveNodeId(const LaunchOptions& launch, std::optional<ProcessRank>* rank);

// Replaces "{id}" by the node id in the file options (--metrics, --final-model, --checkpoint,
// --secret-key), so that one command line serves every rank.
void SubstituteNodeId(DaemonOptions* d);

// With --rendezvous: checks the options, makes or loads the key pair (a key made here stays in
// d->secret_key, in memory only), publishes this node, waits for the others and sets
// d->cluster_file to the agreed file. Either way checks the launcher's size against the number
// of nodes. `vm` tells which options were given. Logs with spdlog; throws RendezvousTimeout
// (exit 3) or std::invalid_argument / std::runtime_error (exit 2).
void JoinRun(const LaunchOptions& launch, const std::optional<ProcessRank>& rank,
             const boost::program_options::variables_map& vm, const std::atomic<bool>* stop,
             DaemonOptions* d);

// This host's address as others see it: the source address of the route to the outside (no
// packet is sent); without such a route, the first IPv4 address of an interface that is up and
// not loopback; else 127.0.0.1 (with *loopback_only set).
std::string DefaultHostAddress(bool* loopback_only);

}  // namespace starling::node
