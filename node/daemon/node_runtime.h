// What starlingd's node needs whatever the shape of its algorithm (round-based or pairwise,
// docs/explanations/architecture.md): the run setup, the transport and its fault-injecting data
// path, CURVE, telemetry and the metrics line, checkpoints, the stop signal, the neighbours'
// liveness, BYEs and refusals, and the early exits that tell the neighbours why.
//
// A node loop implements NodeLoop (below) in a file pair of its own: round_node.h, pairwise_node.h,
// pairwise_diffusion_node.h; daemon.cc picks one by algorithm. A loop owns
// only its algorithm, its driver and its timers; everything else is here. The contract:
// - Start() has run before the loop is built; Finish() runs after it has returned (and has been
//   destroyed). The loop holds the runtime by pointer and must not outlive it.
// - Run() is one poll loop on the calling thread. Each turn begins with CheckPeers() (a code >= 0
//   ends the run with it), polls transport() with a handler that passes BYE to NoteBye() and
//   counts message types it has no use for with CountProtocolDrop(), calls EndTurn(), and
//   reports (reporter().Report). The loop ends on stop_requested(), on its own early exits, or
//   when it has finished and AllNeighborsFinished() or LingerOver().
// - Data goes out through Send() or data_path(), so that --faults applies to it; control
//   messages (BYE) through transport().
// - Time is accounted in reporter(): AddComputeSeconds for the algorithm's own work
//   (SimulatedCompute included), AddWaitSeconds for polls that could not compute,
//   SetStartupSeconds for the wait for the first neighbour; what is left is reported as blocked
//   on communication. The node's own clock (an event-driven algorithm's elapsed time) counts
//   from start().
// - Which neighbour can take part in an exchange is the loop's policy, from what is here: Met()
//   (both connections work), HeardRecently() (alive), HasFinished() (said so with a BYE).
// - Early exits say why to every neighbour: GiveUp (exit 3), StopDiverged (exit 4), CheckPeers
//   (2 or 4), StopOnSignal (a checkpoint first; the loop then returns kExitOk).
// Nothing here is thread-safe: one thread runs the runtime and its loop.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "algorithms/algorithm_state.h"
#include "algorithms/types.h"
#include "net/faulty_transport.h"
#include "net/transport.h"
#include "node/config/run_config.h"
#include "node/config/run_setup.h"
#include "node/daemon/checkpoint.h"
#include "node/daemon/daemon.h"
#include "node/daemon/daemon_clock.h"
#include "node/daemon/final_model_file.h"
#include "node/daemon/model_snapshots.h"
#include "node/daemon/node_reporter.h"
#include "node/daemon/unreachable_neighbours.h"
#include "node/report/divergence_guard.h"
#include "topology/cluster_file.h"

namespace starling::node {

// A model about to be sent that is no longer finite: peers would reject it as malformed, so the
// run cannot continue; the node says so with a BYE that every node passes on (StopDiverged).
inline bool Diverged(const Vec& v) { return !v.allFinite(); }

class NodeRuntime {
 public:
  // `options` and `stop` are not owned and outlive this object.
  NodeRuntime(const DaemonOptions& options, const std::atomic<bool>* stop)
      : options_(options), stop_(stop) {}
  // Reads the cluster file, builds this node's part of the run, opens the files it must write
  // (metrics, final model, checkpoint: before the network, so that connections cannot take
  // their descriptors), reads the checkpoint to resume from, binds and connects the transport;
  // the run's clock starts. Throws std::invalid_argument / std::runtime_error for configuration
  // and start-up errors.
  void Start();
  // Holds a node that finished until its final telemetry has a subscriber (AwaitMonitor), logs
  // the run's totals for exit code `code` (the exit line), closes the sockets and returns `code`.
  int Finish(int code);
  // The transport is open: a BYE can be said and Finish can run.
  bool network_up() const { return faulty_ != nullptr; }
  // A fatal error (an exception) after the network was up: logs `what`, tells the neighbours
  // with a BYE that this node left for good (so that they stop at once rather than at
  // --give-up-s), writes the exit line; returns kExitConfig.
  int Fail(const std::string& what);
  // The run cannot continue for a reason this node found (`what` names it): logs it, tells the
  // neighbours with a goodbye that stops them too, and returns kExitConfig for the loop to
  // return (Daemon::Run then finishes).
  int StopFailed(const std::string& what);

  const DaemonOptions& options() const { return options_; }
  const RunConfig& config() const { return config_; }
  const RunSetup& setup() const { return setup_; }
  int id() const { return options_.id; }
  const algorithms::NodeSetup& me() const { return setup_.nodes[options_.id]; }
  Clock::time_point start() const { return start_; }
  bool stop_requested() const { return stop_->load(); }

  net::Transport& transport() { return *transport_; }
  // The data path, with any injected faults.
  net::FaultyTransport& data_path() { return *faulty_; }
  // Sends data on the data path; a full queue is logged (the message is lost, as on a bad link).
  void Send(int32_t peer, const net::Envelope& envelope,
            const std::shared_ptr<const void>& keepalive = nullptr);
  // The end of each loop turn: delayed messages that are due go out, heartbeats, and a line
  // for each neighbour that cannot be connected to (UnreachableNeighbours).
  void EndTurn();

  // Telemetry, the metrics line and the time accounts (node_reporter.h).
  NodeReporter& reporter() { return *reporter_; }
  // --compute-delay-ms: the rest of a step begun at t0 takes that long in all, while messages
  // are handled meanwhile, as a communication thread would beside a device computing. Then,
  // on a node named by --slow-node NODE:FACTOR, (FACTOR - 1) x the step's time so far, likewise.
  void SimulatedCompute(Clock::time_point t0, const net::Transport::Handler& handler);

  // The neighbours. A refusal, or a neighbour's divergence, is fatal: returns an exit code, or
  // -1 to go on.
  int CheckPeers();
  void NoteBye(int32_t peer, const std::string& reason);
  // Counts a message of a type the loop has no use for; returns the count so far.
  uint64_t CountProtocolDrop() { return ++protocol_drops_; }
  bool HasFinished(int32_t peer) const { return finished_peers_.count(peer) != 0; }
  // Every neighbour said it finished, or (once this node has finished) left for good.
  bool AllNeighborsFinished() const {
    return finished_peers_.size() + (finished_ ? departed_peers_.size() : 0) ==
           me().neighbors.size();
  }
  // Both connections to `peer` work: its HELLO reached us and its answer to ours came back.
  bool Met(int32_t peer) const;
  // Any message from `peer` (heartbeats included) within the last two heartbeat periods, counted
  // from when what it sent could have left at the transport's slowest rate
  // (PeerState::heard_hold_until: the last message's arrival for small models; after a large
  // message the peer holds its HEARTBEATs that long, net/transport.h).
  bool HeardRecently(int32_t peer, Clock::time_point now) const;
  std::string Describe(int peer) const {
    return "node " + std::to_string(peer) + " (" + cluster_.nodes[peer].endpoint + ")";
  }

  // Checkpoints: hands the checkpoint to `load` if --resume and the file exists (true if it
  // did); writes one when due (or when `force`) with the states `save` fills (the algorithm's,
  // and the driver's own; save returns false if the algorithm cannot be checkpointed). `steps`
  // counts from set_checkpoint_steps (0 unless set).
  using LoadCheckpoint = std::function<void(const Checkpoint&)>;
  using SaveCheckpoint = std::function<bool(Checkpoint*)>;
  bool Resume(const LoadCheckpoint& load);
  void MaybeCheckpoint(int64_t steps, const SaveCheckpoint& save, bool force);
  void set_checkpoint_steps(int64_t steps) { last_checkpoint_steps_ = steps; }

  // Endings. `when` completes the log line ("at step ...", "after ... local steps").
  // The linger after finishing (finished at `finished_at`) is over.
  bool LingerOver(Clock::time_point finished_at, Clock::time_point now) const {
    return Millis(now - finished_at) >= 1000 * options_.linger_seconds;
  }
  // This node's model by the divergence criterion (node/report/divergence_guard.h): its norm on
  // every call, its local objective f_i on the first call, then on every kObjectiveEvery-th call
  // at least kObjectiveSeconds after the last (one pass over the shard), and whenever
  // `with_objective`, against the values at the starting
  // point x0 (taken at Start()). True if it diverged; StopDiverged then says why.
  // The pass is timed by the wall clock, so its cost grows with the run's wall time, not its
  // work: at 0.5 s it took about a quarter of a SwarmSGD daemon's CPU in the demo (8 daemons on
  // 2 cores, a pass of 7,500 x 7,840 about 11 ms; more when a slower run lasts longer,
  // docs/results/demo.md). Every 5 s, as the telemetry's local objective (--local-objective-s):
  // the norm, checked at every call, catches a run-away model at once; the objective criterion
  // within 5 s, and at the last step.
  bool ModelDiverged(const Vec& model, bool with_objective = false);
  static constexpr int64_t kObjectiveEvery = 8;
  static constexpr double kObjectiveSeconds = 5.0;
  // Logs that this node's model diverged (not finite, or by ModelDiverged's criterion), says so
  // to the neighbours; kExitDiverged.
  int StopDiverged(const std::string& when);
  // Says `bye` to the neighbours (the caller has logged why); kExitGaveUp.
  int GiveUp(const std::string& bye);
  // On SIGINT/SIGTERM: logs, writes a checkpoint whatever is due, and says goodbye.
  void StopOnSignal(const std::string& when, int64_t steps, const SaveCheckpoint& save);
  // The loop has finished: writes the final model (into the file reserved at Start).
  void WriteFinalModel(const Vec& model);
  // With --final-model PATH, a method's per-block predictors (MM-PSGD on block-cyclic data):
  // predictor b into PATH.block<b>, one value per line as the final model. These files are
  // opened at the end, not reserved at Start.
  void WriteBlockPredictors(const std::vector<Vec>& predictors);
  // --snapshots: keeps the model at `step` if a snapshot is due there, or always when `final`
  // (model_snapshots.h); the time it takes counts as reporting.
  void Snapshot(int64_t step, const Vec& model, int64_t comm_rounds, bool final);
  // This node has done its work (a pairwise node its budget of local steps, before its end
  // phase): from now on a neighbour that leaves for good no longer stops it (CheckPeers).
  void MarkFinished() { finished_ = true; }
  // Serves the transport with `handler` until `until` or a stop request (the way
  // SimulatedCompute serves the neighbours during a simulated computation).
  void ServeUntil(Clock::time_point until, const net::Transport::Handler& handler);
  // --slow-node: this node's factor (1 unless it is named there).
  double slow_factor() const { return slow_factor_; }

 private:
  // With --await-monitor-s, a node whose last telemetry was final and went out before any
  // subscriber had arrived (a short run on a busy host ends before the monitor's connection is
  // up, and the socket drops what nobody subscribed to) waits for a subscription, bounded, and
  // publishes the final telemetry again; a subscriber that arrived after it gets it again too.
  void AwaitMonitor();
  void ReadSetup();
  void ReserveFiles();
  net::TransportOptions TransportOptionsFor() const;
  void OpenTransport(const net::TransportOptions& t);

  const DaemonOptions& options_;
  const std::atomic<bool>* stop_;
  topology::Cluster cluster_;
  RunConfig config_;
  RunSetup setup_;
  uint64_t run_id_ = 0;
  std::unique_ptr<zmq::context_t> context_;
  std::unique_ptr<net::Transport> transport_;
  std::unique_ptr<net::FaultyTransport> faulty_;  // the data path, with any injected faults
  std::unique_ptr<NodeReporter> reporter_;
  Clock::time_point start_;
  std::set<int32_t> finished_peers_;
  int32_t diverged_peer_ = -1;
  std::optional<DivergenceGuard> guard_;  // from x0, at Start()
  int64_t model_checks_ = 0;
  Clock::time_point last_objective_at_{};
  std::string divergence_;  // why ModelDiverged said so
  uint64_t protocol_drops_ = 0;
  int64_t last_checkpoint_steps_ = 0;
  Clock::time_point last_checkpoint_at_{};
  uint64_t checkpoints_written_ = 0;
  // Reserved at Start, before the network (final_model_file.h, checkpoint.h).
  std::unique_ptr<FinalModelFile> final_model_;
  std::unique_ptr<CheckpointWriter> checkpoint_writer_;
  std::unique_ptr<ModelSnapshots> snapshots_;  // --snapshots
  std::optional<Checkpoint> resumed_;          // --resume: read at Start
  // Neighbours whose BYE said they left for good (gave up, failed): this node cannot finish
  // without them, unless it has already.
  std::set<int32_t> departed_peers_;
  std::string departed_reason_;
  bool finished_ = false;     // MarkFinished or WriteFinalModel ran
  double slow_factor_ = 1.0;  // --slow-node: this node's factor (node/config/slow_nodes.h)
  std::unique_ptr<UnreachableNeighbours> unreachable_;  // logs neighbours it cannot connect to
};

// A node's run loop over a started NodeRuntime: one class per shape of algorithm.
class NodeLoop {
 public:
  virtual ~NodeLoop() = default;
  // Runs until finished (and the neighbours have, or the linger is over), an early exit, or the
  // stop signal; returns an exit code of daemon.h. Throws for start-up errors only (a bad
  // checkpoint, a final model that cannot be written).
  virtual int Run() = 0;
};

}  // namespace starling::node
