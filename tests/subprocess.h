// Real processes for integration tests: spawn with output to a file, wait with a deadline, and
// kill whatever is left when the test ends.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace starling::testing {

class Subprocess {
 public:
  // Starts argv[0] with stdout and stderr appended to `log_path`. Throws on failure.
  Subprocess(const std::vector<std::string>& argv, const std::string& log_path) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot start " + argv[0]);
  }
  ~Subprocess() { Kill(); }
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Exit code, or -1 if still running at the deadline, or 128+signal if killed by a signal.
  int Wait(std::chrono::milliseconds timeout) {
    if (exited_) return code_;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      int status = 0;
      const pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return code_;
      }
      if (std::chrono::steady_clock::now() >= deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  void Signal(int sig) {
    if (!exited_) ::kill(pid_, sig);
  }
  void Kill() {
    if (exited_) return;
    ::kill(pid_, SIGKILL);
    Wait(std::chrono::milliseconds(5000));
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// True once the file at `path` contains `text`, polled until `timeout` passes (false then).
// Tests wait with this for what a process logs rather than for a fixed time: give a deadline
// generous for a loaded machine.
inline bool WaitForLogText(const std::string& path, const std::string& text,
                           std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (ReadFile(path).find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// True once a file that is replaced by rename (a checkpoint) has been written twice: `path`
// exists, and then a later version takes its place (its inode changes); false at `timeout`.
// A node killed after this is past a checkpoint, mid-run however fast or slow the machine is,
// when its remaining steps take a known minimum time (a --fault-delay-ms on every message).
inline bool WaitUntilReplaced(const std::string& path, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto inode = [&path]() -> ino_t {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
  };
  ino_t first = 0;
  while ((first = inode()) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (ino_t now = first; now == first || now == 0; now = inode()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// A loopback port base that no other test process on this machine holds at the same time
// (ports BASE..BASE+39 are this process's: room for 8 nodes of 4 ports each, the way
// starlingd's --port places the nodes a process manager starts on one host). The
// pid chooses where to look first, and a lock file per base, held until this process exits,
// settles collisions: pid % 2000 alone repeated among the many processes that `ctest -j` (and
// several checkouts) ran at once, and a daemon then failed to bind ("Address already in use") or
// met another test's daemon (a CURVE handshake with the wrong key, under load).
// Bases stay below 32768, where Linux's ephemeral ports begin: the local port of some outgoing
// connection could occupy one otherwise.
inline int PortBase() {
  static const int base = [] {
    // 40 apart; 20000 + 40 * 317 = 32680.
    constexpr int kSlots = 317;
    const int first = static_cast<int>(getpid() % kSlots);
    for (int k = 0; k < kSlots; ++k) {
      const int candidate = 20000 + ((first + k) % kSlots) * 40;
      const std::string lock = "/tmp/starling-test-ports-" + std::to_string(candidate) + ".lock";
      const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
      if (fd < 0) continue;
      // Kept open (never closed): the lock lasts as long as this process.
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return candidate;
      ::close(fd);
    }
    return 20000 + first * 40;
  }();
  return base;
}

}  // namespace starling::testing
