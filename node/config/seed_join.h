// Joining a run by a seed (starlingd --join, starling-probe monitor --join): a process that knows
// only the addresses of some members ("seeds") and the trust file contacts them, learns the
// members and the run's options, and waits until the run has --nodes members. No file is shared:
// every node then builds the same cluster from the member list (node/config/member_view.h).
//
// What a joiner does, in turn, until its view is complete (or the deadline):
//   - a seed whose key it does not know yet: asks its key port for the key (plaintext) and takes
//     the answer only if the trust file lists it (a seed that answers with this process's own key
//     is this process, and is skipped);
//   - then, over CURVE with that key, sends the seed its view (its own record among it) and run
//     options, and merges the view it gets back; afterwards it syncs with the members it has
//     learned, in turn, every sync_every;
//   - a seed that is down (no connection: its cause is named), does not answer, or answers with
//     an untrusted key is retried with a growing back-off (0.2 s to 5 s), and the next one
//     tried; every seed tried is logged;
//   - every log_every_seconds it logs how many of the members it has, which, and which trusted
//     keys it has not heard of.
// A refusal ends the join at once with an error that names why and what to do: another run
// options (the first option that differs, both values), this process's key not trusted there,
// the address it publishes not reachable from there (--host), the run complete without it. A
// stop signal or the deadline withdraws its record (best effort: one sync) so that the others
// do not count it.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "net/envelope.h"
#include "node/config/member_view.h"
#include "node/config/run_config.h"
#include "node/config/trust_file.h"
#include "topology/cluster_file.h"

namespace starling::node {

struct Seed {
  std::string host;  // a name, an IPv4 address, or [an IPv6 address]
  int port = 0;      // its PORT (its join ports are PORT+2 and PORT+3)
  std::string text;  // HOST:PORT as shown in messages
};

// Parses --join's "HOST:PORT[,HOST:PORT...]"; a HOST without :PORT means `default_port`.
// Throws std::invalid_argument naming --join and the entry: an empty entry or host, a host with
// spaces or control characters, a port outside 1..65532 (PORT+3 must be a port), more than 64.
std::vector<Seed> ParseSeeds(const std::string& list, int default_port);

// Thrown when the deadline passes before the run has its members; starlingd exits 3 for it (gave
// up waiting), as for a rendezvous.
class JoinTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown when a stop signal ends the wait; starlingd exits 0 for it, as for a signal later.
class JoinStopped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SeedJoinRequest {
  std::vector<Seed> seeds;
  const TrustFile* trust = nullptr;  // not owned
  std::string secret_key, public_key;
  std::vector<std::string> options;  // JoinOptionLines
  uint64_t fingerprint = 0;
  int nodes = 0;
  // This node's record (it is in the shared view already); nullopt for a monitor, which only
  // watches.
  std::optional<net::MemberRecord> self;
  double timeout_seconds = 300;
  double log_every_seconds = 10;
  const std::atomic<bool>* stop = nullptr;
  std::chrono::milliseconds sync_every{500};
  std::chrono::milliseconds request_timeout{3000};
};

// The trust file and this process's key pair (from its secret key file), checked: the public key
// must be in the trust file. `who` ("node", "monitor") is for messages. Throws
// std::runtime_error naming the file for an unreadable or malformed file, std::invalid_argument
// naming --secret-key for a key the trust file lacks.
struct JoinKeys {
  TrustFile trust;
  std::string secret_key, public_key;
};
JoinKeys ReadJoinKeys(const std::string& trust_path, const std::string& secret_key_file,
                      const std::string& who);

// The request's fields that come from the command line: the seeds (a HOST alone at
// `default_port`), the keys (not owned: `keys` outlives the request), the run options of
// `config` on `nodes` nodes and their fingerprint.
SeedJoinRequest MakeSeedJoinRequest(const std::string& seeds, int default_port,
                                    const JoinKeys& keys, const RunConfig& config, int nodes);

// The run's cluster: the members (sorted by key) on the graph of config.topology for their
// number of nodes (ClusterFromMembers).
topology::Cluster JoinedCluster(const std::vector<net::MemberRecord>& members,
                                const RunConfig& config, const TrustFile& trust);

// Joins as above; returns the run's members sorted by key (node i is the i-th). A node is done
// when its view is complete and it has been admitted: a member has answered with its record, or
// another process has reached its join port. Throws JoinTimeout at the deadline, JoinStopped for
// a stop signal, std::runtime_error for a refusal.
std::vector<net::MemberRecord> JoinBySeeds(const SeedJoinRequest& request, SharedMemberView* view);

}  // namespace starling::node
