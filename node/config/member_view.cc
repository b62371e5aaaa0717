#include "node/config/member_view.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "net/curve_keys.h"
#include "net/endpoint.h"

namespace starling::node {

namespace {

constexpr size_t kMaxHostLength = 255;

bool Printable(const std::string& s) {
  for (unsigned char c : s) {
    if (c < ' ' || c == 127) return false;
  }
  return true;
}

}  // namespace

std::string RecordProblem(const net::MemberRecord& record, const TrustFile& trust) {
  if (!net::IsZ85Key(record.key)) return "key is not a 40-character Z85 CURVE key";
  if (trust.Find(record.key) == nullptr) {
    return "key " + ShortKey(record.key) + " is not in " + trust.path;
  }
  if (record.endpoint.rfind("tcp://", 0) != 0) {
    return "endpoint '" + record.endpoint.substr(0, 80) + "' is not tcp://HOST:PORT";
  }
  if (std::string reason = topology::EndpointProblem(record.endpoint); !reason.empty()) {
    return reason;
  }
  try {
    net::TcpEndpointAtOffset(record.endpoint, net::kKeyPortOffset);
  } catch (const std::invalid_argument&) {
    return "endpoint " + record.endpoint + ": its port leaves no room for the join ports (PORT+" +
           std::to_string(net::kKeyPortOffset) + " must be at most 65535)";
  }
  if (record.host.size() > kMaxHostLength || !Printable(record.host)) {
    return "host name is not printable text of at most 255 bytes";
  }
  return "";
}

std::string MemberView::SetSelf(const net::MemberRecord& self) { return Take(self); }

std::string MemberView::Take(const net::MemberRecord& record) {
  if (std::string problem = RecordProblem(record, *trust_); !problem.empty()) return problem;
  auto it = records_.find(record.key);
  if (it != records_.end()) {
    const net::MemberRecord& kept = it->second;
    const bool newer =
        record.incarnation > kept.incarnation ||
        (record.incarnation == kept.incarnation && record.withdrawn && !kept.withdrawn);
    if (!newer) return "";
  }
  if (!record.withdrawn) {
    for (const auto& [key, other] : records_) {
      if (key != record.key && !other.withdrawn && other.endpoint == record.endpoint) {
        return "endpoint " + record.endpoint + " is already " + trust_->Label(key) +
               "'s (two nodes cannot listen on one port: give each its own --host or --port)";
      }
    }
  }
  records_[record.key] = record;
  UpdateComplete();
  return "";
}

void MemberView::UpdateComplete() {
  if (live_count() == nodes_) complete_ = true;
}

std::vector<std::string> MemberView::Merge(const std::vector<net::MemberRecord>& records,
                                           const std::string& source) {
  std::vector<std::string> problems;
  if (complete_) return problems;
  for (const net::MemberRecord& record : records) {
    if (complete_) break;  // the run's members are known: nothing changes them
    if (std::string problem = Take(record); !problem.empty()) {
      problems.push_back(source + ": member " + std::to_string(&record - records.data()) + ": " +
                         problem);
    }
  }
  return problems;
}

std::string MemberView::AdoptComplete(const std::vector<net::MemberRecord>& records,
                                      const std::string& source, const std::string& self_key) {
  if (complete_) return "";
  MemberView candidate(nodes_, trust_);
  for (const net::MemberRecord& record : records) {
    // Each record once: a view with two records of one key is not a view anyone sends.
    if (candidate.records_.count(record.key) != 0) {
      return source + ": key " + ShortKey(record.key) + " twice in its member list";
    }
    if (std::string problem = RecordProblem(record, *trust_); !problem.empty()) {
      return source + ": " + problem;
    }
    candidate.records_[record.key] = record;
  }
  if (candidate.live_count() != nodes_) {
    return source + ": says its member list is complete, but it has " +
           std::to_string(candidate.live_count()) + " live members, not " + std::to_string(nodes_);
  }
  if (!self_key.empty() && candidate.Live(self_key) == nullptr) {
    std::string names;
    for (const net::MemberRecord& m : candidate.LiveMembers()) {
      names += (names.empty() ? "" : ", ") + trust_->Label(m.key) + " at " + m.endpoint;
    }
    return "the run started with its " + std::to_string(nodes_) +
           " members without this node (as " + source + " says: " + names +
           "): were more than --nodes nodes started?";
  }
  records_ = std::move(candidate.records_);
  complete_ = true;
  return "";
}

int MemberView::live_count() const {
  int live = 0;
  for (const auto& [key, record] : records_) live += record.withdrawn ? 0 : 1;
  return live;
}

std::vector<net::MemberRecord> MemberView::Records() const {
  std::vector<net::MemberRecord> out;
  for (const auto& [key, record] : records_) out.push_back(record);
  return out;
}

std::vector<net::MemberRecord> MemberView::LiveMembers() const {
  std::vector<net::MemberRecord> out;
  for (const auto& [key, record] : records_) {
    if (!record.withdrawn) out.push_back(record);
  }
  return out;
}

const net::MemberRecord* MemberView::Live(const std::string& key) const {
  auto it = records_.find(key);
  return it == records_.end() || it->second.withdrawn ? nullptr : &it->second;
}

topology::Cluster ClusterFromMembers(const std::vector<net::MemberRecord>& members,
                                     const topology::Graph& graph, const TrustFile& trust,
                                     const std::string& source) {
  if (graph.num_nodes() != static_cast<int>(members.size())) {
    throw std::invalid_argument("join: the graph has " + std::to_string(graph.num_nodes()) +
                                " nodes, the run " + std::to_string(members.size()) + " members");
  }
  topology::Cluster cluster;
  cluster.graph = graph;
  cluster.source = source;
  std::set<std::string> member_keys;
  for (size_t i = 0; i < members.size(); ++i) {
    cluster.nodes.push_back({static_cast<int>(i), members[i].endpoint, members[i].key});
    member_keys.insert(members[i].key);
  }
  std::vector<std::string> probes;
  for (const TrustedKey& k : trust.keys) {
    if (member_keys.count(k.key) == 0) probes.push_back(k.key);
  }
  std::sort(probes.begin(), probes.end());
  cluster.probe_keys = std::move(probes);
  return cluster;
}

}  // namespace starling::node
