// The C ABI of capi/starling.h over starlingd's node (node/daemon/daemon.h: RunDaemon with the
// caller's model as its pairwise algorithm).
#include "capi/starling.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/round/round_algorithm.h"
#include "capi/error_sink.h"
#include "capi/external_gradient.h"
#include "capi/external_pairwise.h"
#include "capi/step_handover.h"
#include "node/config/process.h"
#include "node/config/run_options.h"
#include "node/config/run_setup.h"
#include "node/daemon/daemon.h"
#include "node/daemon/daemon_cli.h"

namespace {

using starling::capi::GradientHandover;
using starling::capi::StageResult;
using starling::capi::StepHandover;

thread_local std::string g_last_error;

int Fail(int code, const std::string& what) {
  g_last_error = what;
  return code;
}

// Runs `f` and turns any exception into STARLING_E_INTERNAL (or E_ARGUMENT for a bad option).
template <typename F>
int Guarded(const char* function, F&& f) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    return Fail(STARLING_E_ARGUMENT, std::string(function) + ": " + e.what());
  } catch (const std::exception& e) {
    return Fail(STARLING_E_INTERNAL, std::string(function) + ": " + e.what());
  } catch (...) {
    return Fail(STARLING_E_INTERNAL, std::string(function) + ": unknown exception");
  }
}

}  // namespace

struct starling_node {
  starling::node::DaemonOptions options;
  // --join: the join ports and the member list, kept while the node lives.
  std::shared_ptr<starling::node::JoinSession> join_session;
  std::shared_ptr<starling::capi::LastErrorSink> errors;
  void* data = nullptr;
  uint64_t length = 0;
  int dtype = 0;
  std::unique_ptr<StepHandover> handover;  // pairwise
  // Round-based (capi/external_gradient.h): the gradients' hand-over and the caller's objective.
  bool round = false;
  std::unique_ptr<GradientHandover> gradients;
  std::unique_ptr<starling::capi::ExternalProblem> problem;
  std::atomic<bool> stop{false};
  std::thread thread;
  bool started = false, joined = false;
  int64_t step_timeouts = 0;
  double step_wait_seconds = 0.0;
  bool resumed = false;

  // Shared with the node's thread.
  std::mutex mutex;
  std::condition_variable changed;
  bool built = false, ended = false;
  int exit_code = -1;
  std::string error;

  template <typename F>
  auto WithBuffer(F&& f) {
    if (dtype == STARLING_FLOAT32) return f(static_cast<float*>(data));
    return f(static_cast<double*>(data));
  }
  void Run();
  // The loop's end as a return code (STARLING_E_NODE with its message unless it ended well).
  int EndedCode() {
    std::lock_guard<std::mutex> lock(mutex);
    if (exit_code == starling::node::kExitOk) return STARLING_OK;
    return Fail(STARLING_E_NODE, "node " + std::to_string(options.id) + " ended with exit code " +
                                     std::to_string(exit_code) + ": " + error);
  }
  bool Ended() {
    std::lock_guard<std::mutex> lock(mutex);
    return ended;
  }
  // Joins the thread and writes the final model (the merges since the last boundary) into the
  // buffer.
  void Join() {
    if (!started || joined) return;
    thread.join();
    joined = true;
    if (round) {
      WithBuffer([&](auto* b) { gradients->TakeFinal(b, length); });
    } else {
      WithBuffer([&](auto* b) { handover->Sync(b, length); });
    }
  }
  void Interrupt() {
    stop.store(true);
    if (gradients) gradients->Interrupt();
  }
};

void starling_node::Run() {
  int code = starling::node::kExitConfig;
  std::string what;
  try {
    const int h = options.run.local_steps;
    const auto on_built = [&] {
      std::lock_guard<std::mutex> lock(mutex);
      built = true;
      changed.notify_all();
    };
    if (round) {
      // starlingd's RoundNode over the caller's objective (options.external_problem).
      code = starling::node::RunDaemon(options, &stop, nullptr, on_built);
    } else {
      code = starling::node::RunDaemon(
          options, &stop,
          [&](const starling::algorithms::NodeSetup& me) {
            return starling::capi::MakeExternalSwarmSgd(me, h, options.run.compression,
                                                        handover.get());
          },
          on_built);
    }
  } catch (const std::exception& e) {
    what = e.what();  // before the network was up: nobody else has said it
  } catch (...) {
    what = "unknown exception";
  }
  if (round) {
    gradients->End();
  } else {
    handover->EndSteps();
  }
  std::lock_guard<std::mutex> lock(mutex);
  ended = true;
  exit_code = code;
  if (what.empty() && code != starling::node::kExitOk) what = errors->last();
  error = what;
  changed.notify_all();
}

extern "C" {

const char* starling_last_error(void) { return g_last_error.c_str(); }

int starling_create(int argc, const char* const* argv, starling_node** out) {
  if (out == nullptr || argv == nullptr || argc < 1) {
    return Fail(STARLING_E_ARGUMENT, "starling_create: argv, argc >= 1 and out are required");
  }
  *out = nullptr;
  return Guarded("starling_create", [&] {
    starling::node::DaemonCommandLine cl =
        starling::node::ParseDaemonCommandLine(argc, argv, /*external_model=*/true);
    if (cl.help || !cl.keygen_prefix.empty()) {
      return Fail(STARLING_E_ARGUMENT,
                  "starling_create: --help and --keygen are starlingd's (run starlingd)");
    }
    const std::string& algorithm = cl.options.run.algorithm;
    const bool round = starling::algorithms::IsRoundAlgorithm(algorithm);
    if (algorithm != "swarmsgd" && !starling::capi::IsExternalRoundMethod(algorithm)) {
      return Fail(STARLING_E_ARGUMENT,
                  "--algorithm " + algorithm +
                      ": the C ABI runs swarmsgd (pairwise: the caller's steps) and the "
                      "round-based methods that need only gradients: " +
                      starling::capi::ExternalRoundMethods());
    }
    if (round && !(cl.options.run.step > 0)) {
      return Fail(STARLING_E_ARGUMENT,
                  "--step: required for --algorithm " + algorithm +
                      " through the C ABI (its default is a multiple of 1/L, and the caller's "
                      "objective has no known L)");
    }
    if (round && cl.options.run.compression != "none") {
      return Fail(STARLING_E_ARGUMENT, "--compression " + cl.options.run.compression +
                                           ": for swarmsgd only through the C ABI");
    }
    starling::node::UseStderrLogger("node " + std::to_string(cl.options.id), cl.log_level);
    // A rendezvous waits here, before starling_create returns (no stop signal: its deadline).
    starling::node::JoinDaemonRun(&cl, /*stop=*/nullptr);
    if (!cl.launch.join.empty()) {
      starling::node::RetagLogger("node " + std::to_string(cl.options.id));  // known now
    }
    auto node = std::make_unique<starling_node>();
    node->options = cl.options;
    node->join_session = cl.join_session;
    node->round = round;
    node->errors = std::make_shared<starling::capi::LastErrorSink>();
    spdlog::default_logger()->sinks().push_back(node->errors);
    *out = node.release();
    return STARLING_OK;
  });
}

int starling_set_model(starling_node* node, void* data, uint64_t length, int dtype) {
  if (node == nullptr) return Fail(STARLING_E_ARGUMENT, "starling_set_model: node is NULL");
  if (node->started) return Fail(STARLING_E_STATE, "starling_set_model: the node has started");
  if (data == nullptr || length == 0) {
    return Fail(STARLING_E_ARGUMENT, "starling_set_model: an empty buffer (data NULL or length 0)");
  }
  if (dtype != STARLING_FLOAT32 && dtype != STARLING_FLOAT64) {
    return Fail(STARLING_E_ARGUMENT, "starling_set_model: dtype " + std::to_string(dtype) +
                                         ": STARLING_FLOAT32 (1) or STARLING_FLOAT64 (2)");
  }
  if (length > (1ULL << 31)) {
    return Fail(STARLING_E_ARGUMENT, "starling_set_model: length " + std::to_string(length) +
                                         " above the wire's limit of 2^31 values");
  }
  node->data = data;
  node->length = length;
  node->dtype = dtype;
  return STARLING_OK;
}

int starling_start(starling_node* node) {
  if (node == nullptr) return Fail(STARLING_E_ARGUMENT, "starling_start: node is NULL");
  if (node->started) return Fail(STARLING_E_STATE, "starling_start: already started");
  if (node->data == nullptr) {
    return Fail(STARLING_E_STATE, "starling_start: no model (call starling_set_model first)");
  }
  return Guarded("starling_start", [&] {
    starling::Vec x0(node->length);
    node->WithBuffer([&](auto* b) {
      for (uint64_t i = 0; i < node->length; ++i) x0[i] = static_cast<double>(b[i]);
    });
    if (!x0.allFinite()) {
      return Fail(STARLING_E_ARGUMENT, "starling_start: the model buffer holds NaN or Inf");
    }
    node->options.external_model = x0;
    node->handover = std::make_unique<StepHandover>(node->length);
    if (node->round) {
      node->gradients = std::make_unique<GradientHandover>();
      node->problem = std::make_unique<starling::capi::ExternalProblem>(
          static_cast<int>(node->length), node->gradients.get());
      node->options.external_problem = node->problem.get();
      GradientHandover* gradients = node->gradients.get();
      node->options.final_model_sink = [gradients](const starling::Vec& x) {
        gradients->SetFinal(x);
      };
    }
    node->started = true;
    node->thread = std::thread([node] { node->Run(); });
    {
      // Gradient tracking's constructor asks for the gradient at x0 before the loop is built.
      std::unique_lock<std::mutex> lock(node->mutex);
      // (That request is the hand-over's, which does not notify `changed`: polled.)
      const auto up = [&] {
        return node->built || node->ended || (node->gradients && node->gradients->Requested());
      };
      while (!up()) node->changed.wait_for(lock, std::chrono::milliseconds(20), up);
    }
    if (!node->round) {
      node->resumed =
          node->WithBuffer([&](auto* b) { return node->handover->TakeResumed(b, node->length); });
    }
    if (node->Ended()) {
      node->Join();
      const int code = node->EndedCode();
      return code == STARLING_OK ? Fail(STARLING_E_NODE, "starling_start: the node ended at once")
                                 : code;
    }
    return STARLING_OK;
  });
}

int starling_step(starling_node* node, int64_t timeout_ms) {
  if (node == nullptr) return Fail(STARLING_E_ARGUMENT, "starling_step: node is NULL");
  if (!node->started || node->joined) {
    return Fail(STARLING_E_STATE, "starling_step: the node is not running");
  }
  if (node->round) {
    return Fail(STARLING_E_STATE, "starling_step: --algorithm " + node->options.run.algorithm +
                                      " is round-based: starling_iterate and starling_gradient");
  }
  return Guarded("starling_step", [&] {
    const StageResult r = node->WithBuffer([&](auto* b) {
      return node->handover->Stage(b, node->length, std::chrono::milliseconds(timeout_ms),
                                   &node->step_wait_seconds);
    });
    if (r == StageResult::kTimedOut) {
      ++node->step_timeouts;
      return STARLING_TIMEOUT;
    }
    if (r == StageResult::kStaged) return STARLING_OK;
    if (node->Ended()) {
      const int code = node->EndedCode();
      if (code != STARLING_OK) return code;
    }
    return STARLING_DONE;
  });
}

int starling_sync(starling_node* node) {
  if (node == nullptr) return Fail(STARLING_E_ARGUMENT, "starling_sync: node is NULL");
  if (!node->started) return Fail(STARLING_E_STATE, "starling_sync: the node has not started");
  if (node->joined || node->round) return STARLING_OK;  // nothing pending (round: no merges)
  node->WithBuffer([&](auto* b) { node->handover->Sync(b, node->length); });
  return STARLING_OK;
}

int starling_iterate(starling_node* node, int64_t timeout_ms) {
  if (node == nullptr) return Fail(STARLING_E_ARGUMENT, "starling_iterate: node is NULL");
  if (!node->round) {
    return Fail(STARLING_E_STATE, "starling_iterate: --algorithm " + node->options.run.algorithm +
                                      " is pairwise: starling_step");
  }
  if (!node->started || node->joined) {
    return Fail(STARLING_E_STATE, "starling_iterate: the node is not running");
  }
  return Guarded("starling_iterate", [&] {
    const GradientHandover::Wait r = node->WithBuffer([&](auto* b) {
      return node->gradients->WaitIterate(b, node->length, std::chrono::milliseconds(timeout_ms),
                                          &node->step_wait_seconds);
    });
    if (r == GradientHandover::Wait::kTimedOut) {
      ++node->step_timeouts;
      return STARLING_TIMEOUT;
    }
    if (r == GradientHandover::Wait::kIterate) return STARLING_OK;
    if (r == GradientHandover::Wait::kEnded) {
      // No final model: the loop ended early. Its exit code and message, once it has ended.
      std::unique_lock<std::mutex> lock(node->mutex);
      node->changed.wait(lock, [&] { return node->ended; });
      lock.unlock();
      const int code = node->EndedCode();
      return code != STARLING_OK
                 ? code
                 : Fail(STARLING_E_STATE, "starling_iterate: the node stopped before the end");
    }
    return STARLING_DONE;
  });
}

int starling_gradient(starling_node* node, const void* gradient, uint64_t length) {
  if (node == nullptr) return Fail(STARLING_E_ARGUMENT, "starling_gradient: node is NULL");
  if (!node->round) {
    return Fail(STARLING_E_STATE, "starling_gradient: --algorithm " + node->options.run.algorithm +
                                      " is pairwise: starling_step");
  }
  if (gradient == nullptr) return Fail(STARLING_E_ARGUMENT, "starling_gradient: gradient is NULL");
  if (length != node->length) {
    return Fail(STARLING_E_ARGUMENT, "starling_gradient: " + std::to_string(length) +
                                         " values, the model has " + std::to_string(node->length));
  }
  if (!node->started || node->joined) {
    return Fail(STARLING_E_STATE, "starling_gradient: the node is not running");
  }
  std::string why;
  const bool given =
      node->dtype == STARLING_FLOAT32
          ? node->gradients->Give(static_cast<const float*>(gradient), length, &why)
          : node->gradients->Give(static_cast<const double*>(gradient), length, &why);
  if (!given) {
    return Fail(why.find("NaN") != std::string::npos ? STARLING_E_ARGUMENT : STARLING_E_STATE,
                "starling_gradient: " + why);
  }
  return STARLING_OK;
}

int starling_finish(starling_node* node, int64_t timeout_ms, int* exit_code) {
  if (node == nullptr) return Fail(STARLING_E_ARGUMENT, "starling_finish: node is NULL");
  if (!node->started) return Fail(STARLING_E_STATE, "starling_finish: the node has not started");
  return Guarded("starling_finish", [&] {
    {
      std::unique_lock<std::mutex> lock(node->mutex);
      const auto ended = [&] { return node->ended; };
      if (timeout_ms < 0) {
        node->changed.wait(lock, ended);
      } else if (!node->changed.wait_for(lock, std::chrono::milliseconds(timeout_ms), ended)) {
        return STARLING_TIMEOUT;
      }
      if (exit_code != nullptr) *exit_code = node->exit_code;
    }
    node->Join();
    return node->EndedCode();
  });
}

int starling_stop(starling_node* node) {
  if (node == nullptr) return Fail(STARLING_E_ARGUMENT, "starling_stop: node is NULL");
  if (!node->started) return STARLING_OK;
  return Guarded("starling_stop", [&] {
    node->Interrupt();
    node->Join();
    return node->EndedCode();
  });
}

int starling_get_counters(starling_node* node, starling_counters* out) {
  if (node == nullptr || out == nullptr) {
    return Fail(STARLING_E_ARGUMENT, "starling_get_counters: node and out are required");
  }
  starling::algorithms::PairwiseCounters c =
      node->handover ? node->handover->counters() : starling::algorithms::PairwiseCounters{};
  if (node->gradients) c.local_steps = node->gradients->taken();
  out->local_steps = c.local_steps;
  out->exchanges_initiated = c.exchanges_initiated;
  out->exchanges_served = c.exchanges_served;
  out->exchanges_aborted = c.exchanges_aborted;
  out->bits_sent = c.bits_sent;
  out->step_timeouts = node->step_timeouts;
  out->step_wait_seconds = node->step_wait_seconds;
  out->resumed = node->resumed ? 1 : 0;
  std::lock_guard<std::mutex> lock(node->mutex);
  out->running = node->started && !node->ended ? 1 : 0;
  out->finished = node->gradients ? node->gradients->has_final()
                                  : c.local_steps >= node->options.run.iterations;
  out->exit_code = node->ended ? node->exit_code : -1;
  return STARLING_OK;
}

void starling_destroy(starling_node* node) {
  if (node == nullptr) return;
  try {
    node->Interrupt();
    if (node->started && !node->joined) node->thread.join();
    auto& sinks = spdlog::default_logger()->sinks();
    for (auto it = sinks.begin(); it != sinks.end(); ++it) {
      if (*it == node->errors) {
        sinks.erase(it);
        break;
      }
    }
  } catch (...) {
    // Nothing may escape; the thread is joined or was never started.
  }
  delete node;
}

int starling_partition(int argc, const char* const* argv, int32_t node_id, int64_t** rows,
                       int64_t* count) {
  if (rows == nullptr || count == nullptr || argv == nullptr || argc < 1) {
    return Fail(STARLING_E_ARGUMENT,
                "starling_partition: argv, argc >= 1, rows and count are required");
  }
  *rows = nullptr;
  *count = 0;
  return Guarded("starling_partition", [&] {
    starling::node::RunConfig config;
    boost::program_options::options_description options("run options");
    starling::node::AddRunOptions(&options, &config);
    const boost::program_options::variables_map vm =
        starling::node::ParseCommandLine(argc, argv, options);
    if (vm.count("nodes") == 0 || vm["nodes"].defaulted()) {
      return Fail(STARLING_E_ARGUMENT,
                  "starling_partition: --nodes is required (the shards depend on the number of "
                  "nodes)");
    }
    std::vector<int> shard;
    try {
      shard = starling::node::ShardRows(config, node_id);
    } catch (const std::runtime_error& e) {  // an unreadable or malformed file: the caller's
      return Fail(STARLING_E_ARGUMENT, std::string("starling_partition: ") + e.what());
    }
    auto out = std::make_unique<int64_t[]>(shard.size());
    std::copy(shard.begin(), shard.end(), out.get());
    *count = static_cast<int64_t>(shard.size());
    *rows = out.release();
    return STARLING_OK;
  });
}

void starling_free_rows(int64_t* rows) { delete[] rows; }

}  // extern "C"
