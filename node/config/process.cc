#include "node/config/process.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

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
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e [" + tag + "] %l: %v");
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
}

}  // namespace starling::node
