#include "node/daemon/daemon.h"

#include <time.h>

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <memory>
#include <optional>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>

#include <zmq.hpp>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/round/round_algorithm.h"
#include "net/codec.h"
#include "net/endpoint.h"
#include "net/faulty_transport.h"
#include "net/payload.h"
#include "net/transport.h"
#include "node/drivers/exchange_driver.h"
#include "node/drivers/exchange_wire.h"
#include "node/config/curve_setup.h"
#include "node/daemon/checkpoint.h"
#include "node/report/json_line.h"
#include "node/drivers/payload_history.h"
#include "node/drivers/round_synchronizer.h"
#include "node/config/run_id.h"
#include "node/config/run_setup.h"
#include "node/drivers/sample_telemetry.h"
#include "node/drivers/vector_wire.h"

namespace starling::node {

namespace {

using Clock = std::chrono::steady_clock;

const char kDivergedBye[] = "diverged";

// Diffusion samples per telemetry message, and the longest a sample waits to be published.
constexpr uint32_t kDiffusionSampleBatch = 512;
constexpr int64_t kDiffusionSampleAgeMs = 100;

// A model about to be sent that is no longer finite: peers would reject it as malformed, so the
// run cannot continue; the node says so with a BYE that every node passes on.
bool Diverged(const Vec& v) { return !v.allFinite(); }

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
int64_t Millis(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

algorithms::StepKey ToStepKey(const net::WireKey& k) { return {k.iteration, k.phase, k.subround}; }
net::WireKey ToWireKey(const algorithms::StepKey& k) { return {k.iteration, k.phase, k.subround}; }

// Everything both loop shapes share: the transport, telemetry, metrics, waits and shutdown.
class Node {
 public:
  Node(const DaemonOptions& options, const std::atomic<bool>* stop)
      : options_(options), stop_(stop) {}

  int Run();

 private:
  int RunRound();
  int RunPairwise();

  // Telemetry and the node's metrics line, every telemetry_ms (and forced at the end).
  void Report(int64_t iteration, const Vec& model, int64_t comm_rounds, bool final, bool force);
  // Common checks each loop turn: a refusal is fatal. Returns an exit code or -1 to go on.
  int CheckPeers();
  void NoteBye(int32_t peer, const std::string& reason);
  bool AllNeighborsFinished() const {
    return finished_peers_.size() == setup_.nodes[options_.id].neighbors.size();
  }
  std::string Describe(int peer) const {
    return "node " + std::to_string(peer) + " (" + cluster_.nodes[peer].endpoint + ")";
  }
  void WriteFinalModel(const Vec& model) const;
  // --compute-delay-ms: the rest of a step begun at t0 takes that long in all, while messages
  // are handled meanwhile, as a communication thread would beside a device computing.
  void SimulatedCompute(Clock::time_point t0, const net::Transport::Handler& handler);
  // Checkpoints: loads the state into `load` if --resume and the file exists (true if it did);
  // writes one when due (or when `force`) with the state `save` fills.
  bool Resume(const std::function<void(const algorithms::AlgorithmState&)>& load);
  void MaybeCheckpoint(int64_t steps, const std::function<bool(algorithms::AlgorithmState*)>& save,
                       bool force);

  const DaemonOptions& options_;
  const std::atomic<bool>* stop_;
  topology::Cluster cluster_;
  RunConfig config_;
  RunSetup setup_;
  std::unique_ptr<zmq::context_t> context_;
  std::unique_ptr<net::Transport> transport_;
  std::ofstream metrics_;
  Clock::time_point start_, last_report_;
  double compute_seconds_ = 0.0;
  double report_seconds_ = 0.0;  // spent evaluating the local objective for reports
  // Pairwise: time in Poll while the staleness bound held the node (it could not compute until
  // an exchange completed): the strict "blocked on communication" of ALGORITHMS.md T7.
  double wait_seconds_ = 0.0;
  // Pairwise: time before the first local step spent waiting for the first neighbour to come up
  // (processes started seconds apart). Not communication: reported apart from blocked_s.
  double startup_seconds_ = 0.0;
  double local_objective_ = 0.0;
  // Compressed pairwise runs: exchanges whose lattice decoding or top-k copy check failed (each
  // retried at full precision).
  int64_t decode_failures_ = 0;
  std::optional<Clock::time_point> last_objective_at_;
  // (iteration, comm_rounds) of the model whose objective local_objective_ holds.
  std::pair<int64_t, int64_t> objective_of_{-1, -1};
  std::set<int32_t> finished_peers_;
  int32_t diverged_peer_ = -1;
  // Last RESEND answered per (peer, key), so that a flood of RESENDs cannot queue payloads.
  std::map<int32_t, std::pair<algorithms::StepKey, Clock::time_point>> last_resend_answer_;
  uint64_t protocol_drops_ = 0;
  uint64_t run_id_ = 0;
  std::unique_ptr<net::FaultyTransport> faulty_;  // the data path, with any injected faults
  int64_t last_checkpoint_steps_ = 0;
  Clock::time_point last_checkpoint_at_{};
  uint64_t checkpoints_written_ = 0;
};

int Node::Run() {
  cluster_ = topology::ReadClusterFile(options_.cluster_file);
  const int n = static_cast<int>(cluster_.nodes.size());
  if (options_.id < 0 || options_.id >= n) {
    throw std::invalid_argument("--id " + std::to_string(options_.id) + ": " +
                                options_.cluster_file + " lists nodes 0.." +
                                std::to_string(n - 1));
  }
  const int id = options_.id;
  config_ = options_.run;
  config_.nodes = n;
  config_.topology = "file:" + options_.cluster_file;
  BuildScope scope;
  scope.only_node = id;
  scope.global = false;
  setup_ = BuildRunSetup(config_, scope);
  if (setup_.graph.Edges() != cluster_.graph.Edges()) {
    // An explicit --mixing / --laplacian defines the graph; the cluster file must agree with it.
    throw std::invalid_argument(options_.cluster_file + ": its edges differ from the graph of " +
                                (config_.mixing_file.empty() ? config_.laplacian_file
                                                             : config_.mixing_file));
  }
  const uint64_t run_id = RunIdFor(config_, setup_.graph);

  net::TransportOptions t;
  t.self_id = id;
  t.bind_endpoint = cluster_.nodes[id].endpoint;
  t.telemetry_endpoint = net::TelemetryEndpointFor(t.bind_endpoint);
  for (int j : setup_.graph.Neighbors(id)) t.peers.push_back({j, cluster_.nodes[j].endpoint});
  t.run_id = run_id;
  t.dim = static_cast<uint32_t>(setup_.dim);
  t.hello_text = config_.algorithm;
  t.limits = net::LimitsForRun(t.dim, /*max_payloads=*/4);
  t.curve = NodeCurveOptions(cluster_, id, options_.secret_key_file, options_.allow_plaintext);
  if (t.curve) {
    spdlog::info("node {}: CURVE on, public key {}, {} keys allowed", id, t.curve->public_key,
                 t.curve->allowed.size());
  } else {
    spdlog::warn("node {}: --allow-plaintext: peer traffic is neither encrypted nor "
                 "authenticated; use it only on a network you trust",
                 id);
  }
  context_ = std::make_unique<zmq::context_t>(1);
  transport_ = std::make_unique<net::Transport>(context_.get(), t);
  run_id_ = run_id;
  faulty_ = std::make_unique<net::FaultyTransport>(transport_.get(), options_.faults, id);
  if (faulty_->active()) {
    spdlog::warn("node {}: fault injection on its outgoing data: {}", id,
                 options_.faults.Describe());
  }
  if (!config_.metrics.empty()) {
    metrics_.open(config_.metrics, std::ios::trunc);
    if (!metrics_) throw std::runtime_error(config_.metrics + ": cannot open metrics file");
  }
  spdlog::info("node {} up: {} on {} (d = {}, {} samples), peers at {}, telemetry at {}, run id "
               "{:#x}, {} neighbours",
               id, config_.algorithm, config_.problem, setup_.dim,
               setup_.problems[id] ? setup_.problems[id]->num_samples() : 0, t.bind_endpoint,
               t.telemetry_endpoint, run_id, t.peers.size());
  start_ = last_report_ = Clock::now();
  const int code = algorithms::IsPairwiseAlgorithm(config_.algorithm) ? RunPairwise() : RunRound();
  const auto& r = transport_->rejects();
  spdlog::info("node {} done (exit {}): {:.1f} s, compute {:.1f} s, sent {} B, received {} B, "
               "rejected {}{}{}",
               id, code, Seconds(Clock::now() - start_), compute_seconds_,
               transport_->bytes_sent(), transport_->bytes_received(), r.total(),
               r.total() ? ": " : "", r.Summary());
  if (faulty_->active()) {
    spdlog::info("node {} injected faults: {}", id, faulty_->counters().Summary());
  }
  faulty_.reset();
  transport_.reset();
  context_.reset();
  return code;
}

int Node::CheckPeers() {
  for (int32_t peer : transport_->RefusedBy()) {
    spdlog::error("{} refused this node: {}; check that every node runs the same configuration "
                  "and cluster file",
                  Describe(peer), transport_->peer(peer).refusal);
    transport_->SayGoodbye("refused by node " + std::to_string(peer));
    return kExitConfig;
  }
  if (diverged_peer_ >= 0) {
    spdlog::error("{} reports that the run diverged (a model became NaN or Inf); stopping: try a "
                  "smaller --step",
                  Describe(diverged_peer_));
    transport_->SayGoodbye(kDivergedBye);  // passed on, so that the whole network stops
    return kExitDiverged;
  }
  return -1;
}

void Node::NoteBye(int32_t peer, const std::string& reason) {
  if (reason == "finished") {
    finished_peers_.insert(peer);
  } else if (reason == kDivergedBye) {
    diverged_peer_ = peer;
  } else {
    spdlog::warn("{} left: {}", Describe(peer), reason);
  }
}

double ProcessCpuSeconds() {
  timespec t{};
  if (::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) return 0.0;
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void Node::Report(int64_t iteration, const Vec& model, int64_t comm_rounds, bool final,
                  bool force) {
  const Clock::time_point now = Clock::now();
  if (!force && Millis(now - last_report_) < options_.telemetry_ms) return;
  last_report_ = now;
  const double elapsed = Seconds(now - start_);
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
  const double local_objective = local_objective_;
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
  if (metrics_.is_open()) {
    JsonLine line;
    line.Add("node", options_.id)
        .Add("iter", iteration)
        .Add("time", elapsed)
        // Wall clock, so that lines of different nodes can be put on one time axis (their
        // `time` counts from each process's own start).
        .Add("unix_time", std::chrono::duration<double>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count())
        .Add("local_objective", local_objective)
        .Add("comm_rounds", comm_rounds)
        .Add("bytes_sent", static_cast<int64_t>(transport_->bytes_sent()))
        .Add("bytes_received", static_cast<int64_t>(transport_->bytes_received()))
        .Add("rejected", static_cast<int64_t>(transport_->rejects().total()))
        .Add("compute_s", compute_seconds_)
        // Up to now, not `elapsed`: report_seconds_ already holds this line's objective pass.
        .Add("blocked_s", Seconds(Clock::now() - start_) - compute_seconds_ - report_seconds_ -
                              startup_seconds_)
        .Add("startup_s", startup_seconds_)
        .Add("wait_s", wait_seconds_)
        // All threads' CPU time (ZeroMQ's I/O thread and CURVE included): how much of the
        // machine the node takes, e.g. when many nodes share few cores.
        .Add("cpu_s", ProcessCpuSeconds());
    if (config_.compression != "none") line.Add("decode_failures", decode_failures_);
    line.Add("final", final ? 1 : 0);
    metrics_ << line.str() << '\n' << std::flush;
  }
}

void Node::SimulatedCompute(Clock::time_point t0, const net::Transport::Handler& handler) {
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

void Node::WriteFinalModel(const Vec& model) const {
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

bool Node::Resume(const std::function<void(const algorithms::AlgorithmState&)>& load) {
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

void Node::MaybeCheckpoint(int64_t steps,
                           const std::function<bool(algorithms::AlgorithmState*)>& save,
                           bool force) {
  if (options_.checkpoint_file.empty()) return;
  const Clock::time_point now = Clock::now();
  const bool by_steps = options_.checkpoint_every > 0 &&
                        steps - last_checkpoint_steps_ >= options_.checkpoint_every;
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

int Node::RunRound() {
  const int id = options_.id;
  const algorithms::NodeSetup& me = setup_.nodes[id];
  auto round_algorithm = algorithms::MakeRoundAlgorithm(RoundOptionsFor(config_, setup_), me);
  if (Resume([&](const algorithms::AlgorithmState& s) { round_algorithm->LoadState(s); })) {
    spdlog::info("node {} resumed from {} at step {} (iteration {}); it will replay the steps "
                 "since then with its neighbours' kept payloads",
                 id, options_.checkpoint_file, round_algorithm->key().ToString(),
                 round_algorithm->iteration());
  }
  RoundSynchronizer sync(std::move(round_algorithm), me);
  const int64_t target = config_.iterations;
  // Our recent payloads, for a neighbour that comes back from an older checkpoint.
  PayloadHistory history(static_cast<size_t>(
      options_.replay_window > 0 ? options_.replay_window
                                 : std::max<int64_t>(64, 2 * options_.checkpoint_every + 8)));
  // The furthest step a neighbour has asked us for: while we are behind it (after a resume),
  // each step's missing payloads are asked for at once instead of after --resend-ms.
  algorithms::StepKey catch_up_to = sync.key();
  int64_t steps_done = 0;
  uint64_t replayed_payloads = 0, resends_sent = 0;
  auto save_state = [&](algorithms::AlgorithmState* s) { return sync.algorithm().SaveState(s); };

  net::Envelope out;
  std::vector<std::string> sparse_storage;
  const bool sparse = sync.algorithm().SparseOutgoing();
  auto send_round = [&](int32_t peer, const algorithms::StepKey& key, const Vec& payload) {
    out.type = net::MessageType::kRound;
    out.key = ToWireKey(key);
    if (sparse) {
      AttachSparseVectors(payload, setup_.dim, &sparse_storage, &out);
    } else {
      AttachVectors(payload, setup_.dim, &out);
    }
    if (!faulty_->Send(peer, out)) spdlog::warn("send queue to {} is full", Describe(peer));
  };
  auto broadcast = [&]() {
    history.Record(sync.key(), sync.Outgoing());
    for (int j : me.neighbors) send_round(j, sync.key(), sync.Outgoing());
  };
  auto diverged = [&]() {
    spdlog::error("node {} diverged at step {}: its model is no longer finite; try a smaller "
                  "--step",
                  id, sync.key().ToString());
    transport_->SayGoodbye(kDivergedBye);
    return kExitDiverged;
  };
  if (Diverged(sync.Outgoing())) return diverged();

  // A diffusion node publishes its (t, y_t) samples for topology-inference probes.
  std::unique_ptr<SampleBatcher> samples;
  auto publish_samples = [&](bool force) {
    if (samples && (force ? !samples->empty() : samples->Due(Millis(Clock::now() - start_)))) {
      transport_->Publish(samples->Take());
    }
  };
  if (config_.algorithm == "diffusion") {
    samples = std::make_unique<SampleBatcher>(kDiffusionSampleBatch, kDiffusionSampleAgeMs);
    samples->Add(sync.algorithm().iteration(), sync.algorithm().Model()[0], 0);
  }

  bool finished = sync.algorithm().iteration() >= target;
  Clock::time_point last_progress = Clock::now(), last_resend = last_progress,
                    last_wait_log = last_progress, finished_at{};
  if (!finished) broadcast();
  if (finished) {
    finished_at = Clock::now();
    transport_->SayGoodbye("finished");
  }
  // A metrics line at the start (after the first broadcast: the neighbours wait for it, not for
  // this line's objective pass), as pairwise runs write one, and one at finishing below.
  Report(sync.algorithm().iteration(), sync.algorithm().Model(),
         sync.algorithm().counters().comm_rounds, finished, true);
  Vec incoming;
  net::Reject reject;

  auto handler = [&](int32_t peer, const net::Envelope& e) {
    switch (e.type) {
      case net::MessageType::kRound: {
        if (!CollectVectors(e, &incoming, &reject)) {
          transport_->ReportReject(peer, reject);
          return;
        }
        const auto verdict = sync.OnPayload(peer, ToStepKey(e.key), std::move(incoming));
        if (verdict == RoundSynchronizer::Verdict::kTooFarAhead && ++protocol_drops_ <= 5) {
          spdlog::warn("{} sent step {} while this node is at {}: dropped", Describe(peer),
                       ToStepKey(e.key).ToString(), sync.key().ToString());
        }
        break;
      }
      case net::MessageType::kResend: {
        // At most one answer per (peer, key) per resend period: resends are idempotent, and a
        // flood of RESENDs must not queue a payload each.
        const algorithms::StepKey key = ToStepKey(e.key);
        if (catch_up_to < key) catch_up_to = key;
        auto& last = last_resend_answer_[peer];
        if (last.first == key && Millis(Clock::now() - last.second) < options_.resend_ms) break;
        const Vec* p = sync.PayloadFor(key);
        if (p == nullptr && (p = history.Find(key)) != nullptr) {
          // A neighbour replaying the steps it lost in a restart.
          if (replayed_payloads++ == 0) {
            spdlog::info("{} asks for step {}: replaying from this node's kept payloads",
                         Describe(peer), key.ToString());
          }
        }
        if (p != nullptr) {
          send_round(peer, key, *p);
          last = {key, Clock::now()};
        }
        break;
      }
      case net::MessageType::kBye:
        NoteBye(peer, e.text);
        break;
      default:
        ++protocol_drops_;
        break;
    }
  };

  while (!stop_->load()) {
    if (int code = CheckPeers(); code >= 0) return code;
    transport_->Poll(std::chrono::milliseconds(finished ? 50 : 10), handler);
    while (!finished && sync.ReadyToAdvance()) {
      const Clock::time_point t0 = Clock::now();
      if (!sync.Advance()) break;  // a payload of the wrong size was dropped: wait again
      SimulatedCompute(t0, handler);
      compute_seconds_ += Seconds(Clock::now() - t0);
      last_progress = Clock::now();
      if (samples) {
        samples->Add(sync.algorithm().iteration(), sync.algorithm().Model()[0],
                     Millis(last_progress - start_));
        publish_samples(false);
      }
      MaybeCheckpoint(++steps_done, save_state, false);
      if (sync.algorithm().iteration() >= target) {
        finished = true;
        finished_at = Clock::now();
        transport_->SayGoodbye("finished");
        publish_samples(true);
        spdlog::info("node {} finished {} iterations", id, target);
        WriteFinalModel(sync.algorithm().Model());
        // Not a telemetry period later: the lingering since would count as time blocked.
        Report(sync.algorithm().iteration(), sync.algorithm().Model(),
               sync.algorithm().counters().comm_rounds, true, true);
      } else {
        if (Diverged(sync.Outgoing())) return diverged();
        broadcast();
        if (sync.key() < catch_up_to) {
          // Replaying after a resume: ask for this step's payloads now.
          net::Envelope resend;
          resend.type = net::MessageType::kResend;
          resend.key = ToWireKey(sync.key());
          for (int j : sync.Waiting()) resends_sent += faulty_->Send(j, resend);
          last_resend = Clock::now();
        }
      }
    }
    faulty_->Flush();
    transport_->Tick();
    publish_samples(false);
    const Clock::time_point now = Clock::now();
    if (!finished) {
      if (Millis(now - last_progress) >= options_.resend_ms &&
          Millis(now - last_resend) >= options_.resend_ms) {
        // Idempotent: a neighbour answers with its payload for our step if it has it.
        net::Envelope resend;
        resend.type = net::MessageType::kResend;
        resend.key = ToWireKey(sync.key());
        for (int j : sync.Waiting()) resends_sent += faulty_->Send(j, resend);
        last_resend = now;
      }
      if (Millis(now - last_progress) >= 1000 * options_.wait_log_seconds &&
          Millis(now - last_wait_log) >= 1000 * options_.wait_log_seconds) {
        last_wait_log = now;
        for (int j : sync.Waiting()) {
          spdlog::warn("waiting for {} at step {}: no progress for {:.0f} s", Describe(j),
                       sync.key().ToString(), Seconds(now - last_progress));
        }
      }
      if (Millis(now - last_progress) >= 1000 * options_.give_up_seconds) {
        std::string who;
        for (int j : sync.Waiting()) who += " " + Describe(j);
        spdlog::error("giving up at step {} after {} s without progress; waiting for:{}",
                      sync.key().ToString(), options_.give_up_seconds, who);
        transport_->SayGoodbye("gave up waiting at step " + sync.key().ToString());
        return kExitGaveUp;
      }
    }
    Report(sync.algorithm().iteration(), sync.algorithm().Model(),
           sync.algorithm().counters().comm_rounds, finished, false);
    if (finished && (AllNeighborsFinished() ||
                     Millis(now - finished_at) >= 1000 * options_.linger_seconds)) {
      break;
    }
  }
  if (stop_->load()) {
    spdlog::info("node {} stopping on signal at step {}", id, sync.key().ToString());
    MaybeCheckpoint(steps_done, save_state, true);
    transport_->SayGoodbye("stopped by signal");
  }
  if (replayed_payloads > 0) {
    spdlog::info("node {} served {} payloads from its kept history to a restarted neighbour", id,
                 replayed_payloads);
  }
  spdlog::info("node {} sent {} RESENDs for missing payloads", id, resends_sent);
  Report(sync.algorithm().iteration(), sync.algorithm().Model(),
         sync.algorithm().counters().comm_rounds, finished, true);
  return kExitOk;
}

int Node::RunPairwise() {
  const int id = options_.id;
  const algorithms::NodeSetup& me = setup_.nodes[id];
  const algorithms::PairwiseOptions pairwise = PairwiseOptionsFor(config_, setup_);
  auto algorithm = algorithms::MakePairwiseAlgorithm(pairwise, me);
  ExchangeWire wire(pairwise, setup_.dim);
  if (Resume([&](const algorithms::AlgorithmState& s) { algorithm->LoadState(s); })) {
    spdlog::info("node {} resumed from {} after {} local steps", id, options_.checkpoint_file,
                 algorithm->counters().local_steps);
  }
  auto save_state = [&](algorithms::AlgorithmState* s) { return algorithm->SaveState(s); };
  last_checkpoint_steps_ = algorithm->counters().local_steps;
  ExchangeTiming timing;
  timing.reply_timeout_ms = options_.exchange_timeout_ms;
  // A new life of this node numbers its exchanges above its previous life's, so that its
  // neighbours do not take its requests for duplicates (ExchangeDriver::DuplicateRequest).
  timing.sequence_offset =
      (static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count()) &
       0xffffffULL)
      << 14;
  ExchangeDriver driver(algorithm.get(), id, me.neighbors, me.seed ^ 0x5eed5eedULL, timing);
  const int64_t target = config_.iterations;
  auto now_ms = [&]() { return Millis(Clock::now() - start_); };

  net::Envelope out;
  bool diverged = false;
  auto send = [&](const ExchangeMessage& m) {
    // The model, not the payload: a compressed message holds codes or a sparse difference.
    if (m.payload && Diverged(algorithm->Model())) {
      diverged = true;
      return;
    }
    out.type = m.kind == ExchangeMessage::Kind::kRequest ? net::MessageType::kXchgReq
               : m.kind == ExchangeMessage::Kind::kReply ? net::MessageType::kXchgRep
                                                         : net::MessageType::kBusy;
    out.exchange_seq = m.seq;
    out.payloads.clear();
    // The keepalive is the algorithm's message itself when the payload views it (plain
    // exchanges): ZeroMQ then sends the snapshot without a copy (issue 7).
    std::shared_ptr<const void> keepalive;
    if (m.payload) keepalive = wire.Attach(m.payload, &out);
    if (!faulty_->Send(m.peer, out, keepalive)) {
      spdlog::warn("send queue to {} is full", Describe(m.peer));
    }
  };

  bool finished = target <= 0;
  uint64_t duplicate_requests = 0;
  net::Reject reject;
  auto handler = [&](int32_t peer, const net::Envelope& e) {
    if (finished_peers_.count(peer) == 0) driver.SetAvailable(peer, true);
    // `incoming` may view the received frame (plain exchanges: no copy), so it is used only
    // within this call, while `e` is alive; the algorithm keeps no reference to it.
    switch (e.type) {
      case net::MessageType::kXchgReq: {
        const std::optional<Eigen::Map<const Vec>> incoming =
            wire.Collect(e, /*request=*/true, &reject);
        if (!incoming) {
          transport_->ReportReject(peer, reject);
          return;
        }
        // A finished node serves no more requests, so that nodes still running cannot pull the
        // finished ones toward their own shards (on non-i.i.d. data the last node running would
        // otherwise specialize everybody). It still merges replies to its own offers, which the
        // sum of models needs.
        if (driver.DuplicateRequest(peer, e.exchange_seq)) {
          ++duplicate_requests;  // served already: answering again would merge twice
        } else if (finished) {
          send({ExchangeMessage::Kind::kBusy, peer, e.exchange_seq, nullptr});
        } else {
          send(driver.OnRequest(peer, e.exchange_seq, *incoming, now_ms()));
        }
        break;
      }
      case net::MessageType::kXchgRep: {
        const std::optional<Eigen::Map<const Vec>> incoming =
            wire.Collect(e, /*request=*/false, &reject);
        if (!incoming) {
          transport_->ReportReject(peer, reject);
          return;
        }
        driver.OnReply(peer, e.exchange_seq, *incoming);
        break;
      }
      case net::MessageType::kBusy:
        driver.OnBusy(peer, e.exchange_seq, now_ms());
        break;
      case net::MessageType::kBye:
        NoteBye(peer, e.text);
        driver.SetAvailable(peer, false);
        break;
      default:
        ++protocol_drops_;
        break;
    }
  };

  Clock::time_point finished_at = Clock::now();
  if (finished) transport_->SayGoodbye("finished");
  auto finish = [&](const std::string& why) {
    finished = true;
    finished_at = Clock::now();
    transport_->SayGoodbye("finished");
    const auto c = algorithm->counters();
    spdlog::info("node {} finished after {} local steps: {}", id, c.local_steps, why);
    // A metrics line at the moment of finishing: the next periodic one would come up to a
    // telemetry period later and count the lingering since as time blocked in the run
    // (bench/run.sh overhead reads the first line with all steps done).
    Report(c.local_steps, algorithm->Model(), c.exchanges_initiated + c.exchanges_served, true,
           true);
  };
  // Start-up. Daemons launched together come up seconds apart (each loads its data), so a
  // neighbour is chosen as a partner only once both connections work: its HELLO reached us and
  // its answer to ours came back (a DEALER retries a neighbour that was not up yet with a growing
  // interval, so our offer could sit in its queue for seconds while the other neighbour was
  // ready). No local step is taken before one neighbour is met (after 2H steps the node would
  // wait anyway); that wait is start-up, not communication (startup_s, outside blocked_s;
  // bench/run.sh overhead).
  std::vector<int> unmet;
  auto met = [&](int j) {
    const auto& p = transport_->peer(j);
    return p.greeted_us && p.accepted_us;
  };
  for (int j : me.neighbors) {
    if (!met(j)) {
      unmet.push_back(j);
      driver.SetAvailable(j, false);
    }
  }
  auto admit_met = [&]() {
    for (auto it = unmet.begin(); it != unmet.end();) {
      if (!met(*it)) {
        ++it;
        continue;
      }
      if (finished_peers_.count(*it) == 0) driver.SetAvailable(*it, true);
      it = unmet.erase(it);
    }
  };
  {
    // The first report's local objective is a full pass over the shard (up to a second with 16
    // daemons loading data on 2 cores). Done before the first Poll: until it acknowledges their
    // HELLOs no neighbour has met this node, so none waits on it meanwhile, while its socket is
    // already bound (a neighbour's DEALER does not back off into a longer reconnect interval).
    const auto c0 = algorithm->counters();
    Report(c0.local_steps, algorithm->Model(), c0.exchanges_initiated + c0.exchanges_served, false,
           true);
    const Clock::time_point t0 = Clock::now();
    const double report0 = report_seconds_;
    Clock::time_point logged = t0;
    auto unmet_list = [&]() {
      std::string list;
      for (int j : unmet) list += (list.empty() ? "" : ", ") + Describe(j);
      return list;
    };
    while (!finished && !stop_->load() && !unmet.empty() && unmet.size() == me.neighbors.size() &&
           finished_peers_.size() < me.neighbors.size()) {
      if (int code = CheckPeers(); code >= 0) return code;
      const Clock::time_point now = Clock::now();
      if (Millis(now - t0) >= 1000 * options_.give_up_seconds) {
        spdlog::error("giving up after {} s: no neighbour came up ({})", options_.give_up_seconds,
                      unmet_list());
        transport_->SayGoodbye("gave up waiting for a neighbour");
        return kExitGaveUp;
      }
      if (Millis(now - logged) >= 1000 * options_.wait_log_seconds) {
        logged = now;
        spdlog::warn("waiting {:.0f} s for a neighbour to come up: {}", Seconds(now - t0),
                     unmet_list());
      }
      transport_->Poll(std::chrono::milliseconds(5), handler);
      admit_met();
      faulty_->Flush();
      transport_->Tick();
      const auto c = algorithm->counters();
      Report(c.local_steps, algorithm->Model(), c.exchanges_initiated + c.exchanges_served, false,
             false);
    }
    startup_seconds_ = Seconds(Clock::now() - t0) - (report_seconds_ - report0);
  }
  Clock::time_point last_progress = Clock::now(), last_wait_log = last_progress,
                    last_readmit = last_progress;
  int64_t last_merges = 0;
  while (!stop_->load()) {
    if (int code = CheckPeers(); code >= 0) return code;
    if (diverged) {
      spdlog::error("node {} diverged after {} local steps: its model is no longer finite; try a "
                    "smaller --step",
                    id, algorithm->counters().local_steps);
      transport_->SayGoodbye(kDivergedBye);
      return kExitDiverged;
    }
    const bool wait = algorithm->ShouldWait() && driver.has_partners();
    if (!finished && !wait) {
      const Clock::time_point t0 = Clock::now();
      algorithm->LocalStep();
      SimulatedCompute(t0, handler);
      compute_seconds_ += Seconds(Clock::now() - t0);
      MaybeCheckpoint(algorithm->counters().local_steps, save_state, false);
      if (algorithm->counters().local_steps >= target) {
        finish("its step budget is done");
      } else if (auto m = driver.Tick(now_ms())) {
        send(*m);
      }
    }
    const Clock::time_point poll_start = Clock::now();
    transport_->Poll(std::chrono::milliseconds(finished ? 20 : wait ? 1 : 0), handler);
    if (wait && !finished) wait_seconds_ += Seconds(Clock::now() - poll_start);
    if (!finished && !driver.has_partners() && !me.neighbors.empty() &&
        finished_peers_.size() == me.neighbors.size()) {
      // Alone, further local steps would only drift from the network's model.
      finish("every neighbour has finished");
    }
    if (wait && !finished) {
      if (auto m = driver.Tick(now_ms())) send(*m);  // lets a timed-out offer go
    }
    // A neighbour excluded after repeated time-outs is taken back while it is alive: any message
    // from it (heartbeats included) within the last two heartbeat periods. A SIGSTOPped or dead
    // node sends none and stays out; one that returns is back within a second. With no partner
    // left this is checked every turn: a node alone would otherwise race through its local
    // steps, although its neighbours are only on a lossy link, not gone.
    if (!unmet.empty()) admit_met();  // a neighbour that has just come up
    if (!driver.has_partners() || Millis(Clock::now() - last_readmit) >= 500) {
      last_readmit = Clock::now();
      for (int j : me.neighbors) {
        const auto& peer = transport_->peer(j);
        if (finished_peers_.count(j) == 0 && peer.last_heard != Clock::time_point{} &&
            last_readmit - peer.last_heard < 2 * transport_->options().heartbeat_interval) {
          driver.SetAvailable(j, true);
        }
      }
    }
    faulty_->Flush();
    transport_->Tick();
    const auto c = algorithm->counters();
    decode_failures_ = c.decode_failures;
    Report(c.local_steps, algorithm->Model(), c.exchanges_initiated + c.exchanges_served, finished,
           false);
    const Clock::time_point now = Clock::now();
    const int64_t merges = c.exchanges_initiated + c.exchanges_served;
    if (!wait || merges != last_merges || finished) last_progress = now;
    last_merges = merges;
    if (Millis(now - last_progress) >= 1000 * options_.wait_log_seconds &&
        Millis(now - last_wait_log) >= 1000 * options_.wait_log_seconds) {
      last_wait_log = now;
      const auto peer = driver.pending_peer();
      spdlog::warn("waiting {:.0f} s for an exchange after {} local steps{}{}",
                   Seconds(now - last_progress), c.local_steps,
                   peer ? ": offer outstanding to " : "", peer ? Describe(*peer) : "");
    }
    if (Millis(now - last_progress) >= 1000 * options_.give_up_seconds) {
      spdlog::error("giving up after {} s without an exchange ({} local steps done)",
                    options_.give_up_seconds, c.local_steps);
      transport_->SayGoodbye("gave up waiting for an exchange");
      return kExitGaveUp;
    }
    // Linger until the neighbours are done, but not past an outstanding offer's deadline: a
    // reply to it must still be merged for the sum of models to be conserved.
    const bool lingered = Millis(now - finished_at) >= 1000 * options_.linger_seconds;
    // The offer was made before finishing, so its deadline is at most one time-out after
    // finished_at; the driver is not ticked after finishing (it would start new exchanges), so
    // the deadline is checked here. Waiting for linger + time-out instead held a node whose
    // request or reply was lost for the whole linger period although its neighbours were done.
    const bool offer_open = driver.offer_outstanding() &&
                            Millis(now - finished_at) < options_.exchange_timeout_ms;
    if (finished && (AllNeighborsFinished() || lingered) && !offer_open) break;
  }
  if (stop_->load()) {
    spdlog::info("node {} stopping on signal after {} local steps", id,
                 algorithm->counters().local_steps);
    MaybeCheckpoint(algorithm->counters().local_steps, save_state, true);
    transport_->SayGoodbye("stopped by signal");
  }
  if (driver.offer_outstanding()) {
    spdlog::warn("leaving with an exchange offer to {} unanswered: if it was served, the sum of "
                 "models is off by half the difference of the two snapshots",
                 Describe(*driver.pending_peer()));
  }
  const auto c = algorithm->counters();
  decode_failures_ = c.decode_failures;
  spdlog::info("node {}: {} exchanges started, {} served, {} aborted, {} timeouts, {} late "
               "replies merged, {} stale replies, {} duplicate requests dropped; {} payload bits "
               "sent, {} failed decodings or copy checks",
               id, c.exchanges_initiated, c.exchanges_served, c.exchanges_aborted,
               driver.timeouts(), driver.late_replies_merged(), driver.stale_dropped(),
               duplicate_requests, c.bits_sent, c.decode_failures);
  WriteFinalModel(algorithm->Model());
  Report(c.local_steps, algorithm->Model(), c.exchanges_initiated + c.exchanges_served, finished,
         true);
  return kExitOk;
}

}  // namespace

int RunDaemon(const DaemonOptions& options, const std::atomic<bool>* stop) {
  Node node(options, stop);
  return node.Run();
}

}  // namespace starling::node
