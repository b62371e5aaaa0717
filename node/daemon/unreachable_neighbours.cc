#include "node/daemon/unreachable_neighbours.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

namespace starling::node {

namespace {

constexpr double kCauseWaitSeconds = 10;

std::string Advice(const std::string& node, bool published, const std::string& cluster_file) {
  if (published) {
    return "if " + node + "'s host has several interfaces, start " + node +
           " with --host ADDRESS, an address the other hosts reach";
  }
  return "check " + node + "'s line in " + cluster_file + " (if its host has several " +
         "interfaces, list an address the other hosts reach)";
}

}  // namespace

double UnansweredSeconds(int64_t give_up_seconds) {
  return std::clamp(static_cast<double>(give_up_seconds) / 2, 10.0, 30.0);
}

std::string UnansweredMessage(int self, const std::string& own_endpoint,
                              const std::vector<int32_t>& silent, double seconds, bool published,
                              const std::string& cluster_file) {
  std::string nodes;
  for (size_t i = 0; i < silent.size(); ++i) {
    nodes += (i == 0 ? "" : i + 1 == silent.size() ? " and " : ", ") + std::to_string(silent[i]);
  }
  char waited[32];
  std::snprintf(waited, sizeof(waited), "%.0f", seconds);
  const std::string node = "node " + std::to_string(self);
  return "this node reaches node" + std::string(silent.size() > 1 ? "s " : " ") + nodes +
         " (connected, keys accepted) but has received nothing from " +
         (silent.size() > 1 ? "any of them" : "it") + " in " + waited +
         " s: their answers come over connections to this node's address " + own_endpoint +
         ", which do not reach it; " + Advice(node, published, cluster_file);
}

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
  return text + Advice(node, published, cluster_file);
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

std::string UnreachableNeighbours::Unanswered(const net::Transport& transport,
                                              Clock::time_point now) {
  std::vector<int32_t> silent;
  Clock::time_point latest{};
  for (const auto& [peer, state] : transport.peers()) {
    if (state.messages_received > 0) return {};
    if (transport.handshake_successes(peer) == 0) return {};
    const Clock::time_point since = connected_since_.emplace(peer, now).first->second;
    latest = std::max(latest, since);
    silent.push_back(peer);
  }
  if (silent.empty() || Seconds(now - latest) < unanswered_seconds_) return {};
  return UnansweredMessage(self_, transport.options().bind_endpoint, silent, unanswered_seconds_,
                           published_, cluster_file_);
}

}  // namespace starling::node
