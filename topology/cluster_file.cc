#include "topology/cluster_file.h"

#include <fstream>
#include <map>
#include <stdexcept>
#include <utility>

#include "topology/text_file.h"

namespace starling::topology {
namespace {

constexpr int kMaxNodes = 1000000;
// ZeroMQ's Z85 alphabet (ZeroMQ RFC 32); a CURVE public key is 32 bytes = 40 characters.
constexpr char kZ85Alphabet[] =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
constexpr size_t kZ85KeyLength = 40;
// sun_path holds 108 bytes including the terminating NUL; libzmq rejects longer ipc paths.
constexpr size_t kMaxIpcPathLength = 107;

bool IsZ85Key(const std::string& field) {
  return field.size() == kZ85KeyLength &&
         field.find_first_not_of(kZ85Alphabet) == std::string::npos;
}

}  // namespace

std::string EndpointProblem(const std::string& endpoint) {
  const std::string kTcp = "tcp://";
  const std::string kIpc = "ipc://";
  const std::string expected =
      "endpoint '" + endpoint + "' must look like tcp://HOST:PORT or ipc://PATH";
  if (endpoint.compare(0, kIpc.size(), kIpc) == 0) {
    const std::string ipc_path = endpoint.substr(kIpc.size());
    if (ipc_path.empty()) return expected + " (empty ipc path)";
    if (ipc_path.size() > kMaxIpcPathLength) {
      return "endpoint '" + endpoint + "': ipc path longer than " +
             std::to_string(kMaxIpcPathLength) + " bytes";
    }
    return "";
  }
  if (endpoint.compare(0, kTcp.size(), kTcp) != 0) return expected;
  const std::string address = endpoint.substr(kTcp.size());
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return expected + " (no port)";
  const std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  if (host.empty()) return expected + " (empty host)";
  if (host.front() == '[') {
    // IPv6 literal: tcp://[::1]:7000.
    if (host.size() < 3 || host.back() != ']') return expected + " (bad IPv6 host)";
  } else if (host.find_first_of(":/[]") != std::string::npos) {
    return expected + " (bad host '" + host + "'; write IPv6 addresses as [ADDR])";
  }
  int port_number = 0;
  if (!internal::ParseNonNegativeInt(port, 65535, &port_number) || port_number == 0) {
    return "endpoint '" + endpoint + "': port '" + port + "' is not in 1..65535";
  }
  return "";
}

namespace {

struct PendingEdge {
  int line;
  int u;
  int v;
};

}  // namespace

Cluster ReadClusterFile(const std::string& path) {
  std::vector<internal::TextLine> lines = internal::ReadTextLines(path);
  std::map<int, int> line_of_id;                // node id -> line that declared it
  std::map<std::string, int> line_of_endpoint;  // endpoint -> line that declared it
  std::map<int, ClusterNode> nodes;
  std::vector<PendingEdge> edges;
  std::vector<std::string> probe_keys;
  for (internal::TextLine& line : lines) {
    std::vector<std::string>& f = line.fields;
    // Z85 keys may begin with '#': a 40-character Z85 word in the key position is a key, not a
    // comment.
    const bool key_field = f.size() >= 4 && f[0] == "node" && IsZ85Key(f[3]);
    const bool probe_key = f.size() >= 2 && f[0] == "probe" && IsZ85Key(f[1]);
    internal::StripComment(&f, key_field ? 3 : probe_key ? 1 : -1);
    if (f.empty()) continue;
    if (f[0] == "node") {
      if (f.size() != 3 && f.size() != 4) {
        internal::FailAt(path, line.number,
                         "expected 'node ID ENDPOINT [PUBLIC_KEY]', got " +
                             std::to_string(f.size()) + " fields");
      }
      ClusterNode node;
      if (!internal::ParseNonNegativeInt(f[1], kMaxNodes - 1, &node.id)) {
        internal::FailAt(path, line.number, "node id '" + f[1] + "' is not a non-negative integer");
      }
      if (auto it = line_of_id.find(node.id); it != line_of_id.end()) {
        internal::FailAt(
            path, line.number,
            "duplicate node id " + f[1] + " (first on line " + std::to_string(it->second) + ")");
      }
      node.endpoint = f[2];
      if (std::string reason = EndpointProblem(node.endpoint); !reason.empty()) {
        internal::FailAt(path, line.number, reason);
      }
      if (auto it = line_of_endpoint.find(node.endpoint); it != line_of_endpoint.end()) {
        internal::FailAt(path, line.number,
                         "duplicate endpoint " + node.endpoint + " (first on line " +
                             std::to_string(it->second) + ")");
      }
      if (f.size() == 4) {
        if (!IsZ85Key(f[3])) {
          internal::FailAt(path, line.number,
                           "public key '" + f[3] + "' is not a 40-character Z85 CURVE key");
        }
        node.public_key = f[3];
      }
      line_of_id[node.id] = line.number;
      line_of_endpoint[node.endpoint] = line.number;
      nodes[node.id] = std::move(node);
    } else if (f[0] == "edge") {
      if (f.size() != 3) {
        internal::FailAt(path, line.number,
                         "expected 'edge U V', got " + std::to_string(f.size()) + " fields");
      }
      PendingEdge edge{line.number, 0, 0};
      if (!internal::ParseNonNegativeInt(f[1], kMaxNodes - 1, &edge.u) ||
          !internal::ParseNonNegativeInt(f[2], kMaxNodes - 1, &edge.v)) {
        internal::FailAt(
            path, line.number,
            "edge endpoints '" + f[1] + " " + f[2] + "' are not non-negative integers");
      }
      if (edge.u == edge.v) {
        internal::FailAt(path, line.number, "self loop on node " + std::to_string(edge.u));
      }
      edges.push_back(edge);
    } else if (f[0] == "probe") {
      if (f.size() != 2 || !IsZ85Key(f[1])) {
        internal::FailAt(path, line.number,
                         "expected 'probe PUBLIC_KEY' with a 40-character Z85 "
                         "CURVE key");
      }
      probe_keys.push_back(f[1]);
    } else {
      internal::FailAt(path, line.number,
                       "unknown keyword '" + f[0] + "' (expected 'node', 'edge' or 'probe')");
    }
  }

  if (nodes.empty()) throw std::runtime_error(path + ": no 'node' lines");
  const int n = static_cast<int>(nodes.size());
  // Ids are distinct, so they are exactly 0..n-1 iff the largest is n-1.
  if (nodes.rbegin()->first != n - 1) {
    std::string missing;
    int shown = 0;
    for (int id = 0; id < n && shown < 5; ++id) {
      if (nodes.count(id) == 0) {
        missing += (shown++ ? ", " : "") + std::to_string(id);
      }
    }
    const auto& [bad_id, bad_line] = *line_of_id.rbegin();
    internal::FailAt(path, bad_line,
                     "node id " + std::to_string(bad_id) + " but there are " + std::to_string(n) +
                         " nodes; ids must be 0.." + std::to_string(n - 1) + " (missing " +
                         missing + ")");
  }

  Cluster cluster;
  cluster.source = path;
  cluster.graph = Graph(n);
  cluster.probe_keys = std::move(probe_keys);
  for (auto& [id, node] : nodes) cluster.nodes.push_back(std::move(node));
  for (const PendingEdge& edge : edges) {
    if (edge.u >= n || edge.v >= n) {
      internal::FailAt(path, edge.line,
                       "edge names unknown node " + std::to_string(edge.u >= n ? edge.u : edge.v) +
                           " (nodes are 0.." + std::to_string(n - 1) + ")");
    }
    cluster.graph.AddEdge(edge.u, edge.v);  // a repeated edge is harmless and ignored
  }
  if (!cluster.graph.IsConnected()) {
    throw std::runtime_error(
        path + ": graph is disconnected: " + internal::DescribeUnreachable(cluster.graph));
  }
  return cluster;
}

bool LooksLikeClusterFile(const std::string& path) {
  std::vector<internal::TextLine> lines;
  try {
    lines = internal::ReadTextLines(path);
  } catch (const std::runtime_error&) {
    return false;  // the edge-list reader will report the unreadable file
  }
  for (internal::TextLine& line : lines) {
    internal::StripComment(&line.fields);
    if (!line.fields.empty()) return line.fields[0] == "node";
  }
  return false;
}

void WriteClusterFile(const Cluster& cluster, const std::string& path) {
  const int n = cluster.graph.num_nodes();
  if (static_cast<int>(cluster.nodes.size()) != n) {
    throw std::invalid_argument("WriteClusterFile: " + std::to_string(cluster.nodes.size()) +
                                " nodes but the graph has " + std::to_string(n));
  }
  for (int i = 0; i < n; ++i) {
    if (cluster.nodes[i].id != i) {
      throw std::invalid_argument("WriteClusterFile: nodes[" + std::to_string(i) + "] has id " +
                                  std::to_string(cluster.nodes[i].id));
    }
  }
  std::ofstream out(path);
  if (!out) throw std::runtime_error(path + ": cannot open for writing");
  out << "# Starling cluster file: " << n << " nodes, " << cluster.graph.num_edges() << " edges\n";
  for (const ClusterNode& node : cluster.nodes) {
    out << "node " << node.id << " " << node.endpoint;
    if (!node.public_key.empty()) out << " " << node.public_key;
    out << "\n";
  }
  for (const auto& [u, v] : cluster.graph.Edges()) out << "edge " << u << " " << v << "\n";
  for (const std::string& key : cluster.probe_keys) out << "probe " << key << "\n";
  out.close();
  if (!out) throw std::runtime_error(path + ": write failed");
}

}  // namespace starling::topology
