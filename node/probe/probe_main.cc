// starling-probe: tools that look at a running Starling network from outside.
//   starling-probe monitor  - global objective, test accuracy, consensus of a run
//   starling-probe cluster  - write a cluster file for N local nodes and a topology
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "net/curve_keys.h"
#include "net/endpoint.h"
#include "node/config/cluster_agreement.h"
#include "node/config/private_cluster_file.h"
#include "node/config/process.h"
#include "node/config/rendezvous.h"
#include "node/config/run_options.h"
#include "node/config/seed_join.h"
#include "node/probe/infer_probe.h"
#include "node/probe/inference_plot.h"
#include "node/probe/monitor.h"
#include "node/probe/snapshot_evaluator.h"
#include "topology/cluster_file.h"
#include "topology/generators.h"
#include "topology/inference.h"

namespace po = boost::program_options;

namespace {

const char* kUsage =
    "usage: starling-probe COMMAND [options]\n"
    "commands:\n"
    "  monitor   watch a run: global objective, test accuracy and consensus distance at the\n"
    "            average model, from every node's telemetry\n"
    "  cluster   write a cluster file for N nodes on loopback addresses and a topology\n"
    "  infer     infer the edges among some nodes of a diffusion run from their telemetry\n"
    "  evaluate  dense curves of a run from its nodes' model snapshots (starlingd --snapshots)\n"
    "'starling-probe COMMAND --help' lists a command's options.\n";

int Monitor(int argc, char** argv) {
  starling::node::MonitorOptions m;
  std::string rendezvous, join, trust;
  std::string progress = "auto";
  po::options_description options(
      "starling-probe monitor: subscribe to every node's telemetry and report the network's\n"
      "progress. Give it the same run options as the daemons.\n"
      "Example:\n"
      "  starling-probe monitor --cluster cluster.conf --algorithm swarmsgd --problem multinomial\n"
      "      --data train-images-idx3-ubyte.gz --test-data t10k-images-idx3-ubyte.gz\n"
      "      --reference-optimum auto --metrics metrics.jsonl\n"
      "Exit codes: 0 every node finished, 2 bad options or refused (--join), 3 timed out, 5 some\n"
      "node did far fewer local steps than asked (an 'incomplete:' line names it).\n"
      "Options");
  options.add_options()("help,h", "print this help and exit")(
      "config", po::value<std::string>(),
      "read further options from this file: one 'name = value' per line, the long option "
      "names without '--' ('algorithm = swarmsgd', 'allow-plaintext = true'), '#' starts a "
      "comment; an option given on the command line wins over the file "
      "(docs/reference/config-file.md)")(
      "cluster", po::value(&m.cluster_file),
      "cluster file of the run (or --rendezvous, or --join)")(
      "rendezvous", po::value(&rendezvous),
      "instead of --cluster: the run's rendezvous directory (starlingd --rendezvous); waits up "
      "to --timeout-s for its cluster.conf")(
      "join", po::value(&join),
      "instead of --cluster: learn the run's members from any of these nodes, "
      "HOST:PORT[,HOST:PORT...] (a HOST alone: port 7000), as starlingd --join does; needs "
      "--trust, --nodes and --secret-key (a key in the trust file); waits up to --timeout-s for "
      "the run to have its members")("trust", po::value(&trust),
                                     "--join: the run's trust file (starlingd --trust)")(
      "interval-ms", po::value(&m.interval_ms)->default_value(m.interval_ms), "progress period")(
      "timeout-s", po::value(&m.timeout_seconds)->default_value(m.timeout_seconds),
      "give up (exit 3) if the nodes have not all finished by then")(
      "reference-tolerance",
      po::value(&m.reference_tolerance)->default_value(m.reference_tolerance),
      "the centralized reference solve stops at a gradient norm of this times "
      "max(1, ||grad f(0)||)")(
      "secret-key", po::value(&m.secret_key_file),
      "the probe's CURVE secret key file; its public key must be on a 'probe KEY' line of the "
      "cluster file")("allow-plaintext", po::bool_switch(&m.allow_plaintext),
                      "watch nodes that run without CURVE (no --secret-key)")(
      "prometheus-port", po::value(&m.prometheus_port),
      "serve the network's figures in the Prometheus text format at "
      "http://BIND:PORT/metrics while the monitor runs (1-65535; none without it)")(
      "prometheus-bind", po::value(&m.prometheus_bind)->default_value(m.prometheus_bind),
      "numeric address that --prometheus-port listens on (0.0.0.0 or :: for every interface)")(
      "progress", po::value(&progress)->default_value(progress),
      "auto, redraw or plain: the progress line (share of the network's steps done, rate, time "
      "left, accuracy or gap) redrawn in place, or printed as plain lines with the evaluation "
      "lines; auto redraws when the output is a terminal");
  starling::node::AddRunOptions(&options, &m.run);
  const po::variables_map vm = starling::node::ParseCommandLine(argc, argv, options);
  if (vm.count("help")) {
    std::cout << options << std::endl;
    return 0;
  }
  const std::atomic<bool>* stop = starling::node::InstallStopSignals();
  if (!rendezvous.empty()) {
    if (!m.cluster_file.empty()) {
      throw std::invalid_argument("--cluster and --rendezvous: give one");
    }
    m.cluster_file = starling::node::AwaitClusterFile(rendezvous, m.timeout_seconds, stop);
  }
  // With --join: the cluster built from the members, in a private file while the monitor runs.
  std::unique_ptr<starling::node::PrivateClusterFile> joined;
  if (!join.empty()) {
    if (!m.cluster_file.empty()) throw std::invalid_argument("--cluster and --join: give one");
    if (trust.empty()) throw std::invalid_argument("--join: give --trust FILE");
    if (m.secret_key_file.empty()) {
      throw std::invalid_argument("--join: give --secret-key FILE, a key in the trust file");
    }
    if (!vm.count("nodes") || vm["nodes"].defaulted()) {
      throw std::invalid_argument("--join: give --nodes N, the run's number of nodes");
    }
    const starling::node::JoinKeys keys =
        starling::node::ReadJoinKeys(trust, m.secret_key_file, "monitor");
    starling::node::SeedJoinRequest request = starling::node::MakeSeedJoinRequest(
        join, starling::net::kDefaultPort, keys, m.run, m.run.nodes);
    request.timeout_seconds = static_cast<double>(m.timeout_seconds);
    request.stop = stop;
    starling::node::SharedMemberView view(m.run.nodes, &keys.trust);
    const auto members = starling::node::JoinBySeeds(request, &view);
    joined = std::make_unique<starling::node::PrivateClusterFile>(
        starling::node::JoinedCluster(members, m.run, keys.trust));
    m.cluster_file = joined->path();
    std::cout << "monitor: the run's " << members.size() << " members found through --join " << join
              << std::endl;
  } else if (!trust.empty()) {
    throw std::invalid_argument("--trust: only with --join");
  }
  if (m.cluster_file.empty()) throw std::invalid_argument("--cluster: required");
  if (vm.count("prometheus-port") && (m.prometheus_port < 1 || m.prometheus_port > 65535)) {
    throw std::invalid_argument("--prometheus-port " + std::to_string(m.prometheus_port) +
                                ": must be in 1..65535");
  }
  if (!vm.count("prometheus-port") && !vm["prometheus-bind"].defaulted()) {
    throw std::invalid_argument("--prometheus-bind: needs --prometheus-port");
  }
  if (progress != "auto" && progress != "redraw" && progress != "plain") {
    throw std::invalid_argument("--progress " + progress + ": must be auto, redraw or plain");
  }
  m.redraw = progress == "redraw" || (progress == "auto" && ::isatty(STDOUT_FILENO) == 1);
  // As the daemons: --nodes and --topology, if given, must agree with the cluster file.
  starling::node::CheckAgainstClusterFile(starling::node::GivenGraphOptions(vm),
                                          starling::topology::ReadClusterFile(m.cluster_file),
                                          m.cluster_file, m.run.seed);
  m.run.nodes = 1;  // taken from the cluster file
  starling::node::ValidateRunConfig(m.run);
  return starling::node::RunMonitor(m, stop, std::cout);
}

// starling-probe evaluate RUN_DIR [options]: RUN_DIR may come first, or as --run-dir.
int Evaluate(int argc, char** argv) {
  starling::node::EvaluateRunOptions e;
  std::vector<char*> args(argv, argv + argc);
  if (args.size() > 1 && args[1][0] != '-') {
    e.run_dir = args[1];
    args.erase(args.begin() + 1);
  }
  po::options_description options(
      "starling-probe evaluate RUN_DIR: evaluate the model snapshots RUN_DIR/snapshots-K.bin\n"
      "of every node K of RUN_DIR/cluster.conf (starlingd --snapshots) with the run's own\n"
      "problems: at every step each node has a snapshot of, the global objective, relative gap,\n"
      "test accuracy and consensus distance at the average model, and the nodes' own objectives\n"
      "on some points; writes RUN_DIR/curves.jsonl (examples/plot_run.py draws it). Give it the\n"
      "same run options as the daemons (snapshots of another run are refused).\n"
      "Example:\n"
      "  starling-probe evaluate runs/demo --algorithm swarmsgd --problem multinomial\n"
      "      --data train-images-idx3-ubyte.gz --test-data t10k-images-idx3-ubyte.gz\n"
      "      --reference-optimum 0.2934\n"
      "Exit codes: 0 written, 2 bad options, missing or foreign snapshots.\n"
      "Options");
  options.add_options()("help,h", "print this help and exit")(
      "config", po::value<std::string>(),
      "read further options from this file: one 'name = value' per line, the long option "
      "names without '--' ('algorithm = swarmsgd', 'allow-plaintext = true'), '#' starts a "
      "comment; an option given on the command line wins over the file "
      "(docs/reference/config-file.md)")(
      "run-dir", po::value(&e.run_dir), "the run folder (or give it first)")(
      "cluster", po::value(&e.cluster_file),
      "cluster file of the run (default RUN_DIR/cluster.conf)")(
      "out", po::value(&e.out), "curves file to write (default RUN_DIR/curves.jsonl)")(
      "band-points", po::value(&e.evaluate.band_points)->default_value(e.evaluate.band_points),
      "points with the band of the nodes' own objectives (each costs N evaluations; 0 = none, "
      "-1 = every point)")("threads",
                           po::value(&e.evaluate.threads)->default_value(e.evaluate.threads),
                           "evaluation threads (0 = one per core)");
  starling::node::AddRunOptions(&options, &e.run);
  const po::variables_map vm =
      starling::node::ParseCommandLine(static_cast<int>(args.size()), args.data(), options);
  if (vm.count("help")) {
    std::cout << options << std::endl;
    return 0;
  }
  if (e.run_dir.empty()) throw std::invalid_argument("evaluate: RUN_DIR is required");
  if (e.evaluate.band_points < -1) throw std::invalid_argument("--band-points: must be >= -1");
  if (e.evaluate.threads < 0) throw std::invalid_argument("--threads: must be >= 0");
  e.run.nodes = 1;  // taken from the cluster file
  starling::node::ValidateRunConfig(e.run);
  return starling::node::RunEvaluate(e, std::cout);
}

int Infer(int argc, char** argv) {
  starling::node::InferProbeOptions o;
  o.plot_script = starling::node::DefaultPlotScript();
  static const std::string estimator_help =
      std::string("one of ") + starling::topology::EstimatorNames() + ", or all";
  po::options_description options(
      "starling-probe infer: subscribe to the telemetry of some nodes of a diffusion run\n"
      "(starlingd --algorithm diffusion: samples aligned by step; or --algorithm\n"
      "pairwise-diffusion: time-stamped samples aligned every --period mean ticks) and infer the\n"
      "edges among them; compare with the cluster file's graph. Works when\n"
      "attached to a run already under way.\n"
      "Example:\n"
      "  starling-probe infer --cluster cluster.conf --observe 0-7 --samples 20000 --out infer\n"
      "Exit codes: 0 done, 2 bad options, 3 a node not heard from or too few samples.\n"
      "Options");
  options.add_options()("help,h", "print this help and exit")("cluster", po::value(&o.cluster_file),
                                                              "cluster file of the run (required)")(
      "observe", po::value(&o.observe), "node ids to watch, e.g. 0,3,5 or 0-7 (required)")(
      "samples", po::value(&o.samples)->default_value(o.samples),
      "aligned sample pairs (y_t, y_t+1) to collect")(
      "estimator", po::value(&o.estimator)->default_value(o.estimator), estimator_help.c_str())(
      "clustering", po::value(&o.clustering)->default_value(o.clustering),
      "how pair scores become edges: 2-means (exact, 1-D) or gmm (two-Gaussian mixture)")(
      "out", po::value(&o.out_dir)->default_value(o.out_dir),
      "folder for edges.tsv, inferred.dot, summary.jsonl and inference.png")(
      "burn-in", po::value(&o.burn_in)->default_value(o.burn_in),
      "ignore steps below this (the diffusion's start-up transient); time-stamped samples: "
      "mean ticks after the first sample heard")(
      "period", po::value(&o.period),
      "time-stamped samples (pairwise-diffusion): alignment period in mean ticks of the nodes "
      "(default 0.5); refused for stepped samples. The nodes' clocks must agree to well "
      "below a period, or be corrected (--clock-offsets): simulated, offsets spread over 1 "
      "period cost Granger 0.01-0.03 of accuracy, over 10 periods 0.1-0.2, over 100 all of it "
      "(docs/how-to/topology-inference.md)")(
      "clock-offsets", po::value(&o.clock_offsets)->default_value(o.clock_offsets),
      "time-stamped samples: the nodes' clock offsets. zero: the stamps are read as one clock "
      "(one host, or NTP-synchronised hosts, offsets well below a period). estimate: each "
      "node's offset from the largest (last stamp of a batch - its arrival on the probe's "
      "clock) over its batches, assuming constant offsets (no drift) and that every node gets "
      "some batch through with a small delay: the estimates relative to each other are off by "
      "at most the spread of the nodes' smallest delivery delays (a host's one-way latency to "
      "the probe; the samples wait for the first --clock-offset-batches batches of every "
      "node). ID:MS,...: known offsets, node ID's clock reads a common reference plus MS ms "
      "(unlisted nodes 0). The estimate is printed in every case")(
      "clock-offset-batches",
      po::value(&o.clock_offset_batches)->default_value(o.clock_offset_batches),
      "--clock-offsets estimate: batches of every observed node before the offsets are fixed "
      "(the daemons send a batch every 100 ms or 512 samples)")(
      "connect-timeout-s",
      po::value(&o.connect_timeout_seconds)->default_value(o.connect_timeout_seconds),
      "fail (exit 3), naming it, if an observed node is not heard from by then")(
      "timeout-s", po::value(&o.timeout_seconds)->default_value(o.timeout_seconds),
      "stop collecting after this long and infer from what arrived")(
      "plot-script",
      po::value(&o.plot_script)
          ->default_value(o.plot_script, "share/starling/plot_inference.py of this installation"),
      "python script drawing inference.png (run with /usr/bin/python3; empty = none)")(
      "drop-fraction", po::value(&o.drop_fraction)->default_value(o.drop_fraction),
      "testing: discard this fraction of sample batches, as a slow subscriber loses them")(
      "live", po::bool_switch(&o.live),
      "infer from a running optimization's reports (starlingd --telemetry-ms small): the "
      "projection of each node's model on one seeded direction, stamped as --live-stamps says; "
      "--period (default 1) and --burn-in in ms")(
      "live-stamps", po::value(&o.live_stamps)->default_value(o.live_stamps),
      "--live: node (each report's stamp: the node's clock when it read the model, related "
      "across nodes by --clock-offsets; needs a starlingd that stamps its reports) or arrival "
      "(the probe's clock on arrival, which adds the delivery's jitter; --clock-offsets zero)")(
      "projection-seed", po::value(&o.projection_seed)->default_value(o.projection_seed),
      "--live: seed of the projection direction")(
      "secret-key", po::value(&o.secret_key_file),
      "the probe's CURVE secret key file; its public key must be on a 'probe KEY' line of the "
      "cluster file")("allow-plaintext", po::bool_switch(&o.allow_plaintext),
                      "watch nodes that run without CURVE (no --secret-key)");
  const po::variables_map vm = starling::node::ParseCommandLine(argc, argv, options);
  if (vm.count("help")) {
    std::cout << options << std::endl;
    return 0;
  }
  return starling::node::RunInferProbe(o, starling::node::InstallStopSignals(), std::cout);
}

int Cluster(int argc, char** argv) {
  int nodes = 8, port = 7100;
  uint64_t seed = 1;
  std::string topology = "ring", out, host_prefix = "127.0.0.", keys_dir, ipc_dir;
  po::options_description options(
      "starling-probe cluster: write a cluster file for N nodes; node i gets the endpoint\n"
      "tcp://PREFIX(i+1):PORT (loopback addresses 127.0.0.1, 127.0.0.2, ... by default),\n"
      "or ipc://DIR/node-i with --ipc-dir DIR (Unix domain sockets: one machine only).\n"
      "Options");
  const std::string topology_help =
      std::string("communication graph: ") + starling::topology::TopologySpecs();
  options.add_options()("help,h", "print this help and exit")(
      "nodes", po::value(&nodes)->default_value(nodes), "number of nodes (1-250)")(
      "topology", po::value(&topology)->default_value(topology), topology_help.c_str())(
      "seed", po::value(&seed)->default_value(seed), "seed for random graphs")(
      "port", po::value(&port)->default_value(port), "peer port (telemetry uses PORT+1)")(
      "host-prefix", po::value(&host_prefix)->default_value(host_prefix),
      "address prefix; node i gets PREFIX followed by i+1")(
      "ipc-dir", po::value(&ipc_dir),
      "node i gets ipc://DIR/node-i instead (its telemetry ipc://DIR/node-i.telemetry); DIR must "
      "exist, and the longest of these paths must fit in 107 bytes")("out", po::value(&out),
                                                                     "file to write (required)")(
      "keys", po::value(&keys_dir),
      "also make CURVE key pairs in this folder (node-K.key/.pub for each node, probe.key/.pub)"
      " and list the public keys in the cluster file");
  const po::variables_map vm = starling::node::ParseCommandLine(argc, argv, options);
  if (vm.count("help")) {
    std::cout << options << std::endl;
    return 0;
  }
  if (out.empty()) throw std::invalid_argument("--out: required");
  if (nodes < 1 || nodes > 250) throw std::invalid_argument("--nodes: must be in 1..250");
  if (port < 1 || port > 65534) throw std::invalid_argument("--port: must be in 1..65534");
  starling::topology::Cluster cluster;
  cluster.graph = starling::topology::MakeTopology(topology, nodes, seed);
  if (!ipc_dir.empty()) {
    while (ipc_dir.size() > 1 && ipc_dir.back() == '/') ipc_dir.pop_back();
    // The longest path a node binds is its telemetry socket's; sun_path holds 107 bytes.
    const std::string longest = ipc_dir + "/node-" + std::to_string(nodes - 1) + ".telemetry";
    if (longest.size() > 107) {
      throw std::invalid_argument("--ipc-dir: " + longest + " is " +
                                  std::to_string(longest.size()) +
                                  " bytes, more than an ipc path's 107; choose a shorter folder");
    }
  }
  for (int i = 0; i < nodes; ++i) {
    const std::string endpoint =
        ipc_dir.empty()
            ? "tcp://" + host_prefix + std::to_string(i + 1) + ":" + std::to_string(port)
            : "ipc://" + ipc_dir + "/node-" + std::to_string(i);
    cluster.nodes.push_back({i, endpoint, ""});
  }
  if (!keys_dir.empty()) {
    ::mkdir(keys_dir.c_str(), 0700);  // may exist; key files are never overwritten
    for (int i = 0; i < nodes; ++i) {
      cluster.nodes[i].public_key =
          starling::net::WriteCurveKeyFiles(keys_dir + "/node-" + std::to_string(i)).public_key;
    }
    cluster.probe_keys.push_back(starling::net::WriteCurveKeyFiles(keys_dir + "/probe").public_key);
  }
  starling::topology::WriteClusterFile(cluster, out);
  std::cout << "wrote " << out << ": " << nodes << " nodes, " << cluster.graph.num_edges()
            << " edges (" << topology << ")" << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
      std::cout << kUsage;
      return argc < 2 ? 2 : 0;
    }
    const std::string command = argv[1];
    starling::node::UseStderrLogger("probe");
    if (command == "monitor") return Monitor(argc - 1, argv + 1);
    if (command == "cluster") return Cluster(argc - 1, argv + 1);
    if (command == "infer") return Infer(argc - 1, argv + 1);
    if (command == "evaluate") return Evaluate(argc - 1, argv + 1);
    std::fprintf(stderr, "starling-probe: error: unknown command '%s'\n%s", command.c_str(),
                 kUsage);
    return 2;
  } catch (const starling::node::RendezvousTimeout& e) {
    std::fprintf(stderr, "starling-probe: error: %s\n", e.what());
    return 3;  // timed out, as the monitor's own --timeout-s
  } catch (const starling::node::JoinTimeout& e) {
    std::fprintf(stderr, "starling-probe: error: %s\n", e.what());
    return 3;
  } catch (const starling::node::JoinStopped& e) {
    std::fprintf(stderr, "starling-probe: %s\n", e.what());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "starling-probe: error: %s\n", e.what());
    return 2;
  }
}
