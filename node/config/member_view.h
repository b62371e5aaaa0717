// The members of a run being formed by seed join (starlingd --join), as one process knows them.
//
// Every node keeps a view, merges into it the views of the nodes it talks to, and starts when
// its view holds --nodes live members: the view is then complete, and final (the run's members
// do not change; a complete view is adopted whole by a node that has none yet). Every node
// numbers the members by their sorted public keys and builds the same cluster from them and
// --topology (ClusterFromMembers), so no file is shared.
//
// A node is its key: records are kept per key, and the merge of two records of one key keeps
// the one with the higher incarnation (a restarted node's), at equal incarnations a withdrawn one
// (the node stopped before the run started). These rules make views converge whatever the order
// of the exchanges.
//
// Records from other processes are untrusted (RecordProblem): a record is taken only if its key
// is in the trust file, its endpoint is tcp://HOST:PORT with room for the join ports, its host
// name printable and at most 255 bytes; a live record at an endpoint another live key holds is
// refused. Not thread-safe: SharedMemberView wraps one for a node's two threads.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "net/envelope.h"
#include "node/config/trust_file.h"
#include "topology/cluster_file.h"
#include "topology/graph.h"

namespace starling::node {

// "" if `record` may be taken, else why not (naming the field).
std::string RecordProblem(const net::MemberRecord& record, const TrustFile& trust);

class MemberView {
 public:
  // `trust` is not owned and outlives the view.
  MemberView(int nodes, const TrustFile* trust) : nodes_(nodes), trust_(trust) {}

  // Sets this process's own record (a node's; a monitor has none). Returns "" or why it cannot
  // be taken (as Merge).
  std::string SetSelf(const net::MemberRecord& self);

  // Merges records told by `source` (for messages): each is validated, then kept by the rules
  // above. Returns the problems of the records refused (the others are merged). Does nothing to
  // a complete view.
  std::vector<std::string> Merge(const std::vector<net::MemberRecord>& records,
                                 const std::string& source);
  // Takes a complete view told by `source` in place of this incomplete one. Returns "" or why
  // not: a record refused, not exactly `nodes` live members, or (with `self_key`) a view without
  // this node. A complete view keeps its own.
  std::string AdoptComplete(const std::vector<net::MemberRecord>& records,
                            const std::string& source, const std::string& self_key);

  int nodes() const { return nodes_; }
  bool complete() const { return complete_; }
  int live_count() const;
  // Every record (withdrawn ones too), sorted by key: what is sent.
  std::vector<net::MemberRecord> Records() const;
  // The live records sorted by key: node i of the run is the i-th.
  std::vector<net::MemberRecord> LiveMembers() const;
  // The live record of `key`, or nullptr.
  const net::MemberRecord* Live(const std::string& key) const;

 private:
  // Keeps `record` if the rules say so; "" or why it was refused.
  std::string Take(const net::MemberRecord& record);
  void UpdateComplete();

  int nodes_;
  const TrustFile* trust_;
  std::map<std::string, net::MemberRecord> records_;  // by key
  bool complete_ = false;
};

// A view shared by a node's join service thread and its main thread.
struct SharedMemberView {
  SharedMemberView(int nodes, const TrustFile* trust) : view(nodes, trust) {}
  std::mutex mutex;
  MemberView view;
  // Another process synced with this node's join port and was answered (so its record, in the
  // answer, travels on with an address that was reached).
  bool reached = false;
};

// The cluster of a complete view: node i is the i-th of `members` (sorted by key), the edges
// those of `graph` (built from --topology on members.size() nodes), and every key of the trust
// file that is not a member's a probe key (in key order), so that a monitor whose key is trusted
// is admitted to the telemetry. Throws std::invalid_argument if the sizes differ.
topology::Cluster ClusterFromMembers(const std::vector<net::MemberRecord>& members,
                                     const topology::Graph& graph, const TrustFile& trust,
                                     const std::string& source);

}  // namespace starling::node
