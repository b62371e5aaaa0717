#include "node/daemon/join_run.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "net/curve_keys.h"
#include "net/endpoint.h"
#include "node/config/join_service.h"
#include "node/config/member_view.h"
#include "node/config/private_cluster_file.h"
#include "node/config/rendezvous.h"
#include "node/config/run_difference.h"
#include "node/config/run_id.h"
#include "node/config/seed_join.h"
#include "node/config/trust_file.h"
#include "topology/cluster_file.h"
#include "topology/generators.h"

namespace starling::node {

namespace po = boost::program_options;

void AddLaunchOptions(po::options_description* options, LaunchOptions* l) {
  po::options_description group(
      "Meeting the other nodes without a cluster file: a process manager (mpirun, srun, ssh) "
      "with a shared directory, or a seed");
  group.add_options()(
      "rendezvous", po::value(&l->rendezvous),
      "instead of --cluster: agree on the cluster file through this directory, shared by every "
      "host and fresh for each run; each node publishes its endpoint and public key there, "
      "waits for all --nodes and writes/checks DIR/cluster.conf")(
      "join", po::value(&l->join),
      "instead of --cluster: join the run through any of these members, HOST:PORT[,HOST:PORT...] "
      "(a HOST alone: at this node's --port); those that are down are skipped and retried. "
      "Nothing is shared but --trust: the run starts when --nodes members have joined, each "
      "node's id its place among the members' sorted keys. Needs --nodes, --trust and "
      "--secret-key")(
      "trust", po::value(&l->trust),
      "--join: the public keys allowed in this network, one per line (cat every host's .pub "
      "file from --keygen into it; a name may follow a key), the same file on every host; only "
      "their holders are admitted")(
      "host", po::value(&l->host)->default_value(l->host),
      "--rendezvous, --join: the address the other nodes reach this node at (auto = the source "
      "address of this host's route outside, else its first non-loopback IPv4 address; on a "
      "host with several interfaces, give the one the other hosts reach)")(
      "port", po::value(&l->port)->default_value(l->port),
      "--rendezvous, --join: this node's first port: peers on PORT, telemetry on PORT+1, and "
      "with --join PORT+2 and PORT+3 (open TCP PORT to PORT+3 between the hosts); a node that a "
      "process manager started as the L-th on its host uses PORT+4L")(
      "rendezvous-timeout-s",
      po::value(&l->rendezvous_timeout_s)->default_value(l->rendezvous_timeout_s),
      "--rendezvous: give up (exit 3), naming the missing nodes, if not all have published by "
      "then")(
      "join-timeout-s", po::value(&l->join_timeout_s)->default_value(l->join_timeout_s),
      "--join: give up (exit 3), naming the members found and the trusted keys not heard of, if "
      "the run does not have its --nodes members by then (generous: hosts are often started by "
      "hand, one after another)");
  options->add(group);
}

int ResolveNodeId(const LaunchOptions& launch, std::optional<ProcessRank>* rank) {
  if (launch.id.empty()) throw std::invalid_argument("--id: required (a node id, or auto)");
  if (launch.id == "auto") {
    *rank = RankFromEnvironment([](const char* name) { return std::getenv(name); });
    return (*rank)->rank;
  }
  int id = 0;
  size_t used = 0;
  try {
    id = std::stoi(launch.id, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != launch.id.size() || id < 0 || launch.id[0] == '+' || launch.id[0] == ' ') {
    throw std::invalid_argument("--id '" + launch.id +
                                "': expected a node id (0, 1, ...) or auto (the rank from "
                                "mpirun, srun or PMI)");
  }
  return id;
}

void SubstituteNodeId(DaemonOptions* d) {
  const std::string id = std::to_string(d->id);
  for (std::string* path :
       {&d->run.metrics, &d->final_model, &d->checkpoint_file, &d->secret_key_file}) {
    for (size_t at = path->find("{id}"); at != std::string::npos; at = path->find("{id}", at)) {
      path->replace(at, 4, id);
      at += id.size();
    }
  }
}

std::string DefaultHostAddress(bool* loopback_only) {
  *loopback_only = false;
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    sockaddr_in outside{};
    outside.sin_family = AF_INET;
    outside.sin_port = htons(9);
    ::inet_pton(AF_INET, "192.0.2.1", &outside.sin_addr);  // TEST-NET-1: never contacted
    sockaddr_in self{};
    socklen_t length = sizeof(self);
    // A UDP connect only picks the route and the source address.
    if (::connect(fd, reinterpret_cast<sockaddr*>(&outside), sizeof(outside)) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &length) == 0) {
      char text[INET_ADDRSTRLEN] = {};
      ::inet_ntop(AF_INET, &self.sin_addr, text, sizeof(text));
      ::close(fd);
      if (std::string(text) != "0.0.0.0") return text;
    } else {
      ::close(fd);
    }
  }
  // No route outside (a private network, a namespace): the first address of an interface that
  // is up and not loopback.
  std::string first;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a != nullptr && first.empty(); a = a->ifa_next) {
      if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
      if ((a->ifa_flags & IFF_UP) == 0 || (a->ifa_flags & IFF_LOOPBACK) != 0) continue;
      char text[INET_ADDRSTRLEN] = {};
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text,
                  sizeof(text));
      first = text;
    }
    ::freeifaddrs(list);
  }
  if (!first.empty()) return first;
  *loopback_only = true;
  return "127.0.0.1";
}

class JoinSession {
 public:
  JoinSession(JoinKeys keys, int nodes) : keys_(std::move(keys)), view_(nodes, &keys_.trust) {}
  const JoinKeys& keys() const { return keys_; }
  SharedMemberView* view() { return &view_; }
  void Serve(const JoinServiceOptions& options) {
    service_ = std::make_unique<JoinService>(options, &view_);
  }
  void Keep(const topology::Cluster& cluster) {
    cluster_file_ = std::make_unique<PrivateClusterFile>(cluster);
  }
  const std::string& cluster_file() const { return cluster_file_->path(); }

 private:
  JoinKeys keys_;
  SharedMemberView view_;
  // Destroyed first: its thread reads the view.
  std::unique_ptr<JoinService> service_;
  std::unique_ptr<PrivateClusterFile> cluster_file_;
};

namespace {

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  std::string s(name);
  for (char& c : s) {
    if (static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 127) c = '_';
  }
  return s;
}

bool Given(const po::variables_map& vm, const char* name) {
  return vm.count(name) != 0 && !vm[name].defaulted();
}

// N from --nodes and/or the launcher's size; they must agree.
int RunNodes(const std::optional<ProcessRank>& rank, const po::variables_map& vm, int nodes_option,
             const char* how) {
  if (Given(vm, "nodes")) {
    if (rank)
      CheckRankAgainstNodes(*rank, nodes_option, "--nodes is " + std::to_string(nodes_option));
    return nodes_option;
  }
  if (rank && rank->size > 0) return rank->size;
  throw std::invalid_argument(std::string(how) +
                              ": give --nodes N (the number of nodes of the run)");
}

// What --rendezvous and --join share: no cluster file, the graph from --topology.
void CheckNoClusterFile(const char* how, const DaemonOptions& d) {
  if (!d.cluster_file.empty()) {
    throw std::invalid_argument(std::string("--cluster and ") + how + ": give one of them");
  }
  if (!d.run.mixing_file.empty() || !d.run.laplacian_file.empty()) {
    throw std::invalid_argument(std::string(how) +
                                " takes the graph from --topology; for an explicit --mixing or "
                                "--laplacian write a cluster file with that graph and pass "
                                "--cluster");
  }
}

// The address this node publishes (--host, auto resolved) as tcp://HOST:PORT, PORT the node's
// first port (--port plus 4 x its local rank). Throws naming --host or --port.
std::string PublishedEndpoint(const LaunchOptions& launch, const std::string& who, int* port) {
  const LocalRank local =
      LocalRankFromEnvironment([](const char* name) { return std::getenv(name); });
  *port = launch.port + net::kPortsPerNode * local.index;
  if (launch.port < 1 || *port + net::kPortsPerNode - 1 > 65535) {
    throw std::invalid_argument(
        "--port " + std::to_string(launch.port) + ": a node uses PORT to PORT+" +
        std::to_string(net::kPortsPerNode - 1) +
        (local.variable.empty()
             ? std::string()
             : " plus 4 x " + local.variable + "=" + std::to_string(local.index)) +
        ", which must lie in 1..65535");
  }
  if (!local.variable.empty()) {
    spdlog::info("{}: --port {} + 4 x {}={}: listening from port {}", who, launch.port,
                 local.variable, local.index, *port);
  }
  std::string host = launch.host;
  if (host == "auto") {
    bool loopback_only = false;
    host = DefaultHostAddress(&loopback_only);
    if (loopback_only) {
      spdlog::warn(
          "{}: no route outside this host: publishing 127.0.0.1 (only nodes on this host can "
          "reach it; give --host ADDRESS otherwise)",
          who);
    } else {
      spdlog::info(
          "{}: --host auto: publishing {} (this host's source address toward other networks; "
          "on a host with several interfaces, give --host the address the other hosts reach)",
          who, host);
    }
  }
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
  const std::string endpoint = "tcp://" + host + ":" + std::to_string(*port);
  if (std::string reason = topology::EndpointProblem(endpoint); !reason.empty()) {
    throw std::invalid_argument("--host " + launch.host + ": " + reason);
  }
  return endpoint;
}

void JoinRendezvousDir(const LaunchOptions& launch, const std::optional<ProcessRank>& rank,
                       const po::variables_map& vm, const std::atomic<bool>* stop,
                       DaemonOptions* d) {
  CheckNoClusterFile("--rendezvous", *d);
  const int n = RunNodes(rank, vm, d->run.nodes, "--rendezvous");
  if (d->id >= n) {
    throw std::invalid_argument("--id " + std::to_string(d->id) + ": the run has " +
                                std::to_string(n) + " nodes (0.." + std::to_string(n - 1) + ")");
  }
  if (!(launch.rendezvous_timeout_s > 0)) {
    throw std::invalid_argument("--rendezvous-timeout-s: must be > 0");
  }
  RendezvousRequest request;
  request.dir = launch.rendezvous;
  request.nodes = n;
  request.timeout_seconds = launch.rendezvous_timeout_s;
  request.log_every_seconds = static_cast<double>(d->wait_log_seconds);
  request.stop = stop;
  request.self.id = d->id;
  int port = 0;
  request.self.endpoint = PublishedEndpoint(launch, "node " + std::to_string(d->id), &port);
  request.self.host = HostName();
  RunConfig config = d->run;
  config.nodes = n;
  request.graph = topology::MakeTopology(config.topology, n, config.seed);
  char fingerprint[17];
  std::snprintf(fingerprint, sizeof(fingerprint), "%016" PRIx64, RunIdFor(config, request.graph));
  request.self.run = fingerprint;
  // One word in the publication: left out if a value has a space (then only the fingerprint).
  const std::string options = OptionLinesText(JoinOptionLines(config, n), 2048);
  if (options.find_first_of(" \t") == std::string::npos) request.self.options = options;
  if (!d->secret_key_file.empty()) {
    // Loaded from this host's own file; only the public half is published.
    request.self.public_key =
        net::CurvePublicKeyOf(net::ReadCurveKeyFile(d->secret_key_file, /*secret=*/true));
  } else if (!d->allow_plaintext) {
    const net::CurveKeyPair pair = net::GenerateCurveKeyPair();
    d->secret_key = pair.secret_key;  // in this process's memory only
    request.self.public_key = pair.public_key;
  }
  spdlog::info("node {}: rendezvous in {} as {}, {} (public key {})", d->id, request.dir,
               request.self.endpoint,
               d->secret_key_file.empty()
                   ? (d->allow_plaintext ? "plaintext" : "key pair made in memory")
                   : "key pair from " + d->secret_key_file,
               request.self.public_key.empty() ? "none" : request.self.public_key);
  d->cluster_file = JoinRendezvous(request);
  d->published_endpoints = true;
}

void JoinBySeed(const LaunchOptions& launch, const po::variables_map& vm,
                const std::atomic<bool>* stop, DaemonOptions* d,
                std::shared_ptr<JoinSession>* session) {
  CheckNoClusterFile("--join", *d);
  if (!launch.rendezvous.empty()) {
    throw std::invalid_argument("--rendezvous and --join: give one of them");
  }
  if (!launch.id.empty()) {
    throw std::invalid_argument(
        "--id " + launch.id +
        " with --join: the ids come from the members' sorted keys; leave --id out");
  }
  const int n = RunNodes(std::nullopt, vm, d->run.nodes, "--join");
  if (launch.trust.empty()) {
    throw std::invalid_argument(
        "--join: give --trust FILE, the public keys allowed in this network (one per line, the "
        "same file on every host)");
  }
  if (d->secret_key_file.empty()) {
    throw std::invalid_argument(
        "--join: give --secret-key FILE, this node's key (make a pair with starlingd --keygen "
        "PREFIX and list PREFIX.pub's key in the trust file); a run formed by joining admits "
        "nodes by their keys, so it has no plaintext mode");
  }
  if (d->secret_key_file.find("{id}") != std::string::npos) {
    throw std::invalid_argument("--secret-key " + d->secret_key_file +
                                ": with --join the id comes from the key, so the key file's "
                                "name cannot depend on it");
  }
  if (!(launch.join_timeout_s > 0)) throw std::invalid_argument("--join-timeout-s: must be > 0");
  int port = 0;
  const std::string endpoint = PublishedEndpoint(launch, "join", &port);
  *session =
      std::make_shared<JoinSession>(ReadJoinKeys(launch.trust, d->secret_key_file, "node"), n);
  JoinSession& s = **session;
  const JoinKeys& keys = s.keys();
  SeedJoinRequest request = MakeSeedJoinRequest(launch.join, launch.port, keys, d->run, n);
  request.timeout_seconds = launch.join_timeout_s;
  request.log_every_seconds = static_cast<double>(d->wait_log_seconds);
  request.stop = stop;
  net::MemberRecord self;
  self.key = keys.public_key;
  self.endpoint = endpoint;
  self.host = HostName();
  self.incarnation = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::system_clock::now().time_since_epoch())
                                               .count());
  request.self = self;
  {
    std::lock_guard<std::mutex> lock(s.view()->mutex);
    if (std::string problem = s.view()->view.SetSelf(self); !problem.empty()) {
      throw std::invalid_argument("--host/--port: this node's record: " + problem);
    }
  }
  JoinServiceOptions service;
  service.host = endpoint.substr(6, endpoint.rfind(':') - 6);
  service.port = port;
  service.secret_key = keys.secret_key;
  service.public_key = keys.public_key;
  service.trust = &keys.trust;
  service.options = request.options;
  service.fingerprint = request.fingerprint;
  s.Serve(service);
  spdlog::info("join: a run of {} nodes as {} (key {} from {}), join ports {} and {}; seeds {}", n,
               endpoint, keys.public_key, d->secret_key_file, port + net::kJoinPortOffset,
               port + net::kKeyPortOffset, launch.join);
  const std::vector<net::MemberRecord> members = JoinBySeeds(request, s.view());
  s.Keep(JoinedCluster(members, d->run, keys.trust));
  std::string list;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].key == keys.public_key) d->id = static_cast<int>(i);
    list += (i ? ", node " : "node ") + std::to_string(i) + ": " +
            keys.trust.Label(members[i].key) + " at " + members[i].endpoint;
  }
  spdlog::info("join: the run has its {} members: {}; this node is node {}", n, list, d->id);
  d->cluster_file = s.cluster_file();
  d->published_endpoints = true;
  SubstituteNodeId(d);
}

}  // namespace

void JoinRun(const LaunchOptions& launch, const std::optional<ProcessRank>& rank,
             const po::variables_map& vm, const std::atomic<bool>* stop, DaemonOptions* d,
             std::shared_ptr<JoinSession>* session) {
  if (rank) {
    spdlog::info("node {}: --id auto: {}={}{}{}", d->id, rank->rank_variable, rank->rank,
                 rank->size_variable.empty()
                     ? std::string(" (the launcher announces no size)")
                     : ", " + rank->size_variable + "=" + std::to_string(rank->size),
                 rank->others.empty() ? std::string() : " (also set: " + rank->others + ")");
  }
  if (!launch.join.empty()) {
    JoinBySeed(launch, vm, stop, d, session);
  } else if (!launch.rendezvous.empty()) {
    JoinRendezvousDir(launch, rank, vm, stop, d);
  } else {
    for (const char* option : {"host", "port"}) {
      if (Given(vm, option)) {
        throw std::invalid_argument(std::string("--") + option +
                                    ": only with --rendezvous or --join");
      }
    }
    for (const char* option : {"trust", "join-timeout-s"}) {
      if (Given(vm, option)) {
        throw std::invalid_argument(std::string("--") + option + ": only with --join");
      }
    }
  }
  if (d->cluster_file.empty()) {
    throw std::invalid_argument("--cluster, --rendezvous or --join: required");
  }
  if (rank) {
    const topology::Cluster cluster = topology::ReadClusterFile(d->cluster_file);
    const int n = static_cast<int>(cluster.nodes.size());
    CheckRankAgainstNodes(*rank, n, d->cluster_file + " lists " + std::to_string(n) + " nodes");
  }
}

}  // namespace starling::node
