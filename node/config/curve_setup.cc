#include "node/config/curve_setup.h"

#include <stdexcept>

#include "net/curve_keys.h"

namespace starling::node {

namespace {

std::string NoKeyMessage(const std::string& who) {
  return "no --secret-key: " + who +
         " encrypts and authenticates its traffic with CURVE by default. Make a key pair with "
         "'starlingd --keygen PREFIX', list each node's public key in the cluster file ('node ID "
         "ENDPOINT PUBLIC_KEY'; a probe's as 'probe PUBLIC_KEY') and pass --secret-key "
         "PREFIX.key, or pass --allow-plaintext on a network you trust";
}

// Builds the allow-list around `secret_key`; throws naming the cluster file.
net::CurveOptions Common(const topology::Cluster& cluster, const std::string& secret_key) {
  net::CurveOptions curve;
  curve.secret_key = secret_key;
  curve.public_key = net::CurvePublicKeyOf(curve.secret_key);
  std::string missing;
  int shown = 0;
  for (const auto& node : cluster.nodes) {
    if (node.public_key.empty()) {
      if (shown++ < 5) missing += (missing.empty() ? "" : ", ") + std::to_string(node.id);
      continue;
    }
    const std::string user = net::UserIdForNode(node.id);
    if (!curve.allowed.emplace(node.public_key, user).second) {
      throw std::invalid_argument(cluster.source + ": node " + std::to_string(node.id) +
                                  " has the same public key as " + curve.allowed[node.public_key] +
                                  "; every node needs its own key pair");
    }
    curve.server_keys[node.id] = node.public_key;
  }
  if (!missing.empty()) {
    throw std::invalid_argument(cluster.source + ": no public key for node " + missing +
                                " (with --secret-key every 'node' line needs its PUBLIC_KEY; "
                                "make key pairs with 'starlingd --keygen PREFIX')");
  }
  for (const std::string& key : cluster.probe_keys) {
    auto [it, inserted] = curve.allowed.emplace(key, net::kProbeUserId);
    if (!inserted && it->second != net::kProbeUserId) {
      throw std::invalid_argument(cluster.source + ": a 'probe' line repeats the key of node " +
                                  it->second.substr(1) + "; a probe needs its own key pair");
    }
  }
  return curve;
}

// Node `id`'s options around `secret_key` (from `key_source`, for messages).
net::CurveOptions NodeCurve(const topology::Cluster& cluster, int id, const std::string& secret_key,
                            const std::string& key_source) {
  net::CurveOptions curve = Common(cluster, secret_key);
  // Our peer port serves our neighbours only: a probe or another node has no business there
  // (with its key, a stranger to this link could stall it or flood it).
  for (int j : cluster.graph.Neighbors(id)) {
    const std::string& key = cluster.nodes.at(j).public_key;
    curve.peer_allowed.emplace(key, curve.allowed.at(key));
  }
  const std::string& listed = cluster.nodes.at(id).public_key;
  if (listed != curve.public_key) {
    throw std::invalid_argument(cluster.source + ": node " + std::to_string(id) + "'s public key " +
                                listed + " is not the public half of " + key_source +
                                " (whose public key is " + curve.public_key + ")");
  }
  return curve;
}

}  // namespace

std::optional<net::CurveOptions> NodeCurveOptions(const topology::Cluster& cluster, int id,
                                                  const std::string& secret_key_file,
                                                  bool allow_plaintext) {
  if (secret_key_file.empty()) {
    if (allow_plaintext) return std::nullopt;
    throw std::invalid_argument(NoKeyMessage("starlingd"));
  }
  return NodeCurve(cluster, id, net::ReadCurveKeyFile(secret_key_file, /*secret=*/true),
                   secret_key_file);
}

net::CurveOptions NodeCurveOptionsForKey(const topology::Cluster& cluster, int id,
                                         const std::string& secret_key) {
  return NodeCurve(cluster, id, secret_key, "the key pair this node made in memory");
}

std::optional<net::CurveOptions> ProbeCurveOptions(const topology::Cluster& cluster,
                                                   const std::string& secret_key_file,
                                                   bool allow_plaintext) {
  if (secret_key_file.empty()) {
    if (allow_plaintext) return std::nullopt;
    throw std::invalid_argument(NoKeyMessage("starling-probe"));
  }
  net::CurveOptions curve =
      Common(cluster, net::ReadCurveKeyFile(secret_key_file, /*secret=*/true));
  auto it = curve.allowed.find(curve.public_key);
  if (it == curve.allowed.end() || it->second != net::kProbeUserId) {
    throw std::invalid_argument(cluster.source + " has no line 'probe " + curve.public_key +
                                "' for the key in " + secret_key_file +
                                ": the nodes would refuse this probe");
  }
  return curve;
}

}  // namespace starling::node
