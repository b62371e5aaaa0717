// The cluster file (docs/reference/cluster-file.md), read by every node, the launcher and
// the probe:
//   node ID ENDPOINT [PUBLIC_KEY]     one per node, ids 0..N-1 each exactly once
//   edge U V                          one per undirected edge
//   probe PUBLIC_KEY                  a probe's CURVE key, admitted to every node's telemetry
//   # comment                         also after a line's fields
// A '#' starts a comment at the start of a line or after whitespace, so '#' inside a field is
// data. A Z85 key may itself begin with '#': in the key position a 40-character Z85 word is
// read as the key, anything else starting with '#' as a comment.
// Lines may come in any order; a repeated edge counts once.
#pragma once

#include <string>
#include <vector>

#include "topology/graph.h"

namespace starling::topology {

struct ClusterNode {
  int id = 0;
  std::string endpoint;    // tcp://HOST:PORT (HOST may be [IPv6]; PORT 1..65535) or ipc://PATH
  std::string public_key;  // Z85 CURVE public key (40 characters), empty if none given
};

struct Cluster {
  std::vector<ClusterNode> nodes;  // indexed by id
  Graph graph;
  std::vector<std::string> probe_keys;  // Z85 public keys of the 'probe' lines
  std::string source;                   // path it was read from
};

// Throws std::runtime_error "PATH:LINE: reason" for malformed lines (unknown keyword, field
// count, non-integer id, bad endpoint or key), duplicate ids or endpoints, self loops, edges
// naming unknown nodes, and ids that are not 0..N-1; "PATH: reason" for an unreadable file, no
// node lines, or a disconnected graph (naming the first nodes unreachable from node 0).
Cluster ReadClusterFile(const std::string& path);
// An empty string if `endpoint` is a usable peer address (tcp://HOST:PORT, ipc://PATH as above),
// else the reason it is not (shared with the rendezvous, which reads endpoints from other hosts).
std::string EndpointProblem(const std::string& endpoint);
// True if the file's first meaningful line starts with "node" (used to tell cluster files from
// edge lists). False, not an exception, if the file cannot be read.
bool LooksLikeClusterFile(const std::string& path);
// Writes nodes in id order, then edges. Throws std::invalid_argument if cluster.nodes is not
// exactly ids 0..graph.num_nodes()-1 in order, std::runtime_error if the file cannot be written.
// Endpoints and keys are written as given (not validated).
void WriteClusterFile(const Cluster& cluster, const std::string& path);

}  // namespace starling::topology
