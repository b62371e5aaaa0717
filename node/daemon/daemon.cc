#include "node/daemon/daemon.h"

#include <memory>
#include <stdexcept>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/problems/gradient_interrupted.h"
#include "node/daemon/node_runtime.h"
#include "node/daemon/pairwise_diffusion_node.h"
#include "node/daemon/pairwise_node.h"
#include "node/daemon/round_node.h"

namespace starling::node {

namespace {

// The loop for the run's algorithm: one class per shape (node_runtime.h).
std::unique_ptr<NodeLoop> MakeNodeLoop(NodeRuntime* runtime, const PairwiseFactory& make) {
  if (make) return std::make_unique<PairwiseNode>(runtime, make(runtime->me()));
  if (runtime->config().algorithm == "pairwise-diffusion") {
    return std::make_unique<PairwiseDiffusionNode>(runtime);
  }
  if (algorithms::IsPairwiseAlgorithm(runtime->config().algorithm)) {
    return std::make_unique<PairwiseNode>(runtime);
  }
  return std::make_unique<RoundNode>(runtime);
}

}  // namespace

int RunDaemon(const DaemonOptions& options, const std::atomic<bool>* stop) {
  return RunDaemon(options, stop, nullptr, nullptr);
}

int RunDaemon(const DaemonOptions& options, const std::atomic<bool>* stop,
              const PairwiseFactory& make, const std::function<void()>& built) {
  NodeRuntime runtime(options, stop);
  int code;
  try {
    runtime.Start();
    // Destroyed before the sockets close, as the loop's algorithm and driver always were.
    const std::unique_ptr<NodeLoop> loop = MakeNodeLoop(&runtime, make);
    if (built) built();
    code = loop->Run();
  } catch (const algorithms::GradientInterrupted&) {
    // The C ABI's caller stopped the node before its first gradient (gradient tracking's
    // constructor asks for the one at x0): nothing done, nothing to checkpoint.
    if (!runtime.network_up()) throw;
    runtime.transport().SayGoodbye("stopped by signal");
    return runtime.Finish(kExitOk);
  } catch (const std::exception& e) {
    // Before the network is up there is no one to tell: the caller prints the error. After,
    // the neighbours hear why with a BYE, and the exit line is written.
    if (!runtime.network_up()) throw;
    return runtime.Fail(e.what());
  }
  return runtime.Finish(code);
}

}  // namespace starling::node
