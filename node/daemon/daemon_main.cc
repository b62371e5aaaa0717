// starlingd: one node of a Starling network. Reads the cluster file shared by all nodes (or
// agrees on one through --rendezvous, or builds it from the members it meets with --join), binds
// its own endpoint, connects to its neighbours and optimizes together with them.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <exception>
#include <iostream>

#include "net/curve_keys.h"
#include "node/config/process.h"
#include "node/config/rendezvous.h"
#include "node/config/seed_join.h"
#include "node/daemon/daemon_cli.h"

namespace {

int Run(int argc, char** argv) {
  starling::node::DaemonCommandLine cl = starling::node::ParseDaemonCommandLine(argc, argv);
  if (cl.help) {
    std::cout << cl.help_text << std::endl;
    return 0;
  }
  if (!cl.keygen_prefix.empty()) {
    const starling::net::CurveKeyPair pair = starling::net::WriteCurveKeyFiles(cl.keygen_prefix);
    std::cout << "wrote " << cl.keygen_prefix << ".key (secret, mode 0600) and " << cl.keygen_prefix
              << ".pub\npublic key: " << pair.public_key << std::endl;
    return 0;
  }
  const starling::node::DaemonOptions& d = cl.options;
  // With --join the id comes from the members: the log is tagged "join" until then.
  const bool joining = !cl.launch.join.empty();
  starling::node::UseStderrLogger(joining ? "join" : "node " + std::to_string(d.id), cl.log_level);
  const std::atomic<bool>* stop = starling::node::InstallStopSignals();
  starling::node::JoinDaemonRun(&cl, stop);
  if (joining) starling::node::RetagLogger("node " + std::to_string(d.id));
  const starling::node::DescriptorLimit fds = starling::node::RaiseDescriptorLimit();
  if (fds.raised()) {
    spdlog::info("node {}: descriptor limit raised from {} to {} (hard limit {})", d.id, fds.before,
                 fds.after, fds.hard);
  } else {
    spdlog::info("node {}: descriptor limit {} (hard limit {})", d.id, fds.after, fds.hard);
  }
  return starling::node::RunDaemon(d, stop);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const starling::node::RendezvousTimeout& e) {
    std::fprintf(stderr, "starlingd: error: %s\n", e.what());
    return 3;  // gave up waiting, as for a neighbour that never answers
  } catch (const starling::node::JoinTimeout& e) {
    std::fprintf(stderr, "starlingd: error: %s\n", e.what());
    return 3;
  } catch (const starling::node::JoinStopped& e) {
    std::fprintf(stderr, "starlingd: %s\n", e.what());
    return 0;  // a stop asked for, as SIGINT/SIGTERM during the run
  } catch (const std::exception& e) {
    std::fprintf(stderr, "starlingd: error: %s\n", e.what());
    return 2;
  }
}
