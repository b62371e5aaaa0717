#include "node/probe/inference_plot.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <system_error>
#include <thread>
#include <vector>

extern char** environ;

namespace starling::node {

std::string PlotInference(const std::string& script, const std::string& dir) {
  const std::string python = "/usr/bin/python3";
  if (access(python.c_str(), X_OK) != 0) return "no " + python + ": no PNG drawn";
  if (access(script.c_str(), R_OK) != 0) return script + " not found: no PNG drawn";
  std::vector<std::string> argv = {python, script, dir};
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, python.c_str(), nullptr, nullptr, args.data(), environ) != 0) {
    return "cannot start " + python + ": no PNG drawn";
  }
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
      return script + " failed: no PNG drawn";
    }
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60)) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return script + " took longer than 60 s: no PNG drawn";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string DefaultPlotScript() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "";
  return (self.parent_path() / ".." / "share" / "starling" / "plot_inference.py")
      .lexically_normal()
      .string();
}

}  // namespace starling::node
