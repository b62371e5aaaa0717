// How a starlingd finds its place in a run without a hand-written cluster file: `--id auto` (the
// rank from mpirun's, srun's or PMI's environment, node/config/process_rank.h), `--rendezvous
// DIR` (the cluster file agreed through a shared directory, node/config/rendezvous.h), or `--join
// HOST:PORT,...` (the members learned from any member, with no file shared at all,
// node/config/seed_join.h). `--cluster FILE --id N` works as before.
//
// Ports: a node listens on its --port PORT (peers) and PORT+1 (telemetry), with --join also on
// PORT+2 and PORT+3 (net/endpoint.h); a node that a process manager started as the L-th on its
// host adds 4L, so that nodes sharing a host never collide. A hand-written cluster file names
// each node's PORT in its endpoint. So one firewall rule serves all three ways: TCP PORT to
// PORT+3 (7000-7003 by default) from the other hosts.
#pragma once

#include <boost/program_options.hpp>
#include <memory>
#include <optional>
#include <string>

#include "node/config/process_rank.h"
#include "node/daemon/daemon.h"

namespace starling::node {

struct LaunchOptions {
  std::string id;             // --id: a node id or "auto"
  std::string rendezvous;     // --rendezvous DIR
  std::string join;           // --join HOST:PORT[,HOST:PORT...]
  std::string trust;          // --trust FILE
  std::string host = "auto";  // the address other nodes reach this node at
  int port = 7000;            // this node's first port (plus 4 x its local rank)
  double rendezvous_timeout_s = 120;
  double join_timeout_s = 300;
};

// What a run formed with --join keeps for as long as the node runs: its join ports (which go on
// answering the other processes), its view of the members and its private cluster file.
class JoinSession;

// --rendezvous, --join, --trust, --host, --port, --rendezvous-timeout-s, --join-timeout-s (--id
// is among the node options).
void AddLaunchOptions(boost::program_options::options_description* options, LaunchOptions* l);

// The node id from --id: a number, or with "auto" the process manager's rank (returned in
// *rank). Throws std::invalid_argument naming --id.
int ResolveNodeId(const LaunchOptions& launch, std::optional<ProcessRank>* rank);

// Replaces "{id}" by the node id in the file options (--metrics, --final-model, --checkpoint,
// --secret-key), so that one command line serves every rank.
void SubstituteNodeId(DaemonOptions* d);

// With --rendezvous: checks the options, makes or loads the key pair (a key made here stays in
// d->secret_key, in memory only), publishes this node, waits for the others and sets
// d->cluster_file to the agreed file. With --join: checks the options, opens the join ports,
// joins the run by its seeds and sets d->cluster_file to the cluster built from the members and
// d->id to this node's place among them (the "{id}" of the file options replaced then); *session
// keeps what must live as long as the node. Either way checks the launcher's size against the
// number of nodes. `vm` tells which options were given. Logs with spdlog; throws
// RendezvousTimeout or JoinTimeout (exit 3) or std::invalid_argument / std::runtime_error
// (exit 2).
void JoinRun(const LaunchOptions& launch, const std::optional<ProcessRank>& rank,
             const boost::program_options::variables_map& vm, const std::atomic<bool>* stop,
             DaemonOptions* d, std::shared_ptr<JoinSession>* session);

// This host's address as others see it: the source address of the route to the outside (no
// packet is sent); without such a route, the first IPv4 address of an interface that is up and
// not loopback; else 127.0.0.1 (with *loopback_only set).
std::string DefaultHostAddress(bool* loopback_only);

}  // namespace starling::node
