// Names the neighbours this node cannot connect to, and what to do about it. ZeroMQ retries a
// connection that fails, silently; a node waiting for a neighbour whose address refuses
// connections, or cannot be reached (a host with several interfaces that published the wrong
// one), would otherwise only say "waiting for node 0". The transport's guard follows each
// connection and finds the cause (net/security.h, ConnectTrouble); this logs it:
//   cannot connect to node 0 at tcp://192.168.99.1:7000 (network is unreachable; 40 attempts in
//   10 s): this host has no way to that address: if node 0's host has several interfaces, start
//   node 0 with --host ADDRESS, an address the other hosts reach
// The same fault seen from node 0: its own connections to its neighbours are up, but their
// answers, which come back over their connections to node 0's address, never arrive. Once every
// neighbour has been connected and silent for UnansweredSeconds, node 0 stops (exit 2) naming
// its address, rather than waiting for --give-up-s with the others.
// Single-threaded, like the node loop that calls it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "net/security.h"
#include "net/transport.h"
#include "node/daemon/daemon_clock.h"

namespace starling::node {

// The line for neighbour `peer` at `endpoint`. `published`: the endpoint is what that node
// published (--rendezvous, --join), so the advice is its --host; otherwise it is the cluster
// file's (`cluster_file`), and the advice is that file's line.
std::string UnreachableMessage(int peer, const std::string& endpoint,
                               const net::ConnectTrouble& trouble, bool published,
                               const std::string& cluster_file);

// How long every neighbour must have been connected (its handshake done: it runs, and takes our
// key) and silent before a node concludes that its own address does not reach them: half of
// --give-up-s, within [10 s, 30 s]. A running neighbour answers a HELLO within a poll turn, so
// 10 s of silence from all of them is far beyond a loaded machine's delays.
double UnansweredSeconds(int64_t give_up_seconds);

// The line with which node `self`, at `own_endpoint`, stops when `silent` (its neighbours, all of
// them) have not answered for `seconds`; the advice as in UnreachableMessage.
std::string UnansweredMessage(int self, const std::string& own_endpoint,
                              const std::vector<int32_t>& silent, double seconds, bool published,
                              const std::string& cluster_file);

class UnreachableNeighbours {
 public:
  UnreachableNeighbours(int self, int64_t log_every_seconds, int64_t give_up_seconds,
                        bool published, std::string cluster_file)
      : self_(self),
        log_every_ms_(1000 * log_every_seconds),
        unanswered_seconds_(UnansweredSeconds(give_up_seconds)),
        published_(published),
        cluster_file_(std::move(cluster_file)) {}

  // Logs (warn) each neighbour whose connection has failed for at least log_every_seconds, at
  // most once per log_every_seconds each. Cheap: the transport is asked at most every 500 ms.
  void Check(const net::Transport& transport, Clock::time_point now);

  // Non-empty (UnansweredMessage) once every neighbour's connection has been up for
  // UnansweredSeconds with nothing received from any of them: the node should stop. Neighbours
  // heard from once, or not yet connected, keep it empty.
  std::string Unanswered(const net::Transport& transport, Clock::time_point now);

 private:
  int self_;
  int64_t log_every_ms_;
  double unanswered_seconds_;
  bool published_;
  std::string cluster_file_;
  Clock::time_point next_check_{};
  std::map<int32_t, Clock::time_point> last_logged_;
  std::map<int32_t, Clock::time_point> connected_since_;  // first seen with a handshake done
};

}  // namespace starling::node
