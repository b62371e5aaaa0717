// starlingd's node: one process, one poll loop over its ZeroMQ sockets, driving either a
// round-based algorithm (through the RoundSynchronizer) or a pairwise one (through the
// ExchangeDriver), publishing telemetry and writing per-node metrics.
//
// Waits have deadlines: a neighbour that stays silent is logged by id and endpoint every
// `wait_log_seconds`, and the node gives up (exit code 3) after `give_up_seconds` without
// progress. A neighbour that refuses our HELLO (another run, another dimension) is fatal
// (exit code 2); so is a model that is no longer finite, here or at a neighbour (exit code 4,
// since non-finite payloads are rejected on the wire and the run could not go on). Every exit
// once the network is up, a fatal error included (an exception in the run loop, a final model
// that cannot be written: exit code 2), writes the exit line and tells the neighbours why with a
// BYE; a neighbour that gave up or failed makes the node stop at once (exit code 3) unless it
// has finished. A checkpoint that cannot be written is a warning and a counter, not an exit.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "algorithms/pairwise/pairwise_algorithm.h"
#include "algorithms/problems/problem.h"
#include "algorithms/types.h"
#include "net/fault_plan.h"
#include "node/config/run_config.h"
#include "topology/cluster_file.h"

namespace starling::node {

struct DaemonOptions {
  RunConfig run;
  std::string cluster_file;
  // The cluster file was built from what the nodes published (--rendezvous, --join), each
  // endpoint from that node's --host and --port: messages about an endpoint that cannot be
  // reached advise --host rather than the cluster file.
  bool published_endpoints = false;
  int id = -1;
  std::string final_model;             // write the final model here (one value per line)
  int64_t telemetry_ms = 500;          // telemetry and metrics period
  double local_objective_seconds = 5;  // refresh period of the (full-pass) local objective
  int64_t resend_ms = 500;             // RESEND for a step still incomplete after this long
  int64_t wait_log_seconds = 5;        // period of "waiting for node ..." lines
  int64_t give_up_seconds = 600;       // no progress for this long: exit 3
  int64_t linger_seconds = 30;         // after finishing, serve neighbours at most this long
  // After finishing, hold the exit up to this long until a telemetry subscriber (the monitor)
  // has received the final telemetry; 0 = exit at once (what was published before the monitor
  // subscribed is lost).
  double await_monitor_seconds = 0;
  // Pairwise: a node more than this many local steps ahead of a live neighbour still stepping
  // waits for it (node/drivers/progress_gate.h); -1 = max(8H, budget/40), 0 = never wait.
  int64_t progress_window = -1;
  // Pairwise: before its first local step a node waits up to this long for every neighbour to
  // come up (then starts with those met; with none met it waits on, up to give_up_seconds).
  // 0 = start at the first neighbour met.
  double start_wait_seconds = 30;
  int64_t exchange_timeout_ms = 2000;  // pairwise: an unanswered offer is abandoned
  // Each local step (pairwise) or round (round-based) also takes this long, as if a device
  // computed it, while the node keeps serving its neighbours (the artificial
  // compute delay).
  double compute_delay_ms = 0;
  // Test aid (--fault-clock-offset-ms): the stamps of the node's reports and of
  // pairwise-diffusion's samples read this much ahead, as on a host whose clock is off; nothing
  // else uses it.
  double fault_clock_offset_ms = 0;
  // Checkpoints (node/daemon/checkpoint.h): written to checkpoint_file every checkpoint_every steps
  // (synchronizer steps, or local steps for pairwise methods) and/or checkpoint_every_seconds,
  // and on SIGINT/SIGTERM; `resume` starts from it (from scratch, with a warning, if it does not
  // exist yet). replay_window: payloads kept for a neighbour that resumes from an older step
  // (0 = max(64, 2 checkpoint_every + 8)).
  std::string checkpoint_file;
  int64_t checkpoint_every = 0;
  double checkpoint_every_seconds = 0;
  bool resume = false;
  int64_t replay_window = 0;
  // Model snapshots (node/daemon/model_snapshots.h): written to snapshots_file every
  // snapshot_every steps (0 = about 64 per run), the file at most snapshot_max_mb.
  std::string snapshots_file;
  int64_t snapshot_every = 0;
  double snapshot_max_mb = 256;
  net::FaultPlan faults;  // fault injection on this node's outgoing data (net/faulty_transport.h)
  std::string secret_key_file;   // CURVE secret key (curve_setup.h); required unless
  bool allow_plaintext = false;  // plaintext is asked for explicitly
  // "auto": neighbours on this host exchange through shared memory once CURVE has proven who
  // they are (net/transport.h); "off" (the default until the path is shown equal to the
  // simulator by the tests): ZeroMQ only.
  std::string shm = "off";
  // A secret key held in memory only (a rendezvous run without --secret-key); used instead of
  // secret_key_file when set.
  std::string secret_key;
  // The C ABI (capi/starling.h): the caller's model as the starting point. Non-empty: no data is
  // read and no problem built (node/config/external_setup.h); its size is the dimension.
  Vec external_model;
  // The C ABI's round-based methods: node id's objective, whose gradients the caller gives
  // (capi/external_gradient.h); not owned. Null: the pairwise methods, which need none.
  const algorithms::Problem* external_problem = nullptr;
  // Called with the final model when the run finishes (before it is written to final_model).
  std::function<void(const Vec&)> final_model_sink;
};

// Exit codes of Daemon::Run.
inline constexpr int kExitOk = 0;
inline constexpr int kExitConfig = 2;      // refused by a peer, bad configuration, fatal error
inline constexpr int kExitGaveUp = 3;      // no progress within give_up_seconds, or a neighbour
                                           // left for good (it gave up or failed)
inline constexpr int kExitDiverged = 4;    // this node's or a neighbour's model became NaN/Inf
inline constexpr int kExitIncomplete = 5;  // pairwise: far fewer local steps or merges than asked

// Runs the node until it has finished (and its neighbours have, or linger_seconds passed), or
// until *stop becomes true (a signal). Throws std::runtime_error / std::invalid_argument for
// errors before the network is up (the caller prints them and exits 2); later ones end the run
// with kExitConfig as above.
int RunDaemon(const DaemonOptions& options, const std::atomic<bool>* stop);

// The same for a pairwise node whose algorithm `make` builds (from this node's setup, once the
// runtime has started) instead of the one --algorithm names: the C ABI's model owned by the
// caller (capi/). `make` and then `built` (once the loop is built, the checkpoint loaded, before
// the first poll) run on the calling thread.
using PairwiseFactory =
    std::function<std::unique_ptr<algorithms::PairwiseAlgorithm>(const algorithms::NodeSetup&)>;
int RunDaemon(const DaemonOptions& options, const std::atomic<bool>* stop,
              const PairwiseFactory& make, const std::function<void()>& built);

}  // namespace starling::node
