#include "node/daemon/node_runtime.h"

#include <spdlog/spdlog.h>
#include <time.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "net/endpoint.h"
#include "net/payload.h"
#include "node/config/curve_setup.h"
#include "node/config/run_id.h"
#include "node/daemon/checkpoint.h"
#include "node/report/json_line.h"

namespace starling::node {

namespace {

const char kDivergedBye[] = "diverged";

double ProcessCpuSeconds() {
  timespec t{};
  if (::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) return 0.0;
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

void NodeRuntime::Start() {
  ReadSetup();
  const net::TransportOptions t = TransportOptionsFor();
  OpenTransport(t);
  if (!config_.metrics.empty()) {
    metrics_.open(config_.metrics, std::ios::trunc);
    if (!metrics_) throw std::runtime_error(config_.metrics + ": cannot open metrics file");
  }
  const int id = options_.id;
  spdlog::info(
      "node {} up: {} on {} (d = {}, {} samples), peers at {}, telemetry at {}, run id "
      "{:#x}, {} neighbours",
      id, config_.algorithm, config_.problem, setup_.dim,
      setup_.problems[id] ? setup_.problems[id]->num_samples() : 0, t.bind_endpoint,
      t.telemetry_endpoint, run_id_, t.peers.size());
  start_ = last_report_ = Clock::now();
}

void NodeRuntime::ReadSetup() {
  cluster_ = topology::ReadClusterFile(options_.cluster_file);
  const int n = static_cast<int>(cluster_.nodes.size());
  if (options_.id < 0 || options_.id >= n) {
    throw std::invalid_argument("--id " + std::to_string(options_.id) + ": " +
                                options_.cluster_file + " lists nodes 0.." + std::to_string(n - 1));
  }
  config_ = options_.run;
  config_.nodes = n;
  config_.topology = "file:" + options_.cluster_file;
  BuildScope scope;
  scope.only_node = options_.id;
  scope.global = false;
  setup_ = BuildRunSetup(config_, scope);
  if (setup_.graph.Edges() != cluster_.graph.Edges()) {
    // An explicit --mixing / --laplacian defines the graph; the cluster file must agree with it.
    throw std::invalid_argument(
        options_.cluster_file + ": its edges differ from the graph of " +
        (config_.mixing_file.empty() ? config_.laplacian_file : config_.mixing_file));
  }
  run_id_ = RunIdFor(config_, setup_.graph);
}

net::TransportOptions NodeRuntime::TransportOptionsFor() const {
  const int id = options_.id;
  net::TransportOptions t;
  t.self_id = id;
  t.bind_endpoint = cluster_.nodes[id].endpoint;
  t.telemetry_endpoint = net::TelemetryEndpointFor(t.bind_endpoint);
  for (int j : setup_.graph.Neighbors(id)) t.peers.push_back({j, cluster_.nodes[j].endpoint});
  t.run_id = run_id_;
  t.dim = static_cast<uint32_t>(setup_.dim);
  t.hello_text = config_.algorithm;
  t.limits = net::LimitsForRun(t.dim, /*max_payloads=*/4);
  t.curve = NodeCurveOptions(cluster_, id, options_.secret_key_file, options_.allow_plaintext);
  return t;
}

void NodeRuntime::OpenTransport(const net::TransportOptions& t) {
  const int id = options_.id;
  if (t.curve) {
    spdlog::info("node {}: CURVE on, public key {}, {} keys allowed", id, t.curve->public_key,
                 t.curve->allowed.size());
  } else {
    spdlog::warn(
        "node {}: --allow-plaintext: peer traffic is neither encrypted nor "
        "authenticated; use it only on a network you trust",
        id);
  }
  context_ = std::make_unique<zmq::context_t>(1);
  transport_ = std::make_unique<net::Transport>(context_.get(), t);
  faulty_ = std::make_unique<net::FaultyTransport>(transport_.get(), options_.faults, id);
  if (faulty_->active()) {
    spdlog::warn("node {}: fault injection on its outgoing data: {}", id,
                 options_.faults.Describe());
  }
}

int NodeRuntime::Finish(int code) {
  const int id = options_.id;
  const auto& r = transport_->rejects();
  spdlog::info(
      "node {} done (exit {}): {:.1f} s, compute {:.1f} s, sent {} B, received {} B, "
      "rejected {}{}{}",
      id, code, Seconds(Clock::now() - start_), compute_seconds_, transport_->bytes_sent(),
      transport_->bytes_received(), r.total(), r.total() ? ": " : "", r.Summary());
  if (faulty_->active()) {
    spdlog::info("node {} injected faults: {}", id, faulty_->counters().Summary());
  }
  faulty_.reset();
  transport_.reset();
  context_.reset();
  return code;
}

void NodeRuntime::Send(int32_t peer, const net::Envelope& envelope,
                       const std::shared_ptr<const void>& keepalive) {
  if (!faulty_->Send(peer, envelope, keepalive)) {
    spdlog::warn("send queue to {} is full", Describe(peer));
  }
}

void NodeRuntime::EndTurn() {
  faulty_->Flush();
  transport_->Tick();
}

int NodeRuntime::CheckPeers() {
  for (int32_t peer : transport_->RefusedBy()) {
    spdlog::error(
        "{} refused this node: {}; check that every node runs the same configuration "
        "and cluster file",
        Describe(peer), transport_->peer(peer).refusal);
    transport_->SayGoodbye("refused by node " + std::to_string(peer));
    return kExitConfig;
  }
  if (diverged_peer_ >= 0) {
    spdlog::error(
        "{} reports that the run diverged (a model became NaN or Inf); stopping: try a "
        "smaller --step",
        Describe(diverged_peer_));
    transport_->SayGoodbye(kDivergedBye);  // passed on, so that the whole network stops
    return kExitDiverged;
  }
  return -1;
}

void NodeRuntime::NoteBye(int32_t peer, const std::string& reason) {
  if (reason == "finished") {
    finished_peers_.insert(peer);
  } else if (reason == kDivergedBye) {
    diverged_peer_ = peer;
  } else {
    spdlog::warn("{} left: {}", Describe(peer), reason);
  }
}

bool NodeRuntime::Met(int32_t peer) const {
  const auto& p = transport_->peer(peer);
  return p.greeted_us && p.accepted_us;
}

bool NodeRuntime::HeardRecently(int32_t peer, Clock::time_point now) const {
  const auto& p = transport_->peer(peer);
  return p.last_heard != Clock::time_point{} &&
         now - p.last_heard < 2 * transport_->options().heartbeat_interval;
}

void NodeRuntime::Report(int64_t iteration, const Vec& model, int64_t comm_rounds, bool final,
                         bool force) {
  const Clock::time_point now = Clock::now();
  if (!force && Millis(now - last_report_) < options_.telemetry_ms) return;
  last_report_ = now;
  const double elapsed = Seconds(now - start_);
  const double local_objective = LocalObjective(now, iteration, model, comm_rounds, final);
  PublishTelemetry(iteration, elapsed, local_objective, model, comm_rounds, final);
  if (metrics_.is_open()) WriteMetricsLine(iteration, elapsed, local_objective, comm_rounds, final);
}

double NodeRuntime::LocalObjective(Clock::time_point now, int64_t iteration, const Vec& model,
                                   int64_t comm_rounds, bool final) {
  // The local objective is a full pass over the shard: refreshed at most every
  // local_objective_seconds (and at the end), and kept out of the compute and blocked times.
  // A final line is refreshed only if the model changed since: a finished node reports final
  // lines every telemetry period while it lingers, and a pass each time took the cores from the
  // nodes still running (bench/run.sh overhead: their waits clustered when others finished).
  const std::pair<int64_t, int64_t> state{iteration, comm_rounds};
  if ((final && state != objective_of_) || !last_objective_at_ ||
      Seconds(now - *last_objective_at_) >= options_.local_objective_seconds) {
    objective_of_ = state;
    // The diffusion of topology inference has no objective.
    const auto& problem = setup_.problems[options_.id];
    local_objective_ = problem ? problem->Value(model) : 0.0;
    last_objective_at_ = Clock::now();
    report_seconds_ += Seconds(*last_objective_at_ - now);
  }
  return local_objective_;
}

void NodeRuntime::PublishTelemetry(int64_t iteration, double elapsed, double local_objective,
                                   const Vec& model, int64_t comm_rounds, bool final) {
  net::Envelope e;
  e.type = net::MessageType::kTelemetry;
  e.telemetry = {{"iteration", static_cast<double>(iteration)},
                 {"time", elapsed},
                 {"local_objective", local_objective},
                 {"comm_rounds", static_cast<double>(comm_rounds)},
                 {"bytes_sent", static_cast<double>(transport_->bytes_sent())},
                 {"bytes_received", static_cast<double>(transport_->bytes_received())},
                 {"rejected", static_cast<double>(transport_->rejects().total())},
                 {"compute_s", compute_seconds_},
                 {"final", final ? 1.0 : 0.0}};
  e.payloads = {net::Float64Payload(model.data(), static_cast<uint32_t>(model.size()))};
  transport_->Publish(e);
}

void NodeRuntime::WriteMetricsLine(int64_t iteration, double elapsed, double local_objective,
                                   int64_t comm_rounds, bool final) {
  JsonLine line;
  line.Add("node", options_.id)
      .Add("iter", iteration)
      .Add("time", elapsed)
      // Wall clock, so that lines of different nodes can be put on one time axis (their
      // `time` counts from each process's own start).
      .Add("unix_time",
           std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
               .count())
      .Add("local_objective", local_objective)
      .Add("comm_rounds", comm_rounds)
      .Add("bytes_sent", static_cast<int64_t>(transport_->bytes_sent()))
      .Add("bytes_received", static_cast<int64_t>(transport_->bytes_received()))
      .Add("rejected", static_cast<int64_t>(transport_->rejects().total()))
      .Add("compute_s", compute_seconds_)
      // Up to now, not `elapsed`: report_seconds_ already holds this line's objective pass.
      .Add("blocked_s",
           Seconds(Clock::now() - start_) - compute_seconds_ - report_seconds_ - startup_seconds_)
      .Add("startup_s", startup_seconds_)
      .Add("wait_s", wait_seconds_)
      // All threads' CPU time (ZeroMQ's I/O thread and CURVE included): how much of the
      // machine the node takes, e.g. when many nodes share few cores.
      .Add("cpu_s", ProcessCpuSeconds());
  if (config_.compression != "none") line.Add("decode_failures", decode_failures_);
  line.Add("final", final ? 1 : 0);
  metrics_ << line.str() << '\n' << std::flush;
}

void NodeRuntime::SimulatedCompute(Clock::time_point t0, const net::Transport::Handler& handler) {
  if (options_.compute_delay_ms <= 0) return;
  const Clock::time_point until =
      t0 + std::chrono::microseconds(static_cast<int64_t>(options_.compute_delay_ms * 1e3));
  for (Clock::time_point now = Clock::now(); now < until && !stop_->load(); now = Clock::now()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - now);
    if (left.count() == 0) {
      // zmq_poll counts whole milliseconds: polling the last fraction of one with a zero time-out
      // spun at 100% of a core (up to a fifth of each 5 ms step). Messages arriving meanwhile
      // are handled right after the step.
      std::this_thread::sleep_until(until);
      break;
    }
    transport_->Poll(left, handler);
  }
}

bool NodeRuntime::Resume(const std::function<void(const algorithms::AlgorithmState&)>& load) {
  if (!options_.resume) return false;
  if (options_.checkpoint_file.empty()) throw std::invalid_argument("--resume needs --checkpoint");
  if (!std::filesystem::exists(options_.checkpoint_file)) {
    spdlog::warn("node {}: --resume: no checkpoint at {} yet; starting from the beginning",
                 options_.id, options_.checkpoint_file);
    return false;
  }
  const Checkpoint c = ReadCheckpoint(options_.checkpoint_file, run_id_, options_.id);
  load(c.state);
  return true;
}

void NodeRuntime::MaybeCheckpoint(int64_t steps,
                                  const std::function<bool(algorithms::AlgorithmState*)>& save,
                                  bool force) {
  if (options_.checkpoint_file.empty()) return;
  const Clock::time_point now = Clock::now();
  const bool by_steps =
      options_.checkpoint_every > 0 && steps - last_checkpoint_steps_ >= options_.checkpoint_every;
  const bool by_time = options_.checkpoint_every_seconds > 0 &&
                       Seconds(now - last_checkpoint_at_) >= options_.checkpoint_every_seconds;
  if (!force && !by_steps && !by_time) return;
  Checkpoint c;
  c.run_id = run_id_;
  c.node_id = options_.id;
  if (!save(&c.state)) {
    if (checkpoints_written_++ == 0) {
      spdlog::warn("node {}: {} cannot be checkpointed; --checkpoint ignored", options_.id,
                   config_.algorithm);
    }
    last_checkpoint_steps_ = steps;
    last_checkpoint_at_ = now;
    return;
  }
  const Clock::time_point t0 = Clock::now();
  WriteCheckpoint(options_.checkpoint_file, c);
  report_seconds_ += Seconds(Clock::now() - t0);  // not computation, not waiting
  ++checkpoints_written_;
  last_checkpoint_steps_ = steps;
  last_checkpoint_at_ = now;
}

int NodeRuntime::StopDiverged(const std::string& when) {
  spdlog::error("node {} diverged {}: its model is no longer finite; try a smaller --step",
                options_.id, when);
  transport_->SayGoodbye(kDivergedBye);
  return kExitDiverged;
}

int NodeRuntime::GiveUp(const std::string& bye) {
  transport_->SayGoodbye(bye);
  return kExitGaveUp;
}

void NodeRuntime::StopOnSignal(const std::string& when, int64_t steps,
                               const std::function<bool(algorithms::AlgorithmState*)>& save) {
  spdlog::info("node {} stopping on signal {}", options_.id, when);
  MaybeCheckpoint(steps, save, true);
  transport_->SayGoodbye("stopped by signal");
}

void NodeRuntime::WriteFinalModel(const Vec& model) const {
  if (options_.final_model.empty()) return;
  const std::string tmp = options_.final_model + ".tmp";
  {
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    if (f == nullptr) throw std::runtime_error(tmp + ": cannot write the final model");
    for (Eigen::Index k = 0; k < model.size(); ++k) std::fprintf(f, "%.17g\n", model[k]);
    if (std::fclose(f) != 0) throw std::runtime_error(tmp + ": write failed");
  }
  if (std::rename(tmp.c_str(), options_.final_model.c_str()) != 0) {
    throw std::runtime_error(options_.final_model + ": cannot rename the final model into place");
  }
}

}  // namespace starling::node
