// Process-level set-up shared by the binaries: the stop flag that SIGINT/SIGTERM raise, the
// one-line-per-event stderr logger, and the descriptor limit.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace starling::node {

// Installs SIGINT and SIGTERM handlers that set the returned flag (loops check it; their waits
// are short and EINTR-safe, so a signal stops the process promptly and cleanly).
const std::atomic<bool>* InstallStopSignals();

// Makes spdlog's default logger write "time [TAG] level: message" lines to stderr at `level`
// (trace, debug, info, warn, error).
void UseStderrLogger(const std::string& tag, const std::string& level = "info");
// Changes the TAG of UseStderrLogger's lines (a node that learns its id after it started
// logging); safe while other threads log.
void RetagLogger(const std::string& tag);

// The soft limit on open descriptors (RLIMIT_NOFILE) before and after RaiseDescriptorLimit, and
// the hard limit it may not pass.
struct DescriptorLimit {
  uint64_t before = 0, after = 0, hard = 0;
  bool raised() const { return after > before; }
};

// Raises the soft RLIMIT_NOFILE to min(hard limit, `cap`) if it is lower. Every connection a
// daemon accepts takes a descriptor, and so does every file it writes: under Debian's default
// soft limit of 1,024, a thousand idle TCP connections (from anyone, no key needed) left none
// for the checkpoint. Nothing here uses select(), so a limit above FD_SETSIZE is
// safe. Never fails: if the limit cannot be read or raised, returns it as it is.
DescriptorLimit RaiseDescriptorLimit(uint64_t cap = 65536);

}  // namespace starling::node
