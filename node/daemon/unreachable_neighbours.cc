#include "node/daemon/unreachable_neighbours.h"

#include <spdlog/spdlog.h>

#include <cstdio>

namespace starling::node {

namespace {

constexpr double kCauseWaitSeconds = 10;

}  // namespace

std::string UnreachableMessage(int peer, const std::string& endpoint,
                               const net::ConnectTrouble& trouble, bool published,
                               const std::string& cluster_file) {
  const std::string node = "node " + std::to_string(peer);
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.0f", trouble.seconds);
  std::string text = "cannot connect to " + node + " at " + endpoint + " (" +
                     (trouble.cause.empty() ? std::string() : trouble.cause + "; ") +
                     std::to_string(trouble.attempts) + " attempts in " + seconds + " s): ";
  if (trouble.cause == "connection refused") {
    text += "nothing listens there: is " + node + " up? If it is, it listens at another address: ";
  } else if (!trouble.cause.empty()) {
    text += "this host has no way to that address: ";
  }
  if (published) {
    text += "if " + node + "'s host has several interfaces, start " + node +
            " with --host ADDRESS, an address the other hosts reach";
  } else {
    text += "check " + node + "'s line in " + cluster_file + " (if its host has several " +
            "interfaces, list an address the other hosts reach)";
  }
  return text;
}

void UnreachableNeighbours::Check(const net::Transport& transport, Clock::time_point now) {
  if (now < next_check_) return;
  next_check_ = now + std::chrono::milliseconds(500);
  for (const auto& [peer, state] : transport.peers()) {
    const std::optional<net::ConnectTrouble> trouble = transport.connect_trouble(peer);
    if (!trouble || trouble->seconds * 1000 < static_cast<double>(log_every_ms_)) continue;
    // The guard's own attempt finds the cause within seconds (net/security.h): wait for it,
    // unless it does not come (a host name, which the guard does not resolve).
    if (trouble->cause.empty() && trouble->seconds < kCauseWaitSeconds) continue;
    auto it = last_logged_.find(peer);
    if (it != last_logged_.end() && Millis(now - it->second) < log_every_ms_) continue;
    last_logged_[peer] = now;
    spdlog::warn("{}", UnreachableMessage(peer, state.address.endpoint, *trouble, published_,
                                          cluster_file_));
  }
}

}  // namespace starling::node
