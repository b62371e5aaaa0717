#include "node/config/process.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <csignal>

namespace starling::node {

namespace {

std::atomic<bool> g_stop{false};

void OnStopSignal(int) { g_stop.store(true); }

}  // namespace

const std::atomic<bool>* InstallStopSignals() {
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  return &g_stop;
}

void UseStderrLogger(const std::string& tag, const std::string& level) {
  auto logger = spdlog::stderr_color_mt("starling");
  spdlog::set_default_logger(logger);
  RetagLogger(tag);
  logger->set_level(spdlog::level::from_str(level));
}

void RetagLogger(const std::string& tag) {
  spdlog::default_logger()->set_pattern("%Y-%m-%d %H:%M:%S.%e [" + tag + "] %l: %v");
}

DescriptorLimit RaiseDescriptorLimit(uint64_t cap) {
  DescriptorLimit limit;
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return limit;
  limit.before = limit.after = static_cast<uint64_t>(r.rlim_cur);
  limit.hard = static_cast<uint64_t>(r.rlim_max);  // RLIM_INFINITY is the largest value
  const uint64_t target = std::min<uint64_t>(limit.hard, cap);
  if (limit.before >= target) return limit;
  r.rlim_cur = static_cast<rlim_t>(target);
  if (::setrlimit(RLIMIT_NOFILE, &r) == 0) limit.after = target;
  return limit;
}

}  // namespace starling::node
