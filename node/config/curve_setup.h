// From the cluster file and a secret key file to the CURVE options of a node or a probe
// (security is on by default; plaintext must be asked for: docs/how-to/security.md).
//
// The telemetry port's allow-list is every key the cluster file lists: node K's key admits a
// connection as node K (user id "n<K>"), a 'probe KEY' line admits a probe. The peer port's is
// the keys of the node's neighbours in the cluster file's graph only. Keys must be distinct,
// since a key names exactly one identity.
#pragma once

#include <optional>
#include <string>

#include "net/security.h"
#include "topology/cluster_file.h"

namespace starling::node {

// Node `id`'s CURVE options, or nullopt for plaintext. With a secret key file: every node line
// must carry a key and node `id`'s must be the public half of the secret key. Without one: nullopt
// if allow_plaintext, otherwise std::invalid_argument explaining how to make keys.
std::optional<net::CurveOptions> NodeCurveOptions(const topology::Cluster& cluster, int id,
                                                  const std::string& secret_key_file,
                                                  bool allow_plaintext);

// As NodeCurveOptions, with the secret key itself: the pair a node makes in memory for a
// rendezvous run (node/config/rendezvous.h), which is never written anywhere.
net::CurveOptions NodeCurveOptionsForKey(const topology::Cluster& cluster, int id,
                                         const std::string& secret_key);

// A probe's CURVE options (server keys of every node), or nullopt for plaintext; the probe's
// public key must be on a 'probe' line. Same rules for the missing key file as above.
std::optional<net::CurveOptions> ProbeCurveOptions(const topology::Cluster& cluster,
                                                   const std::string& secret_key_file,
                                                   bool allow_plaintext);

}  // namespace starling::node
