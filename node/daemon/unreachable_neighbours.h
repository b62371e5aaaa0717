// Names the neighbours this node cannot connect to, and what to do about it. ZeroMQ retries a
// connection that fails, silently; a node waiting for a neighbour whose address refuses
// connections, or cannot be reached (a host with several interfaces that published the wrong
// one), would otherwise only say "waiting for node 0". The transport's guard follows each
// connection and finds the cause (net/security.h, ConnectTrouble); this logs it:
//   cannot connect to node 0 at tcp://192.168.99.1:7000 (network is unreachable; 40 attempts in
//   10 s): this host has no way to that address: if node 0's host has several interfaces, start
//   node 0 with --host ADDRESS, an address the other hosts reach
// Single-threaded, like the node loop that calls it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

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

class UnreachableNeighbours {
 public:
  UnreachableNeighbours(int64_t log_every_seconds, bool published, std::string cluster_file)
      : log_every_ms_(1000 * log_every_seconds),
        published_(published),
        cluster_file_(std::move(cluster_file)) {}

  // Logs (warn) each neighbour whose connection has failed for at least log_every_seconds, at
  // most once per log_every_seconds each. Cheap: the transport is asked at most every 500 ms.
  void Check(const net::Transport& transport, Clock::time_point now);

 private:
  int64_t log_every_ms_;
  bool published_;
  std::string cluster_file_;
  Clock::time_point next_check_{};
  std::map<int32_t, Clock::time_point> last_logged_;
};

}  // namespace starling::node
