// Process-level set-up shared by the binaries: the stop flag that SIGINT/SIGTERM raise, and the
// one-line-per-event stderr logger (DESIGN.md "Logging").
#pragma once

#include <atomic>
#include <string>

namespace starling::node {

// Installs SIGINT and SIGTERM handlers that set the returned flag (loops check it; their waits
// are short and EINTR-safe, so a signal stops the process promptly and cleanly).
const std::atomic<bool>* InstallStopSignals();

// Makes spdlog's default logger write "time [TAG] level: message" lines to stderr at `level`
// (trace, debug, info, warn, error).
void UseStderrLogger(const std::string& tag, const std::string& level = "info");

}  // namespace starling::node
