#include "node/daemon/join_run.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "net/curve_keys.h"
#include "node/config/rendezvous.h"
#include "node/config/run_id.h"
#include "topology/cluster_file.h"
#include "topology/generators.h"

namespace starling::node {

namespace po = boost::program_options;

void AddLaunchOptions(po::options_description* options, LaunchOptions* l) {
  po::options_description group("Launching under a process manager (mpirun, srun, ssh)");
  group.add_options()(
      "rendezvous", po::value(&l->rendezvous),
      "instead of --cluster: agree on the cluster file through this directory, shared by every "
      "host and fresh for each run; each node publishes its endpoint and public key there, "
      "waits for all --nodes and writes/checks DIR/cluster.conf")(
      "host", po::value(&l->host)->default_value(l->host),
      "--rendezvous: the address the other nodes reach this node at (auto = the source "
      "address of this host's route outside, else its first non-loopback IPv4 address)")(
      "port-base", po::value(&l->port_base)->default_value(l->port_base),
      "--rendezvous: node K listens on PORT_BASE+2K (and telemetry on PORT_BASE+2K+1)")(
      "rendezvous-timeout-s",
      po::value(&l->rendezvous_timeout_s)->default_value(l->rendezvous_timeout_s),
      "--rendezvous: give up (exit 3), naming the missing nodes, if not all have published by "
      "then");
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

// N from --nodes and/or the launcher's size; they must agree.
int RendezvousNodes(const std::optional<ProcessRank>& rank, const po::variables_map& vm,
                    int nodes_option) {
  const bool given = vm.count("nodes") && !vm["nodes"].defaulted();
  if (given) {
    if (rank)
      CheckRankAgainstNodes(*rank, nodes_option, "--nodes is " + std::to_string(nodes_option));
    return nodes_option;
  }
  if (rank && rank->size > 0) return rank->size;
  throw std::invalid_argument(
      "--rendezvous: give --nodes N (the process manager announced no number of processes)");
}

void JoinRendezvousDir(const LaunchOptions& launch, const std::optional<ProcessRank>& rank,
                       const po::variables_map& vm, const std::atomic<bool>* stop,
                       DaemonOptions* d) {
  if (!d->cluster_file.empty()) {
    throw std::invalid_argument("--cluster and --rendezvous: give one of them");
  }
  if (!d->run.mixing_file.empty() || !d->run.laplacian_file.empty()) {
    throw std::invalid_argument(
        "--rendezvous takes the graph from --topology; for an explicit --mixing or --laplacian "
        "write a cluster file with that graph and pass --cluster");
  }
  const int n = RendezvousNodes(rank, vm, d->run.nodes);
  if (d->id >= n) {
    throw std::invalid_argument("--id " + std::to_string(d->id) + ": the run has " +
                                std::to_string(n) + " nodes (0.." + std::to_string(n - 1) + ")");
  }
  if (!(launch.rendezvous_timeout_s > 0)) {
    throw std::invalid_argument("--rendezvous-timeout-s: must be > 0");
  }
  if (launch.port_base < 1 || launch.port_base + 2 * static_cast<int64_t>(n) - 1 > 65535) {
    throw std::invalid_argument("--port-base " + std::to_string(launch.port_base) + ": nodes use " +
                                "PORT_BASE..PORT_BASE+2N-1, which must lie in 1..65535 for " +
                                std::to_string(n) + " nodes");
  }
  std::string host = launch.host;
  if (host == "auto") {
    bool loopback_only = false;
    host = DefaultHostAddress(&loopback_only);
    if (loopback_only) {
      spdlog::warn(
          "node {}: no route outside this host: publishing 127.0.0.1 (only nodes on "
          "this host can reach it; give --host ADDRESS otherwise)",
          d->id);
    }
  }
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";

  RendezvousRequest request;
  request.dir = launch.rendezvous;
  request.nodes = n;
  request.timeout_seconds = launch.rendezvous_timeout_s;
  request.log_every_seconds = static_cast<double>(d->wait_log_seconds);
  request.stop = stop;
  request.self.id = d->id;
  request.self.endpoint = "tcp://" + host + ":" + std::to_string(launch.port_base + 2 * d->id);
  request.self.host = HostName();
  if (std::string reason = topology::EndpointProblem(request.self.endpoint); !reason.empty()) {
    throw std::invalid_argument("--host " + launch.host + ": " + reason);
  }
  RunConfig config = d->run;
  config.nodes = n;
  request.graph = topology::MakeTopology(config.topology, n, config.seed);
  char fingerprint[17];
  std::snprintf(fingerprint, sizeof(fingerprint), "%016" PRIx64, RunIdFor(config, request.graph));
  request.self.run = fingerprint;
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
}

}  // namespace

void JoinRun(const LaunchOptions& launch, const std::optional<ProcessRank>& rank,
             const po::variables_map& vm, const std::atomic<bool>* stop, DaemonOptions* d) {
  if (rank) {
    spdlog::info("node {}: --id auto: {}={}{}{}", d->id, rank->rank_variable, rank->rank,
                 rank->size_variable.empty()
                     ? std::string(" (the launcher announces no size)")
                     : ", " + rank->size_variable + "=" + std::to_string(rank->size),
                 rank->others.empty() ? std::string() : " (also set: " + rank->others + ")");
  }
  if (!launch.rendezvous.empty()) {
    JoinRendezvousDir(launch, rank, vm, stop, d);
  } else if (vm.count("host") && !vm["host"].defaulted()) {
    throw std::invalid_argument("--host: only with --rendezvous");
  } else if (vm.count("port-base") && !vm["port-base"].defaulted()) {
    throw std::invalid_argument("--port-base: only with --rendezvous");
  }
  if (d->cluster_file.empty()) throw std::invalid_argument("--cluster or --rendezvous: required");
  if (rank) {
    const topology::Cluster cluster = topology::ReadClusterFile(d->cluster_file);
    const int n = static_cast<int>(cluster.nodes.size());
    CheckRankAgainstNodes(*rank, n, d->cluster_file + " lists " + std::to_string(n) + " nodes");
  }
}

}  // namespace starling::node
