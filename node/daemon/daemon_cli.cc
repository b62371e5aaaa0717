#include "node/daemon/daemon_cli.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "node/config/cluster_agreement.h"
#include "node/config/fault_options.h"
#include "node/config/run_options.h"
#include "topology/cluster_file.h"

namespace starling::node {

namespace po = boost::program_options;

namespace {

// What --help prints above the options.
constexpr char kUsage[] =
    "starlingd: one node of a Starling decentralized optimization network.\n"
    "The nodes of a run meet in one of three ways: every node reads the same cluster file\n"
    "(lines 'node ID ENDPOINT [KEY]' and 'edge U V'); or they agree on one through a shared\n"
    "directory (--rendezvous DIR); or each joins through any member's address (--join\n"
    "HOST:PORT --trust FILE), with nothing shared but the trust file. Every node gets the same\n"
    "run options. A node listens on its port PORT for peers, PORT+1 for telemetry and, with\n"
    "--join, PORT+2 and PORT+3: open TCP 7000-7003 (the default PORT) between the hosts.\n"
    "Security: CURVE is on by default. 'starlingd --keygen PREFIX' writes PREFIX.key (secret,\n"
    "mode 0600) and PREFIX.pub (the public key alone); list every node's public key in the\n"
    "cluster file (or the trust file) and start each node with --secret-key PREFIX.key. Only\n"
    "listed keys are admitted ('probe KEY' lines admit probes to the telemetry).\n"
    "--allow-plaintext turns security off explicitly (not with --join).\n"
    "Examples:\n"
    "  starlingd --keygen node0   # once per node; its key: $(cat node0.pub)\n"
    "  starlingd --cluster cluster.conf --id 0 --secret-key node0.key --algorithm extra \\\n"
    "            --problem logistic --data a9a --format libsvm --l2 1e-2 --iterations 2000\n"
    "  starlingd --join 192.168.1.10:7000,192.168.1.11:7000 --trust trust --nodes 3 \\\n"
    "            --secret-key node0.key --algorithm extra --problem logistic --data a9a \\\n"
    "            --format libsvm --l2 1e-2 --iterations 2000\n"
    "Exit codes: 0 done or stopped by SIGINT/SIGTERM, 2 configuration error, refused by a\n"
    "peer or a fatal error (e.g. the final model cannot be written), 3 gave up waiting for a\n"
    "neighbour or a neighbour gave up or failed, 4 the run diverged (a model became NaN or Inf),\n"
    "5 (pairwise methods) the run was incomplete: far fewer local steps than --iterations, or\n"
    "too many of them taken alone.\n"
    "Options";

// The node's own options (cluster, id, keys, periods and deadlines), bound to *d.
void AddNodeOptions(po::options_description* options, DaemonOptions* d, std::string* node_id,
                    std::string* log_level, std::string* keygen_prefix) {
  options->add_options()("help,h", "print this help and exit")(
      "config", po::value<std::string>(),
      "read further options from this file: one 'name = value' per line, the long option "
      "names without '--' ('algorithm = swarmsgd', 'allow-plaintext = true'), '#' starts a "
      "comment; an option given on the command line wins over the file "
      "(docs/reference/config-file.md)")("cluster", po::value(&d->cluster_file),
                                         "cluster file (or --rendezvous, or --join)")(
      "id", po::value(node_id),
      "this node's id in the cluster file (required; not with --join), or auto: the rank from "
      "mpirun, srun or "
      "PMI (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, SLURM_PROCID); '{id}' in --metrics, "
      "--final-model, --checkpoint and --secret-key becomes the id")(
      "final-model", po::value(&d->final_model), "write the final model here, one value per line")(
      "telemetry-ms", po::value(&d->telemetry_ms)->default_value(d->telemetry_ms),
      "period of telemetry messages and metrics lines")(
      "local-objective-s",
      po::value(&d->local_objective_seconds)->default_value(d->local_objective_seconds),
      "refresh the reported local objective (a full pass over the shard) this often")(
      "resend-ms", po::value(&d->resend_ms)->default_value(d->resend_ms),
      "ask a neighbour again for a step's payload after this long (round-based)")(
      "exchange-timeout-ms",
      po::value(&d->exchange_timeout_ms)->default_value(d->exchange_timeout_ms),
      "abandon an unanswered exchange offer after this long (pairwise), plus the time its "
      "request and reply take at 8 MiB/s each (19 s more at d = 1e7)")(
      "compute-delay-ms", po::value(&d->compute_delay_ms)->default_value(d->compute_delay_ms),
      "make each local step (pairwise) or round (round-based) also take this long, serving "
      "neighbours meanwhile (an artificial compute time, to measure the share of a run spent "
      "waiting on communication)")(
      "fault-clock-offset-ms",
      po::value(&d->fault_clock_offset_ms)->default_value(d->fault_clock_offset_ms),
      "test aid (fault injection): stamp this node's reports (and pairwise-diffusion's "
      "samples) with a clock this many ms ahead (negative: behind), as a host whose clock is "
      "off, to test starling-probe infer --clock-offsets; the run itself is unchanged")(
      "wait-log-s", po::value(&d->wait_log_seconds)->default_value(d->wait_log_seconds),
      "log the neighbours being waited for this often")(
      "give-up-s", po::value(&d->give_up_seconds)->default_value(d->give_up_seconds),
      "exit with code 3 after this long without progress")(
      "linger-s", po::value(&d->linger_seconds)->default_value(d->linger_seconds),
      "after finishing, keep serving neighbours until they finish, at most this long")(
      "await-monitor-s",
      po::value(&d->await_monitor_seconds)->default_value(d->await_monitor_seconds),
      "after finishing, wait up to this long for a monitor to subscribe to this node's "
      "telemetry if none has yet, so that it receives the final state (the launchers set it; "
      "0 = exit at once)")(
      "start-wait-s", po::value(&d->start_wait_seconds)->default_value(d->start_wait_seconds),
      "pairwise methods: before the first local step, wait up to this long for every neighbour "
      "to come up, logging whom it waits for, then start with those up (0 = start at the first "
      "neighbour up)")(
      "progress-window", po::value(&d->progress_window)->default_value(d->progress_window),
      "SwarmSGD: a node this many local steps ahead of a live neighbour still stepping waits "
      "for it, serving and merging meanwhile (-1 = max(8H, iterations/(40 x the graph's "
      "diameter)), so that the whole network stays within iterations/40 of its slowest node; "
      "0 = never wait: fully asynchronous, but on a loaded machine the slowest nodes' last "
      "steps then pull the average model toward their shards)")(
      "keygen", po::value(keygen_prefix),
      "write a new CURVE key pair to PREFIX.key (secret, mode 0600) and PREFIX.pub, print the "
      "public key and exit")(
      "secret-key", po::value(&d->secret_key_file),
      "this node's CURVE secret key file (its public key must be on its 'node' line, or with "
      "--join in the trust file)")(
      "allow-plaintext", po::bool_switch(&d->allow_plaintext),
      "run without CURVE when no --secret-key is given: no encryption, no authentication")(
      "shm", po::value(&d->shm)->default_value(d->shm),
      "auto: exchange with neighbours on this host (same host id, same user, proven by CURVE) "
      "through shared memory, ZeroMQ for the rest; off: ZeroMQ only (experimental, so off by "
      "default)")("log-level", po::value(log_level)->default_value(*log_level),
                  "trace, debug, info, warn, error");
}

// Checkpoints and resuming, bound to *d.
void AddCheckpointOptions(po::options_description* options, DaemonOptions* d) {
  options->add_options()(
      "checkpoint", po::value(&d->checkpoint_file),
      "write this node's state here (atomically) every --checkpoint-every steps and/or "
      "--checkpoint-every-s seconds, and on SIGINT/SIGTERM")(
      "checkpoint-every", po::value(&d->checkpoint_every)->default_value(d->checkpoint_every),
      "checkpoint period in steps (round-based: synchronizer steps; pairwise: local steps)")(
      "checkpoint-every-s",
      po::value(&d->checkpoint_every_seconds)->default_value(d->checkpoint_every_seconds),
      "checkpoint period in seconds")(
      "resume", po::bool_switch(&d->resume),
      "start from --checkpoint if it exists (round-based: the neighbours replay the steps since "
      "then, and the run ends as if nothing had happened)")(
      "replay-window", po::value(&d->replay_window)->default_value(d->replay_window),
      "round-based: recent payloads kept for a neighbour that resumes from a checkpoint "
      "(0 = max(64, 2 * checkpoint-every + 8))");
  options->add_options()(
      "snapshots", po::value(&d->snapshots_file),
      "write this node's model here every --snapshot-every steps and at the end, for dense "
      "curves after the run (starling-probe evaluate)")(
      "snapshot-every", po::value(&d->snapshot_every)->default_value(d->snapshot_every),
      "snapshot period in steps (pairwise: local steps; round-based: iterations); 0 = about "
      "64 snapshots per run")(
      "snapshot-max-mb", po::value(&d->snapshot_max_mb)->default_value(d->snapshot_max_mb),
      "the snapshots file never grows past this (the automatic period widens to fit)");
}

// The node's own numbers: a value out of range names its option (a negative --checkpoint-every
// would otherwise mean no checkpoint at all, without a word).
void ValidateDaemonOptions(const DaemonOptions& d) {
  auto fail = [](const std::string& what) { throw std::invalid_argument(what); };
  auto at_least = [&](const char* option, double value, double min, const char* meaning) {
    // !(value >= min) also refuses NaN.
    if (!(value >= min) || std::isinf(value)) {
      std::ostringstream what;
      what << "--" << option << " " << value << ": must be a finite number >= " << min << meaning;
      fail(what.str());
    }
  };
  at_least("telemetry-ms", static_cast<double>(d.telemetry_ms), 1, "");
  at_least("local-objective-s", d.local_objective_seconds, 0, "");
  at_least("resend-ms", static_cast<double>(d.resend_ms), 1, "");
  at_least("exchange-timeout-ms", static_cast<double>(d.exchange_timeout_ms), 1, "");
  at_least("compute-delay-ms", d.compute_delay_ms, 0, "");
  if (!std::isfinite(d.fault_clock_offset_ms) || std::abs(d.fault_clock_offset_ms) > 1e9) {
    fail("--fault-clock-offset-ms: must be a finite number of ms within +-1e9");
  }
  if (d.shm != "auto" && d.shm != "off") fail("--shm " + d.shm + ": must be auto or off");
  at_least("wait-log-s", static_cast<double>(d.wait_log_seconds), 1, "");
  at_least("start-wait-s", d.start_wait_seconds, 0, "");
  at_least("give-up-s", static_cast<double>(d.give_up_seconds), 1, "");
  at_least("linger-s", static_cast<double>(d.linger_seconds), 0, "");
  at_least("await-monitor-s", d.await_monitor_seconds, 0, "");
  at_least("progress-window", static_cast<double>(d.progress_window), -1,
           " (-1 = automatic, 0 = never wait)");
  at_least("checkpoint-every", static_cast<double>(d.checkpoint_every), 0,
           " (0 = no checkpoint by steps)");
  at_least("checkpoint-every-s", d.checkpoint_every_seconds, 0, " (0 = no checkpoint by time)");
  at_least("replay-window", static_cast<double>(d.replay_window), 0, " (0 = the default)");
  at_least("snapshot-every", static_cast<double>(d.snapshot_every), 0, " (0 = automatic)");
  at_least("snapshot-max-mb", d.snapshot_max_mb, 0.001, "");
  if (d.checkpoint_file.empty()) {
    if (d.checkpoint_every > 0) fail("--checkpoint-every: needs --checkpoint FILE");
    if (d.checkpoint_every_seconds > 0) fail("--checkpoint-every-s: needs --checkpoint FILE");
    if (d.resume) fail("--resume: needs --checkpoint FILE");
  }
  if (d.snapshots_file.empty() && d.snapshot_every > 0) {
    fail("--snapshot-every: needs --snapshots FILE");
  }
}

// The run options with the checks ValidateRunConfig makes of every run; `external_model`: the
// caller's model stands in for --data (which is refused).
void ValidateRunOptions(const RunConfig& run, bool external_model) {
  if (!external_model) return ValidateRunConfig(run);
  if (!run.data.empty()) {
    throw std::invalid_argument("--data " + run.data +
                                ": not read here: the node exchanges the caller's model");
  }
  RunConfig checked = run;
  checked.data = "(the caller's model)";  // what ValidateRunConfig requires of any other run
  ValidateRunConfig(checked);
}

}  // namespace

DaemonCommandLine ParseDaemonCommandLine(int argc, const char* const* argv, bool external_model) {
  DaemonCommandLine cl;
  cl.external_model = external_model;
  DaemonOptions& d = cl.options;
  po::options_description options(kUsage);
  AddNodeOptions(&options, &d, &cl.launch.id, &cl.log_level, &cl.keygen_prefix);
  AddCheckpointOptions(&options, &d);
  AddLaunchOptions(&options, &cl.launch);
  AddFaultOptions(&options, &cl.fault_options);
  AddRunOptions(&options, &d.run);
  cl.vm = ParseCommandLine(argc, argv, options);
  std::ostringstream help;
  help << options;
  cl.help_text = help.str();
  cl.help = cl.vm.count("help") != 0;
  if (cl.help || !cl.keygen_prefix.empty()) return cl;
  if (d.cluster_file.empty() && cl.launch.rendezvous.empty() && cl.launch.join.empty()) {
    throw std::invalid_argument("--cluster: required (or --rendezvous DIR, or --join SEEDS)");
  }
  if (cl.launch.join.empty()) {
    d.id = ResolveNodeId(cl.launch, &cl.rank);
    SubstituteNodeId(&d);
  }
  ValidateDaemonOptions(d);
  // Checked before any waiting at a rendezvous; the number of nodes comes with the cluster file.
  RunConfig early = d.run;
  early.nodes = 1;
  ValidateRunOptions(early, external_model);
  return cl;
}

void JoinDaemonRun(DaemonCommandLine* cl, const std::atomic<bool>* stop) {
  DaemonOptions& d = cl->options;
  JoinRun(cl->launch, cl->rank, cl->vm, stop, &d, &cl->join_session);
  // --nodes and --topology, if given, must agree with the cluster file that defines the graph.
  CheckAgainstClusterFile(GivenGraphOptions(cl->vm), topology::ReadClusterFile(d.cluster_file),
                          d.cluster_file, d.run.seed);
  d.run.nodes = 1;  // taken from the cluster file
  ValidateRunOptions(d.run, cl->external_model);
  d.faults = BuildFaultPlan(cl->fault_options);
}

}  // namespace starling::node
