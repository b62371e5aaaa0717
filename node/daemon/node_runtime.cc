#include "node/daemon/node_runtime.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>

#include "net/endpoint.h"
#include "node/config/curve_setup.h"
#include "node/config/external_setup.h"
#include "node/config/method_params.h"
#include "node/config/run_difference.h"
#include "node/config/run_header.h"
#include "node/config/run_id.h"
#include "node/config/slow_nodes.h"
#include "node/daemon/checkpoint.h"

namespace starling::node {

namespace {

const char kDivergedBye[] = "diverged";
// BYEs of a node that left for good while its neighbours may still need it (GiveUp, Fail, and a
// node that stops because a neighbour left): the neighbours stop too, at once.
const char kGaveUpBye[] = "gave up";
const char kFailedBye[] = "failed: ";
// BYEs of a node that refused a neighbour or was refused ("refused by node K: ..."), and of
// the nodes that pass it on ("refused: ..."): nobody can finish, so every node stops (exit 2)
// with the difference in its log.
const char kRefusedBye[] = "refused";
const char kRefusedByBye[] = "refused by node ";

bool LeftForGood(const std::string& reason) {
  return reason.rfind(kGaveUpBye, 0) == 0 || reason.rfind(kFailedBye, 0) == 0 ||
         reason.rfind(kRefusedBye, 0) == 0;
}

// "refused by node 0: other run options: --step 0.2 here, 0.1 at node 0" as node 2's
// neighbours pass it on: "refused: node 0 refused node 2: other run options: --step 0.2 at
// node 2, 0.1 at node 0".
std::string PassedOn(const std::string& reason, int32_t from) {
  if (reason.rfind(kRefusedByBye, 0) != 0) return reason;
  // "node K": what follows "refused by " up to the colon (or the end).
  const size_t start = std::strlen("refused by ");
  const size_t colon = reason.find(": ", start);
  const std::string refuser =
      reason.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
  const std::string who = "node " + std::to_string(from);
  return "refused: " + refuser + " refused " + who +
         (colon == std::string::npos ? "" : ": " + AsSeenByOthers(reason.substr(colon + 2), who));
}

// "shared memory with node 1 (812 messages sent, 809 received), ZeroMQ only with node 2
// (another host ...)": which path each neighbour's exchanges took.
std::string LinkSummary(const net::Transport& transport) {
  std::vector<std::string> shm, zmq;
  for (const auto& [id, peer] : transport.peers()) {
    if (peer.shm_links > 0) {
      shm.push_back(fmt::format(
          "node {} ({} messages sent, {} received{})", id, peer.shm_messages_sent,
          peer.shm_messages_received,
          peer.shm_links > 1 ? fmt::format(", {} links", peer.shm_links) : std::string()));
    } else {
      zmq.push_back(fmt::format("node {}{}", id,
                                peer.shm_status.empty() ? "" : " (" + peer.shm_status + ")"));
    }
  }
  auto join = [](const std::vector<std::string>& parts) {
    std::string text;
    for (const std::string& part : parts) text += (text.empty() ? "" : ", ") + part;
    return text;
  };
  std::string out;
  if (!shm.empty()) out = "shared memory with " + join(shm);
  if (!zmq.empty()) out += (out.empty() ? "" : "; ") + ("ZeroMQ only with " + join(zmq));
  return out.empty() ? "no neighbours" : out;
}

}  // namespace

void NodeRuntime::Start() {
  ReadSetup();
  ReserveFiles();
  const net::TransportOptions t = TransportOptionsFor();
  OpenTransport(t);
  reporter_->set_transport(transport_.get());
  const int id = options_.id;
  // A model handed over the C ABI is the caller's: the node knows its size, not its data.
  const std::string what =
      options_.external_model.size() > 0
          ? fmt::format("{} (external model, d = {})", config_.algorithm, setup_.dim)
          : fmt::format("{} on {} (d = {}, {} samples)", config_.algorithm, config_.problem,
                        setup_.dim, setup_.problems[id] ? setup_.problems[id]->num_samples() : 0);
  spdlog::info("node {} up: {}, peers at {}, telemetry at {}, run id {:#x}, {} neighbours", id,
               what, t.bind_endpoint, t.telemetry_endpoint, run_id_, t.peers.size());
  const algorithms::Problem* problem = setup_.problems[id].get();
  const Vec& x0 = me().x0;
  guard_.emplace(problem && x0.size() == problem->dim() ? problem->Value(x0) : 0.0, x0.norm(),
                 "its local objective");
  for (const DataNotice& notice : setup_.notices) {
    if (notice.warning) {
      spdlog::warn("node {}: {}", id, notice.text);
    } else {
      spdlog::info("node {}: {}", id, notice.text);
    }
  }
  for (const std::string& warning : IgnoredMethodParams(config_.algorithm, config_.params)) {
    spdlog::warn("node {}: {}", id, warning);
  }
  start_ = Clock::now();
  reporter_->Start(start_);
  if (snapshots_) {
    SnapshotHeader header;
    header.node = id;
    header.dim = static_cast<uint32_t>(setup_.dim);
    header.run_id = run_id_;
    header.spacing = snapshots_->spacing();
    header.start_unix_time =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    snapshots_->Begin(header);
    spdlog::info("node {}: model snapshots every {} steps to {}", id, snapshots_->spacing(),
                 options_.snapshots_file);
  }
}

void NodeRuntime::Snapshot(int64_t step, const Vec& model, int64_t comm_rounds, bool final) {
  if (!snapshots_) return;
  const Clock::time_point t0 = Clock::now();
  if (snapshots_->Offer(step, model, comm_rounds, transport_->bytes_sent(),
                        transport_->bytes_received(), Seconds(t0 - start_), final)) {
    reporter_->AddReportSeconds(Seconds(Clock::now() - t0));
  }
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
  slow_factor_ = SlowFactors(config_.slow_nodes, n)[options_.id];
  BuildScope scope;
  scope.only_node = options_.id;
  scope.global = false;
  setup_ =
      options_.external_model.size() > 0
          ? BuildExternalSetup(config_, scope, options_.external_model, options_.external_problem)
          : BuildRunSetup(config_, scope);
  if (setup_.graph.Edges() != cluster_.graph.Edges()) {
    // An explicit --mixing / --laplacian defines the graph; the cluster file must agree with it.
    throw std::invalid_argument(
        options_.cluster_file + ": its edges differ from the graph of " +
        (config_.mixing_file.empty() ? config_.laplacian_file : config_.mixing_file));
  }
  run_id_ = RunIdFor(config_, setup_);
}

void NodeRuntime::ReserveFiles() {
  reporter_ = std::make_unique<NodeReporter>(options_, config_, setup_.problems[options_.id].get(),
                                             RunHeaderFields(config_, setup_));
  final_model_ = std::make_unique<FinalModelFile>(options_.final_model);
  if (!options_.snapshots_file.empty()) {
    snapshots_ = std::make_unique<ModelSnapshots>(
        options_.snapshots_file, options_.resume,
        SnapshotSpacing(config_.iterations, options_.snapshot_every,
                        static_cast<uint32_t>(setup_.dim),
                        static_cast<uint64_t>(options_.snapshot_max_mb * 1e6)),
        static_cast<uint64_t>(options_.snapshot_max_mb * 1e6));
  }
  if (options_.resume && options_.checkpoint_file.empty()) {
    throw std::invalid_argument("--resume needs --checkpoint");
  }
  if (options_.checkpoint_file.empty()) return;
  if (options_.resume && std::filesystem::exists(options_.checkpoint_file)) {
    resumed_ = ReadCheckpoint(options_.checkpoint_file, run_id_, options_.id);
  }
  checkpoint_writer_ = std::make_unique<CheckpointWriter>(options_.checkpoint_file);
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
  t.limits = net::LimitsForRun(t.dim, /*max_payloads=*/4);
  // The run's options in the HELLO, so that a node of another run is told which option differs.
  const std::vector<std::string> lines = JoinOptionLines(config_, config_.nodes);
  t.hello_text = OptionLinesText(lines, t.limits.max_string_length);
  t.explain_run_difference = [lines, id](int32_t peer, const std::string& their_text) {
    const RunDifference d = ExplainRunDifference(lines, their_text, "node " + std::to_string(id),
                                                 "node " + std::to_string(peer));
    return std::make_pair(d.here, d.there);
  };
  t.curve = options_.secret_key.empty()
                ? NodeCurveOptions(cluster_, id, options_.secret_key_file, options_.allow_plaintext)
                : NodeCurveOptionsForKey(cluster_, id, options_.secret_key);
  t.shared_memory = options_.shm == "auto";
  t.shm_run_tag = fmt::format("{:016x}", run_id_);
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
  unreachable_ = std::make_unique<UnreachableNeighbours>(
      id, options_.wait_log_seconds, options_.give_up_seconds, options_.published_endpoints,
      options_.cluster_file);
  if (faulty_->active()) {
    spdlog::warn("node {}: fault injection on its outgoing data: {}", id,
                 options_.faults.Describe());
  }
}

void NodeRuntime::AwaitMonitor() {
  if (options_.await_monitor_seconds <= 0 || !reporter_->published_final()) return;
  const std::string& endpoint = transport_->options().telemetry_endpoint;
  if (endpoint.empty()) return;
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline =
      start + std::chrono::milliseconds(
                  static_cast<int64_t>(1000 * std::min(options_.await_monitor_seconds, 1e7)));
  bool said = false;
  while (!stop_->load()) {
    const uint64_t subscriptions = transport_->TelemetrySubscriptions();
    if (subscriptions > reporter_->subscriptions_at_last_publish()) {
      // Subscribers that arrived after it get the final telemetry now; earlier ones had it.
      reporter_->RepublishLast();
      if (said) {
        spdlog::info("node {}: a monitor subscribed after {:.1f} s; final state published again",
                     options_.id, Seconds(Clock::now() - start));
      }
      return;
    }
    if (subscriptions > 0) return;  // every subscriber was there when it left
    const Clock::time_point now = Clock::now();
    if (now >= deadline) {
      spdlog::warn(
          "node {}: no monitor subscribed to its telemetry at {} within --await-monitor-s {}: "
          "a monitor watching this run does not receive this node's final state",
          options_.id, endpoint, options_.await_monitor_seconds);
      return;
    }
    if (!said && now - start >= std::chrono::seconds(1)) {
      spdlog::info(
          "node {}: finished before any monitor subscribed to its telemetry at {}; waiting up "
          "to {} s (--await-monitor-s) so that the monitor receives the final state",
          options_.id, endpoint, options_.await_monitor_seconds);
      said = true;
    }
    transport_->WaitTelemetry(std::chrono::milliseconds(100));
  }
}

int NodeRuntime::Finish(int code) {
  if (code == kExitOk || code == kExitIncomplete) AwaitMonitor();
  const int id = options_.id;
  const auto& r = transport_->rejects();
  spdlog::info(
      "node {} done (exit {}): {:.1f} s, compute {:.1f} s, sent {} B, received {} B, {}"
      "rejected {}{}{}",
      id, code, Seconds(Clock::now() - start_), reporter_->compute_seconds(),
      transport_->bytes_sent(), transport_->bytes_received(),
      options_.checkpoint_file.empty()
          ? std::string()
          : fmt::format("checkpoints {} ({} failed), ", reporter_->checkpoints_written(),
                        reporter_->checkpoint_failures()),
      r.total(), r.total() ? ": " : "", r.Summary());
  spdlog::info("node {} links: {}", id, LinkSummary(*transport_));
  if (faulty_->active()) {
    spdlog::info("node {} injected faults: {}", id, faulty_->counters().Summary());
  }
  reporter_.reset();
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
  unreachable_->Check(*transport_, Clock::now());
}

int NodeRuntime::Fail(const std::string& what) {
  spdlog::error("node {} stops on a fatal error: {}", options_.id, what);
  transport_->SayGoodbye(kFailedBye + what);
  return Finish(kExitConfig);
}

int NodeRuntime::StopFailed(const std::string& what) {
  spdlog::error("node {} stops: {}", options_.id, what);
  transport_->SayGoodbye(kFailedBye + what);
  return kExitConfig;
}

int NodeRuntime::CheckPeers() {
  if (const std::string unanswered = unreachable_->Unanswered(*transport_, Clock::now());
      !unanswered.empty()) {
    spdlog::error("node {} stops: {}", options_.id, unanswered);
    // Our connections reach them: they learn why at once instead of at --give-up-s.
    transport_->SayGoodbye(kFailedBye +
                           std::string("its neighbours cannot connect to its address ") +
                           transport_->options().bind_endpoint);
    return kExitConfig;
  }
  for (int32_t peer : transport_->RefusedBy()) {
    const std::string& refusal = transport_->peer(peer).refusal;
    const size_t colon = refusal.find(": ");
    spdlog::error(
        "{} refused this node: {}; start every node with the same run options and cluster "
        "file; stopping",
        Describe(peer), colon == std::string::npos ? refusal : refusal.substr(colon + 2));
    // "refused by node K: ...": the neighbours of both runs stop too, naming the difference.
    transport_->SayGoodbye(refusal.rfind(kRefusedByBye, 0) == 0
                               ? refusal
                               : kRefusedByBye + std::to_string(peer) + ": " + refusal);
    return kExitConfig;
  }
  if (diverged_peer_ >= 0) {
    spdlog::error(
        "{} reports that the run diverged (a model became NaN or Inf, or its objective or "
        "norm exploded); stopping: try a smaller --step",
        Describe(diverged_peer_));
    transport_->SayGoodbye(kDivergedBye);  // passed on, so that the whole network stops
    return kExitDiverged;
  }
  for (int32_t peer : departed_peers_) {
    const std::string& refused = transport_->peer(peer).refused;
    if (refused.empty()) continue;
    // Whatever this node's state, the run lacks a node: it cannot end well.
    spdlog::error(
        "{} was refused by this node ({}) and has left; the run cannot go on without it: "
        "stopping; start every node with the same run options",
        Describe(peer), refused);
    const std::string me = "node " + std::to_string(options_.id);
    transport_->SayGoodbye(std::string(kRefusedBye) + ": " + me + " refused node " +
                           std::to_string(peer) + ": " + AsSeenByOthers(refused, me));
    return kExitConfig;
  }
  if (!departed_peers_.empty() && departed_reason_.rfind(kRefusedBye, 0) == 0) {
    const int32_t peer = *departed_peers_.begin();
    const std::string why = PassedOn(departed_reason_, peer);
    spdlog::error("{} left for good ({}); the run cannot go on: stopping", Describe(peer), why);
    transport_->SayGoodbye(why);
    return kExitConfig;
  }
  if (!departed_peers_.empty() && !finished_) {
    const int32_t peer = *departed_peers_.begin();
    spdlog::error("{} left for good ({}); this node cannot finish without it: giving up",
                  Describe(peer), departed_reason_);
    // Passed on, so that the whole network stops now rather than at --give-up-s.
    transport_->SayGoodbye(std::string(kGaveUpBye) + ": node " + std::to_string(peer) + " left");
    return kExitGaveUp;
  }
  return -1;
}

void NodeRuntime::NoteBye(int32_t peer, const std::string& reason) {
  if (reason == "finished") {
    finished_peers_.insert(peer);
  } else if (reason == kDivergedBye) {
    diverged_peer_ = peer;
  } else if (LeftForGood(reason)) {
    spdlog::warn("{} left for good: {}", Describe(peer), reason);
    // A peer that finished first (and then failed writing its model) owes this node nothing.
    if (!HasFinished(peer) && departed_peers_.insert(peer).second && departed_reason_.empty()) {
      departed_reason_ = reason;
    }
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
         now - p.heard_hold_until < 2 * transport_->options().heartbeat_interval;
}

void NodeRuntime::SimulatedCompute(Clock::time_point t0, const net::Transport::Handler& handler) {
  const Clock::time_point until =
      t0 + std::chrono::microseconds(static_cast<int64_t>(options_.compute_delay_ms * 1e3));
  ServeUntil(until, handler);
  // --slow-node: the step (its computation and any --compute-delay-ms) takes slow_factor_ times
  // as long as it did, measured, with the neighbours served meanwhile.
  if (slow_factor_ > 1.0) {
    const Clock::time_point now = Clock::now();
    ServeUntil(now + std::chrono::duration_cast<Clock::duration>((slow_factor_ - 1.0) * (now - t0)),
               handler);
  }
}

void NodeRuntime::ServeUntil(Clock::time_point until, const net::Transport::Handler& handler) {
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

bool NodeRuntime::Resume(const LoadCheckpoint& load) {
  if (!options_.resume) return false;
  if (!resumed_) {
    spdlog::warn("node {}: --resume: no checkpoint at {} yet; starting from the beginning",
                 options_.id, options_.checkpoint_file);
    return false;
  }
  load(*resumed_);
  resumed_.reset();
  return true;
}

void NodeRuntime::MaybeCheckpoint(int64_t steps, const SaveCheckpoint& save, bool force) {
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
  if (!save(&c)) {
    if (checkpoints_written_++ == 0) {
      spdlog::warn("node {}: {} cannot be checkpointed; --checkpoint ignored", options_.id,
                   config_.algorithm);
    }
    last_checkpoint_steps_ = steps;
    last_checkpoint_at_ = now;
    return;
  }
  const Clock::time_point t0 = Clock::now();
  try {
    checkpoint_writer_->Write(c);
    reporter_->CountCheckpoint(true);
  } catch (const std::exception& e) {
    // Not fatal: the previous checkpoint is intact, and the run goes on.
    reporter_->CountCheckpoint(false);
    spdlog::warn("node {}: checkpoint after {} steps not written ({} failed so far): {}",
                 options_.id, steps, reporter_->checkpoint_failures(), e.what());
  }
  reporter_->AddReportSeconds(Seconds(Clock::now() - t0));  // not computation, not waiting
  ++checkpoints_written_;
  last_checkpoint_steps_ = steps;
  last_checkpoint_at_ = now;
}

bool NodeRuntime::ModelDiverged(const Vec& model, bool with_objective) {
  if (!guard_) return !model.allFinite();
  const algorithms::Problem* problem = setup_.problems[options_.id].get();
  std::optional<double> objective;
  // The objective costs a pass over the shard: at most every kObjectiveEvery-th call and every
  // kObjectiveSeconds, so that it stays a small part of the work even for mini-batch methods
  // (a SwarmSGD step is a small fraction of a pass); the norm, checked every time, is free.
  const Clock::time_point now = Clock::now();
  const bool due = (model_checks_++ % kObjectiveEvery == 0 &&
                    Seconds(now - last_objective_at_) >= kObjectiveSeconds) ||
                   with_objective;
  if (problem && model.size() == problem->dim() && model.allFinite() && due) {
    objective = problem->Value(model);
    last_objective_at_ = now;
  }
  if (auto why = guard_->Check(objective, model.norm())) {
    divergence_ = *why;
    return true;
  }
  return false;
}

int NodeRuntime::StopDiverged(const std::string& when) {
  spdlog::error("node {} diverged {}: {}; try a smaller --step", options_.id, when,
                divergence_.empty() ? "its model is no longer finite" : divergence_);
  transport_->SayGoodbye(kDivergedBye);
  return kExitDiverged;
}

int NodeRuntime::GiveUp(const std::string& bye) {
  transport_->SayGoodbye(bye);
  return kExitGaveUp;
}

void NodeRuntime::StopOnSignal(const std::string& when, int64_t steps, const SaveCheckpoint& save) {
  spdlog::info("node {} stopping on signal {}", options_.id, when);
  MaybeCheckpoint(steps, save, true);
  transport_->SayGoodbye("stopped by signal");
}

void NodeRuntime::WriteBlockPredictors(const std::vector<Vec>& predictors) {
  if (options_.final_model.empty()) return;
  for (size_t b = 0; b < predictors.size(); ++b) {
    FinalModelFile(options_.final_model + ".block" + std::to_string(b)).Write(predictors[b]);
  }
}

void NodeRuntime::WriteFinalModel(const Vec& model) {
  finished_ = true;
  if (options_.final_model_sink) options_.final_model_sink(model);
  final_model_->Write(model);
  // The model is a model of scaled features: new data must be scaled the same way to use it.
  if (!options_.final_model.empty() && setup_.scaling.active()) {
    setup_.scaling.Write(options_.final_model + ".scaling",
                         "--scale " + config_.scale + " fitted on --data " + config_.data +
                             "; labels: " + setup_.labels.Describe());
  }
}

}  // namespace starling::node
