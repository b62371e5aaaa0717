#!/usr/bin/env python3
"""Run N Starling daemons on this machine, watch their progress, and report.

One command for a local experiment: writes a cluster file with `starling-probe cluster`
(with a fresh CURVE key pair for every node and the probe, so that the run is encrypted and
authenticated like a LAN deployment),
starts `starling-probe monitor` and then one `starlingd` per node (node i on 127.0.0.(i+1), or
with --transport ipc on a Unix domain socket, RUN_DIR/ipc/node-i),
forwards the monitor's progress lines, stops every process it started on failure, Ctrl-C,
timeout and at the end, prints the monitor's summary and draws plots with plot_run.py.

Python 3 standard library only.
"""

import argparse
import os
import re
import shutil
import shlex
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

import daemon_warnings
import launch_progress

# This script's own folder (examples/, or share/starling/ once installed, where the command
# bin/starling-launch links to it) holds the scripts it runs; the binaries are looked for beside
# the command first (an installed bin/), then in the checkout's build tree, then on PATH.
EXAMPLES_DIR = os.path.dirname(os.path.realpath(__file__))
COMMAND_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(EXAMPLES_DIR)
BUILD_BIN_DIR = os.path.join(REPO_DIR, "build", "node")
PLOT_SCRIPT = os.path.join(EXAMPLES_DIR, "plot_run.py")
REPORT_SCRIPT = os.path.join(EXAMPLES_DIR, "run_report.py")  # report.md and report.html
PLOT_PYTHON = "/usr/bin/python3"  # Debian's python3, with python3-matplotlib

MAX_NODES = 250            # loopback addresses 127.0.0.1 .. 127.0.0.250
MAX_IPC_PATH = 107         # bytes of a Unix domain socket's path (sun_path, without the NUL)
IPC_SUBDIR = "ipc"         # RUN_DIR/ipc/node-K and node-K.telemetry with --transport ipc
POLL_S = 0.2               # supervision period
STOP_GRACE_S = 5.0         # SIGTERM, then SIGKILL after this long
KILL_WAIT_S = 2.0          # wait after SIGKILL before giving up on a process
MONITOR_READY_S = 60.0     # wait this long at most for the monitor to subscribe
LINGER_GRACE_S = 60.0      # once the monitor saw every node finish, wait this long for them
AWAIT_MONITOR_S = 120      # a node that finishes before the monitor subscribed waits this long
WAIT_NOTE_S = 30.0         # while only the monitor runs, say so this often
CLUSTER_TIMEOUT_S = 60.0   # starling-probe cluster
PLOT_TIMEOUT_S = 300.0     # plot_run.py
REPORT_TIMEOUT_S = 120.0   # run_report.py
EVALUATE_TIMEOUT_S = 600.0  # starling-probe evaluate (the snapshots' curves)
READER_JOIN_S = 5.0        # monitor output reader, after the monitor exited
LOG_TAIL_LINES = 5
MONITOR_PREFIX = "[monitor] "
MONITOR_READY_MARK = "watching"  # the monitor's first line: "monitor: watching N nodes ..."
SUMMARY_MARK = "summary"          # the line that opens the monitor's summary block
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

EXIT_OK = 0
EXIT_FAILED = 1        # a daemon or the monitor failed
EXIT_USAGE = 2         # bad options or a failed check before starting
EXIT_TIMEOUT = 3       # the overall deadline (--timeout-s) passed
EXIT_INCOMPLETE = 4    # the run ended, but some node did far fewer local steps or merges than asked
EXIT_INTERRUPTED = 130  # Ctrl-C, SIGTERM or SIGHUP

# starlingd options that the monitor does not accept: they go to the daemons only.
DAEMON_ONLY_OPTIONS = frozenset([
    "--resend-ms", "--exchange-timeout-ms", "--wait-log-s", "--give-up-s", "--linger-s",
    "--local-objective-s", "--compute-delay-ms",
    "--log-level", "--snapshot-every", "--snapshot-max-mb", "--shm",
    "--progress-window", "--start-wait-s", "--replay-window",
    "--fault-loss", "--fault-delay-ms", "--fault-jitter-ms", "--fault-dup", "--fault-reorder",
    "--fault-link", "--fault-partition", "--fault-seed",
])
# starling-probe monitor options that starlingd does not accept: they go to the monitor only.
MONITOR_ONLY_OPTIONS = frozenset(["--reference-tolerance", "--prometheus-port",
                                  "--prometheus-bind"])
# Options the launcher sets itself for every process; forwarding them would clash.
RESERVED_OPTIONS = {
    "--cluster": "the launcher writes RUN_DIR/cluster.conf",
    "--id": "the launcher numbers the nodes",
    "--metrics": "the launcher writes RUN_DIR/node-K.jsonl and RUN_DIR/metrics.jsonl",
    "--final-model": "the launcher writes RUN_DIR/model-K.txt",
    "--out": "--out is the launcher's run folder",
    "--secret-key": "the launcher makes fresh CURVE keys in RUN_DIR/keys",
    "--snapshots": "the launcher writes RUN_DIR/snapshots-K.bin (--no-snapshots: none)",
    "--await-monitor-s": "the launcher has every node wait for its monitor (%d s at most)"
                         % AWAIT_MONITOR_S,
}
# Files of a run folder that a new run replaces.
RUN_FILE_PATTERN = re.compile(
    r"^(node-\d+\.log|node-\d+\.jsonl|model-\d+\.txt|metrics\.jsonl|monitor\.log|"
    r"command\.txt|cluster\.conf|objective\.png|consensus\.png|report\.md|report\.html|"
    r"snapshots-\d+\.bin|curves\.jsonl)$")

DAEMON_EXIT_MEANINGS = {
    2: "configuration error or refused by a peer",
    3: "gave up waiting for a neighbour",
    4: "the run diverged: its model or objective ran away; try a smaller --step",
    5: "ended, but did far fewer local steps or merges than asked",
}
MONITOR_EXIT_MEANINGS = {2: "bad options or data", 3: "timed out",
                         5: "some node did far fewer local steps than asked"}
# A daemon's and the monitor's exit code for a run that ended but did far less than asked (a
# node did < 90% of its local steps, or > 10% of them alone): not a crash, so the launcher lets
# the run end, says so in its "result:" line and exits EXIT_INCOMPLETE.
INCOMPLETE_CODE = 5
INCOMPLETE_MARK = "incomplete"
# The launcher's output: the progress line redrawn in a terminal, plain lines otherwise.
CONSOLE = launch_progress.Console()

DESCRIPTION = """\
Run N Starling daemons (starlingd) on this machine and watch them.

Node i listens on tcp://127.0.0.(i+1):PORT for peers and PORT+1 for telemetry, or with
--transport ipc on the Unix domain sockets RUN_DIR/ipc/node-i and RUN_DIR/ipc/node-i.telemetry (a
short folder under /tmp instead if those paths would exceed 107 bytes; sockets an earlier run
left are removed, live ones refused; no ports, so runs in different folders never clash). CURVE
is on either way. The launcher
writes the cluster file, starts `starling-probe monitor`, then the N daemons, prints the
monitor's progress lines, stops everything it started on a failure, Ctrl-C or the deadline,
and at the end prints the monitor's summary and draws plots.

Run options (--algorithm, --step, --step-schedule, --batch, --local-steps, --iterations,
--problem, --l2, --data, --format, --features, --test-data, --partition, --x0, --log-every,
--config) are not
the launcher's own: they are forwarded verbatim to every starlingd and to the monitor, which
need identical run options (see `starlingd --help`). Daemon-only options (--give-up-s,
--linger-s, --log-level, --resend-ms, --exchange-timeout-ms, --wait-log-s,
--local-objective-s) go to the daemons
only, --reference-tolerance, --prometheus-port and --prometheus-bind to the monitor only. --seed goes to the cluster file, the daemons
and the monitor.

--step-schedule SPEC (forwarded like the other run options) changes the step over each node's
local steps t: constant (the default), inv-sqrt[:t0=T0], step:every=N,factor=F or
cosine[:T=N][,min=M] (T defaults to --iterations), each with an optional warmup=W (a linear
ramp over the first W steps); e.g. --step 0.5 --step-schedule cosine.

With --reference-optimum auto the monitor takes f* and the centralized test accuracy from the
reference cache ($XDG_CACHE_HOME/starling, default ~/.cache/starling) when the same data,
problem and options were solved before; otherwise it solves while the daemons run and stores
the solution there for the next run.
"""

EPILOG = """\
example:
  python3 examples/launch_local.py --nodes 8 --topology ring --out runs/demo \\
      --algorithm swarmsgd --problem multinomial --format idx \\
      --data /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz \\
      --test-data /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz \\
      --iterations 2000 --batch 32

run folder (--out):
  cluster.conf    the cluster file           command.txt     the exact command lines
  node-K.log      daemon K's stderr+stdout   node-K.jsonl    daemon K's metrics
  model-K.txt     daemon K's final model     metrics.jsonl   the monitor's metrics
  monitor.log     the monitor's output       objective.png, consensus.png   plots
  snapshots-K.bin daemon K's model snapshots curves.jsonl    the dense curves (evaluate)
  report.md, report.html   the run report (examples/run_report.py; the HTML is self-contained)
  keys/           CURVE key pairs node-K.key/.pub and probe.key/.pub (secret files mode 0600)
  ipc/            the nodes' sockets node-K and node-K.telemetry (--transport ipc)
  Files of these names left by an earlier run in the same folder are deleted first.

exit codes: 0 success, 1 a daemon or the monitor failed, 2 bad options or a failed check,
  3 --timeout-s passed, 4 the run ended but some node did far fewer local steps or merges than
  asked (the "result:" line says which), 130 interrupted (Ctrl-C, SIGTERM, SIGHUP).
"""


class SetupError(Exception):
    """A problem found before any daemon was started; the message says what to do."""


class StartError(Exception):
    """A process could not be started."""


class Interrupted(Exception):
    """The launcher received SIGTERM or SIGHUP."""


def parse_args(argv):
    """Parses the launcher's own options; returns (args, the tokens to forward)."""
    parser = argparse.ArgumentParser(
        prog="launch_local.py", description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    parser.add_argument("--nodes", type=int, default=4,
                        help="number of daemons, 1-%d (default 4)" % MAX_NODES)
    parser.add_argument("--topology", default="ring",
                        help="graph for the cluster file: ring, torus, torus:RxC, complete, star, "
                             "er:P, regular:R, exp, ring-of-cliques:CxK (default ring)")
    parser.add_argument("--seed", type=int, default=1,
                        help="seed for random graphs, partitioning, starting points and "
                             "mini-batches; forwarded (default 1)")
    parser.add_argument("--out", required=True, metavar="RUN_DIR",
                        help="run folder for logs, metrics, models and plots (created)")
    parser.add_argument("--port", type=int, default=7100,
                        help="--transport tcp: peer port of every node; telemetry uses PORT+1 "
                             "(default 7100)")
    parser.add_argument("--transport", choices=("tcp", "ipc"), default="tcp",
                        help="tcp: node i on tcp://127.0.0.(i+1):PORT; ipc: on a Unix domain "
                             "socket, RUN_DIR/ipc/node-i (--port unused). --worker runs always "
                             "use tcp (default %(default)s)")
    parser.add_argument("--bin-dir",
                        help="folder with starlingd and starling-probe (default: beside this "
                             "command, as installed; else build/node of the checkout it is in; "
                             "else starlingd's folder on PATH)")
    parser.add_argument("--timeout-s", type=float, default=900.0,
                        help="overall deadline in seconds; everything is stopped after it "
                             "(default 900)")
    parser.add_argument("--telemetry-ms", type=int, default=500,
                        help="daemons' telemetry and metrics period (default 500)")
    parser.add_argument("--interval-ms", type=int, default=1000,
                        help="monitor's progress period (default 1000)")
    parser.add_argument("--reference-optimum", default="auto", metavar="auto|NUMBER|none",
                        help="monitor: f* for the relative gap; 'auto' solves the centralized "
                             "problem (also gives its test accuracy), 'none' skips it "
                             "(default auto)")
    parser.add_argument("--no-plots", action="store_true",
                        help="do not run plot_run.py at the end")
    parser.add_argument("--no-snapshots", action="store_true",
                        help="no model snapshots (RUN_DIR/snapshots-K.bin, about 64 per node; "
                             "--snapshot-every N sets the period) and so no dense curves "
                             "(RUN_DIR/curves.jsonl, from `starling-probe evaluate` after the "
                             "run)")
    parser.add_argument("--band-points", type=int, default=10,
                        help="starling-probe evaluate: points of the curves with the band of the "
                             "nodes' own objectives (each costs N passes over the data; 0 = none, "
                             "-1 = every point; default 10)")
    parser.add_argument("--worker", metavar="CMD",
                        help="start N copies of CMD (your training program over libstarling, "
                             "e.g. \"python3 examples/torch_fmnist.py\") instead of starlingd "
                             "and the monitor; forwarded options go to CMD (launch_workers.py) "
                             "except --partition SPEC, which gives each worker the daemons' "
                             "split through STARLING_PARTITION and starling.shard(data)")
    return parser.parse_known_args(argv)


def split_forwarded(tokens):
    """Splits forwarded tokens into (for everyone, for the daemons only, for the monitor only).

    Raises SetupError for options the launcher sets itself.
    """
    shared, daemon_only, monitor_only = [], [], []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        name = token.split("=", 1)[0] if token.startswith("--") else None
        if name in RESERVED_OPTIONS:
            raise SetupError("%s cannot be forwarded: %s" % (name, RESERVED_OPTIONS[name]))
        target = (daemon_only if name in DAEMON_ONLY_OPTIONS else
                  monitor_only if name in MONITOR_ONLY_OPTIONS else shared)
        takes_next = (target is not shared and "=" not in token and i + 1 < len(tokens))
        count = 2 if takes_next else 1
        target.extend(tokens[i:i + count])
        i += count
    return shared, daemon_only, monitor_only


def check_options(args):
    """Checks the launcher's own option values."""
    if not 1 <= args.nodes <= MAX_NODES:
        raise SetupError("--nodes %d: must be between 1 and %d (one loopback address "
                         "127.0.0.1..127.0.0.%d per node)" % (args.nodes, MAX_NODES, MAX_NODES))
    if not 1 <= args.port <= 65534:
        raise SetupError("--port %d: must be between 1 and 65534 (telemetry uses PORT+1)"
                         % args.port)
    if args.timeout_s <= 0:
        raise SetupError("--timeout-s must be positive")
    if args.band_points < -1:
        raise SetupError("--band-points %d: must be >= -1 (-1 = every point)" % args.band_points)


def default_bin_dir():
    """The first of: beside this command, the build tree, starlingd's folder on PATH; or None."""
    on_path = shutil.which("starlingd")
    for folder in (COMMAND_DIR, BUILD_BIN_DIR, on_path and os.path.dirname(on_path)):
        if folder and os.path.isfile(os.path.join(folder, "starlingd")):
            return folder
    return None


def find_binaries(bin_dir):
    """Returns {"starlingd": path, "starling-probe": path}; raises SetupError if one is missing.

    bin_dir None: default_bin_dir()."""
    if bin_dir is None:
        bin_dir = default_bin_dir()
        if bin_dir is None:
            raise SetupError("starlingd: not beside this command (%s), not in %s and not on PATH. "
                             "Install Starling (its Debian package, or cmake --install), build "
                             "it with scripts/build.sh, or give --bin-dir FOLDER."
                             % (COMMAND_DIR, BUILD_BIN_DIR))
    found = {}
    for name in ("starlingd", "starling-probe"):
        path = os.path.abspath(os.path.join(bin_dir, name))
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise SetupError("%s: not found or not executable. Install or build Starling "
                             "(scripts/build.sh puts the binaries in %s), or point --bin-dir at "
                             "a folder that has it." % (path, BUILD_BIN_DIR))
        found[name] = path
    return found


def prepare_run_dir(out):
    """Creates the run folder and deletes files an earlier run left there; returns its path."""
    run_dir = os.path.abspath(out)
    try:
        os.makedirs(run_dir, exist_ok=True)
    except OSError as e:
        raise SetupError("%s: cannot create the run folder: %s" % (run_dir, e.strerror))
    stale = [name for name in os.listdir(run_dir) if RUN_FILE_PATTERN.match(name)]
    for name in stale:
        os.remove(os.path.join(run_dir, name))
    if stale:
        print("note: deleted %d file(s) of an earlier run in %s" % (len(stale), run_dir))
    return run_dir


def quote_command(argv):
    """Returns a command line as one shell-quoted string."""
    return " ".join(shlex.quote(str(a)) for a in argv)


def write_cluster_file(probe, args, path, ipc_dir=None):
    """Runs `starling-probe cluster`; returns its command line. Raises SetupError on failure.

    With ipc_dir, node i's endpoint is ipc://IPC_DIR/node-i instead of tcp://127.0.0.(i+1):PORT.
    """
    argv = [probe, "cluster", "--nodes", str(args.nodes), "--topology", args.topology,
            "--seed", str(args.seed), "--port", str(args.port), "--out", path,
            "--keys", os.path.join(os.path.dirname(path), "keys")]
    if ipc_dir is not None:
        argv += ["--ipc-dir", ipc_dir]
    try:
        result = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, timeout=CLUSTER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise SetupError("starling-probe cluster did not finish in %d s" % CLUSTER_TIMEOUT_S)
    output = result.stdout.decode("utf-8", "replace").strip()
    if result.returncode != 0:
        raise SetupError("writing the cluster file failed (exit %d): %s\n  command: %s"
                         % (result.returncode, output, quote_command(argv)))
    print(output)
    return argv


def expected_endpoints(nodes, port, ipc_dir=None):
    """Returns [(node id, host, port)] as `starling-probe cluster` assigns them.

    With ipc_dir: [(node id, "ipc", socket path)].
    """
    if ipc_dir is not None:
        return [(i, "ipc", os.path.join(ipc_dir, "node-%d" % i)) for i in range(nodes)]
    return [(i, "127.0.0.%d" % (i + 1), port) for i in range(nodes)]


def read_endpoints(cluster_path):
    """Returns [(node id, host, port)] from the 'node ID tcp://HOST:PORT' lines of a file.

    An 'ipc://PATH' endpoint gives (node id, "ipc", PATH).
    """
    endpoints = []
    with open(cluster_path) as f:
        for line in f:
            fields = line.split("#", 1)[0].split()
            if len(fields) >= 3 and fields[0] == "node":
                if fields[2].startswith("ipc://") and len(fields[2]) > len("ipc://"):
                    endpoints.append((int(fields[1]), "ipc", fields[2][len("ipc://"):]))
                    continue
                match = re.match(r"^tcp://([^:/]+):(\d+)$", fields[2])
                if not match:
                    raise SetupError("%s: cannot read endpoint %r" % (cluster_path, fields[2]))
                endpoints.append((int(fields[1]), match.group(1), int(match.group(2))))
    return endpoints


def check_cluster_file(cluster_path, endpoints):
    """Raises SetupError unless the cluster file has exactly the endpoints that were checked."""
    found = read_endpoints(cluster_path)
    if sorted(found) != sorted(endpoints):
        raise SetupError("%s: its node endpoints are not the expected %s for nodes 0..%d"
                         % (cluster_path,
                            "ipc://DIR/node-i" if endpoints and endpoints[0][1] == "ipc"
                            else "tcp://127.0.0.(i+1):PORT", len(endpoints) - 1))


def ipc_paths(ipc_dir, nodes):
    """Returns every socket path the nodes bind under ipc_dir (peer and telemetry)."""
    paths = []
    for i in range(nodes):
        peer = os.path.join(ipc_dir, "node-%d" % i)
        paths += [peer, peer + ".telemetry"]
    return paths


def choose_ipc_dir(run_dir, nodes):
    """Returns (folder for the nodes' ipc sockets, True if it is a temporary one to remove).

    RUN_DIR/ipc if every socket path fits in MAX_IPC_PATH bytes, else a new folder under the
    system's temporary folder (or /tmp). Raises SetupError if neither fits.
    """
    longest = "node-%d.telemetry" % (nodes - 1)
    in_run_dir = os.path.join(run_dir, IPC_SUBDIR)
    if len(os.path.join(in_run_dir, longest).encode()) <= MAX_IPC_PATH:
        return in_run_dir, False
    for base in (tempfile.gettempdir(), "/tmp"):
        # mkdtemp's name is base/starling-XXXXXXXX: check the length before making it.
        if len(os.path.join(base, "starling-XXXXXXXX", longest).encode()) <= MAX_IPC_PATH:
            return tempfile.mkdtemp(prefix="starling-", dir=base), True
    raise SetupError("--transport ipc: no folder short enough for the sockets' paths (at most "
                     "%d bytes); use --transport tcp" % MAX_IPC_PATH)


def prepare_ipc_dir(ipc_dir, nodes):
    """Creates ipc_dir (mode 0700) and removes the sockets an earlier run left there.

    Raises SetupError if a socket there still accepts connections (another run is using it).
    """
    try:
        os.makedirs(ipc_dir, mode=0o700, exist_ok=True)
    except OSError as e:
        raise SetupError("%s: cannot create the ipc folder: %s" % (ipc_dir, e.strerror))
    live = []
    for path in ipc_paths(ipc_dir, nodes):
        try:
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                raise SetupError("%s: exists and is not a socket; remove it or use another --out"
                                 % path)
        except FileNotFoundError:
            continue
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            live.append(path)
        except OSError:
            os.remove(path)  # stale: its listener is gone
        finally:
            sock.close()
    if live:
        raise SetupError("these sockets are in use (another run in the same --out still "
                         "going?):\n" + "\n".join("  " + p for p in live))


def address_in_use(host, port):
    """Returns None if host:port can be bound now, else the reason."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        # Like ZeroMQ's listeners: ports in TIME_WAIT are fine, listening sockets are not.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        return None
    except OSError as e:
        return e.strerror or str(e)
    finally:
        sock.close()


def check_ports(endpoints):
    """Raises SetupError naming every peer or telemetry address that cannot be bound."""
    problems = []
    for node, host, port in endpoints:
        for kind, p in (("peer", port), ("telemetry", port + 1)):
            reason = address_in_use(host, p)
            if reason:
                problems.append("  node %d %s address %s:%d: %s" % (node, kind, host, p, reason))
    if problems:
        raise SetupError("cannot bind these addresses (another run still going? choose another "
                         "--port):\n" + "\n".join(problems))


def daemon_command(starlingd, node, run_dir, args, shared, daemon_only):
    """Returns the starlingd command line of one node."""
    return ([starlingd, "--cluster", os.path.join(run_dir, "cluster.conf"), "--id", str(node)]
            + shared + ["--seed", str(args.seed)] + daemon_only
            + ["--telemetry-ms", str(args.telemetry_ms),
               "--await-monitor-s", str(AWAIT_MONITOR_S),
               "--metrics", os.path.join(run_dir, "node-%d.jsonl" % node),
               "--final-model", os.path.join(run_dir, "model-%d.txt" % node),
               "--secret-key", os.path.join(run_dir, "keys", "node-%d.key" % node)]
            + ([] if args.no_snapshots else
               ["--snapshots", os.path.join(run_dir, "snapshots-%d.bin" % node)]))


def monitor_command(probe, run_dir, args, shared, monitor_only):
    """Returns the starling-probe monitor command line."""
    argv = ([probe, "monitor", "--cluster", os.path.join(run_dir, "cluster.conf")]
            + shared + ["--seed", str(args.seed)] + monitor_only
            + ["--secret-key", os.path.join(run_dir, "keys", "probe.key")])
    if args.reference_optimum != "none":
        argv += ["--reference-optimum", args.reference_optimum]
    return argv + ["--interval-ms", str(args.interval_ms),
                   "--timeout-s", str(max(1, int(round(args.timeout_s)))),
                   "--metrics", os.path.join(run_dir, "metrics.jsonl")]


def evaluate_command(probe, run_dir, args, shared, f_star):
    """Returns the starling-probe evaluate command line (f_star: the monitor's, or None)."""
    argv = ([probe, "evaluate", run_dir] + shared
            + ["--seed", str(args.seed), "--band-points", str(args.band_points)])
    if f_star is None and args.reference_optimum not in ("auto", "none"):
        f_star = args.reference_optimum
    if f_star is not None:
        argv += ["--reference-optimum", str(f_star)]
    return argv


def plot_command(run_dir):
    """Returns the plot_run.py command line."""
    return [PLOT_PYTHON, PLOT_SCRIPT, run_dir]


def write_command_file(run_dir, sections):
    """Writes command.txt: a '# title' line, then the command line, for each (title, argv)."""
    with open(os.path.join(run_dir, "command.txt"), "w") as f:
        f.write("# launch_local.py run, %s, working directory %s\n"
                % (time.strftime("%Y-%m-%d %H:%M:%S"), os.getcwd()))
        for title, argv in sections:
            f.write("# %s\n%s\n" % (title, quote_command(argv)))


def start_process(argv, stdout, stderr):
    """Starts argv in its own session (and process group), stdin closed."""
    try:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                start_new_session=True)
    except OSError as e:
        raise StartError("cannot run %s: %s" % (argv[0], e))


def signal_group(proc, sig):
    """Sends sig to proc's process group if proc has not been reaped yet."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_processes(procs):
    """Stops every running process in procs: SIGTERM, then SIGKILL after STOP_GRACE_S.

    Returns the number of processes that had to be killed.
    """
    running = [p for p in procs if p.poll() is None]
    for p in running:
        signal_group(p, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < deadline and any(p.poll() is None for p in running):
        time.sleep(0.05)
    stubborn = [p for p in running if p.poll() is None]
    for p in stubborn:
        signal_group(p, signal.SIGKILL)
    for p in stubborn:
        try:
            p.wait(timeout=KILL_WAIT_S)
        except subprocess.TimeoutExpired:
            print("warning: process %d did not exit after SIGKILL" % p.pid, file=sys.stderr)
    return len(stubborn)


class MonitorOutput(object):
    """Reads the monitor's output in a thread: logs it, echoes progress, keeps the summary."""

    def __init__(self, stream, log_path):
        self.lines = []
        self.ready = threading.Event()   # the monitor subscribed (or its output ended)
        self.subscribed = False          # the monitor printed MONITOR_READY_MARK
        self._stream = stream
        self._log_path = log_path
        self._in_summary = False
        self._echo = True  # becomes False if our own stdout is gone (e.g. a closed pipe)
        self._thread = threading.Thread(target=self._run, name="monitor-output")
        self._thread.daemon = True

    def start(self):
        """Starts the reader thread."""
        self._thread.start()

    def join(self, timeout):
        """Waits at most timeout seconds for the end of the monitor's output."""
        self._thread.join(timeout)

    def _run(self):
        """Thread body: copies every line to the log, echoes progress, notes ready/summary."""
        with open(self._log_path, "w") as log:
            for raw in iter(self._stream.readline, b""):
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                log.write(line + "\n")
                log.flush()
                self.lines.append(line)
                if MONITOR_READY_MARK in line:
                    self.subscribed = True
                    self.ready.set()
                if line.strip() == SUMMARY_MARK:
                    self._in_summary = True
                if not self._in_summary:  # the summary is printed once, at the end
                    self._print(line)
        self._stream.close()
        self.ready.set()

    def _print(self, line):
        """Echoes one line with MONITOR_PREFIX, until our stdout fails."""
        if self._echo:
            CONSOLE.monitor_line(MONITOR_PREFIX, line)

    def summary(self):
        """Returns the lines of the last summary block (after a 'summary' line), or []."""
        starts = [i for i, line in enumerate(self.lines) if line.strip() == SUMMARY_MARK]
        return self.lines[starts[-1] + 1:] if starts else []


def describe_exit(code, meanings):
    """Returns a readable description of a process exit status; meanings: {code: text}."""
    if code < 0:
        try:
            return "killed by signal %s" % signal.Signals(-code).name
        except ValueError:
            return "killed by signal %d" % -code
    meaning = meanings.get(code)
    return "exit code %d%s" % (code, " (%s)" % meaning if meaning else "")


def tail(path, count):
    """Returns the last count non-empty lines of a text file ([] if unreadable)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()][-count:]


def report_failure(what, code, meanings, log_path):
    """Prints which process failed, how, and the end of its log."""
    CONSOLE.end()
    print("FAILED: %s: %s; last %d lines of %s:"
          % (what, describe_exit(code, meanings), LOG_TAIL_LINES, log_path), file=sys.stderr)
    for line in tail(log_path, LOG_TAIL_LINES):
        print("    " + line, file=sys.stderr)


class Run(object):
    """The processes of one run: the monitor and the daemons, with their log files."""

    def __init__(self, run_dir, monitor_argv, daemon_argvs):
        self.run_dir = run_dir
        self.monitor_argv = monitor_argv
        self.daemon_argvs = daemon_argvs
        self.monitor = None
        self.monitor_output = None
        self.daemons = []  # Popen per node, in node order
        self.failure = None  # what failed, for the launcher's last line
        self.warnings = None  # the daemons' warnings, relayed once per kind
        self.monitor_lines_seen = 0  # the monitor's lines relay_warnings has looked at

    def log_path(self, node):
        """Returns the log file of daemon `node`."""
        return os.path.join(self.run_dir, "node-%d.log" % node)

    def processes(self):
        """Returns every process started so far."""
        return ([self.monitor] if self.monitor else []) + self.daemons

    def start_monitor(self):
        """Starts the monitor and its output reader."""
        self.monitor = start_process(self.monitor_argv, subprocess.PIPE, subprocess.STDOUT)
        self.monitor_output = MonitorOutput(self.monitor.stdout,
                                            os.path.join(self.run_dir, "monitor.log"))
        self.monitor_output.start()

    def wait_monitor_ready(self, deadline):
        """Waits until the monitor subscribed, exited, or MONITOR_READY_S / deadline passed.

        Returns False if the monitor exited (or closed its output) without subscribing.
        """
        until = min(deadline, time.monotonic() + MONITOR_READY_S)
        while time.monotonic() < until and self.monitor.poll() is None:
            if self.monitor_output.ready.wait(POLL_S):
                break
        if self.monitor_output.subscribed:
            return True
        if self.monitor_output.ready.is_set():  # output ended: the monitor is exiting
            try:
                self.monitor.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
        return self.monitor.poll() is None

    def start_daemons(self):
        """Starts one starlingd per node, output to node-K.log."""
        for node, argv in enumerate(self.daemon_argvs):
            with open(self.log_path(node), "wb") as log:
                self.daemons.append(start_process(argv, log, subprocess.STDOUT))
        self.warnings = daemon_warnings.DaemonWarnings(
            [self.log_path(node) for node in range(len(self.daemon_argvs))])

    def relay_warnings(self):
        """Shows each daemon warning of a kind not shown yet (daemon_warnings.py)."""
        if self.warnings:
            # The monitor's own warnings (it reads the same data) are on the console already.
            lines = self.monitor_output.lines if self.monitor_output else []
            for line in lines[self.monitor_lines_seen:len(lines)]:
                at = line.find(daemon_warnings.MONITOR_WARNING_MARK)
                if at >= 0:
                    self.warnings.note_shown(
                        line[at + len(daemon_warnings.MONITOR_WARNING_MARK):].strip())
            self.monitor_lines_seen = len(lines)
            for node, text in self.warnings.new():
                CONSOLE.say("node %d warns: %s" % (node, text))

    def first_failed_daemon(self):
        """Returns (node, exit code) of the first daemon that failed, or None.

        A daemon that ended with INCOMPLETE_CODE did not fail: see incomplete_nodes().
        """
        for node, p in enumerate(self.daemons):
            code = p.poll()
            if code is not None and code not in (0, INCOMPLETE_CODE):
                return node, code
        return None

    def incomplete_nodes(self):
        """Returns [(node, its 'incomplete' log line)] for the daemons that ended incomplete."""
        found = []
        for node, p in enumerate(self.daemons):
            if p.poll() != INCOMPLETE_CODE:
                continue
            why = "exit code %d" % INCOMPLETE_CODE
            try:
                with open(self.log_path(node), "r", errors="replace") as log:
                    for line in log:
                        if "run %s:" % INCOMPLETE_MARK in line:
                            why = line.split("run %s:" % INCOMPLETE_MARK, 1)[1].strip()
            except OSError:
                pass
            found.append((node, why))
        return found

    def running_nodes(self):
        """Returns the ids of the daemons still running."""
        return [node for node, p in enumerate(self.daemons) if p.poll() is None]

    def supervise(self, deadline):
        """Watches the processes until success or failure; returns a launcher exit code."""
        linger_until = None  # set once the monitor finished: how long nodes may still linger
        next_note = None     # set once every node finished: when to say we still wait
        while True:
            self.relay_warnings()
            failed = self.first_failed_daemon()
            if failed:
                report_failure("node %d" % failed[0], failed[1], DAEMON_EXIT_MEANINGS,
                               self.log_path(failed[0]))
                self.failure = "node %d: %s (see %s)" % (
                    failed[0], describe_exit(failed[1], DAEMON_EXIT_MEANINGS),
                    self.log_path(failed[0]))
                return EXIT_FAILED
            monitor_code = self.monitor.poll()
            if monitor_code == INCOMPLETE_CODE:
                monitor_code = 0  # it ended and printed its summary, which says what is missing
            if monitor_code not in (None, 0):
                report_failure("monitor", monitor_code, MONITOR_EXIT_MEANINGS,
                               os.path.join(self.run_dir, "monitor.log"))
                self.failure = "monitor: %s (see %s)" % (
                    describe_exit(monitor_code, MONITOR_EXIT_MEANINGS),
                    os.path.join(self.run_dir, "monitor.log"))
                return EXIT_TIMEOUT if monitor_code == 3 else EXIT_FAILED
            running = self.running_nodes()
            if monitor_code == 0 and not running:
                return EXIT_OK
            now = time.monotonic()
            if monitor_code == 0:
                linger_until = linger_until or now + LINGER_GRACE_S
                if now >= linger_until:
                    CONSOLE.say("warning: the monitor saw every node finish, but nodes %s were "
                                "still running %d s later; stopping them"
                                % (" ".join(map(str, running)), LINGER_GRACE_S), sys.stderr)
                    return EXIT_OK
            elif not running and (next_note is None or now >= next_note):
                self._note_waiting_for_monitor(next_note is None)
                next_note = now + WAIT_NOTE_S
            if now >= deadline:
                self._report_timeout(running, monitor_code is None)
                self.failure = "TIMEOUT: --timeout-s passed"
                return EXIT_TIMEOUT
            time.sleep(POLL_S)

    def _note_waiting_for_monitor(self, first):
        """Says that every node finished and the monitor has not written its last report yet."""
        if first:
            CONSOLE.say("all %d nodes finished; waiting for the monitor's final report (with "
                        "--reference-optimum auto and no cached solution it first completes the "
                        "centralized solve)" % len(self.daemons))
        else:
            CONSOLE.say("still waiting for the monitor's final report...")

    def _report_timeout(self, running, monitor_running):
        """Explains what was still running when --timeout-s passed."""
        if running:
            what = "nodes still running: %s" % " ".join(map(str, running))
        else:
            what = "every node finished, but the monitor had not completed its report"
        CONSOLE.end()
        print("TIMEOUT: --timeout-s passed; %s%s" % (
            what, "; monitor still running" if monitor_running and running else ""),
            file=sys.stderr)

    def stop_all(self):
        """Stops every process still running, and the monitor's output reader."""
        procs = [p for p in self.processes() if p.poll() is None]
        if procs:
            CONSOLE.say("stopping %d process(es)..." % len(procs))
        killed = stop_processes(procs)
        if killed:
            print("note: %d process(es) ignored SIGTERM and were killed" % killed)
        if self.monitor_output:
            self.monitor_output.join(READER_JOIN_S)


def raise_interrupted(signum, _frame):
    """Signal handler for SIGTERM and SIGHUP: unwinds like Ctrl-C."""
    raise Interrupted(signal.Signals(signum).name)


def execute(run, deadline):
    """Starts the monitor and the daemons, supervises them, and always stops them all."""
    try:
        run.start_monitor()
        if run.wait_monitor_ready(deadline):
            run.start_daemons()
            CONSOLE.say("started the monitor (pid %d) and %d daemons (pids %d..%d)"
                        % (run.monitor.pid, len(run.daemons), run.daemons[0].pid,
                           run.daemons[-1].pid))
        code = run.supervise(deadline)
        run.relay_warnings()
        if run.warnings and run.warnings.summary():
            CONSOLE.say(run.warnings.summary())
        CONSOLE.end()
        return code
    except KeyboardInterrupt:
        print("\ninterrupted (Ctrl-C)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Interrupted as e:
        print("\ninterrupted (%s)" % e, file=sys.stderr)
        return EXIT_INTERRUPTED
    except StartError as e:
        print("FAILED: %s" % e, file=sys.stderr)
        run.failure = str(e)
        return EXIT_FAILED
    finally:
        CONSOLE.end()
        # A second Ctrl-C or SIGTERM must not cut the clean-up short.
        previous = {s: signal.signal(s, signal.SIG_IGN) for s in STOP_SIGNALS}
        try:
            run.stop_all()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)


def incomplete_reasons(run, summary_lines):
    """Why the run did far less than asked: the daemons' and the monitor's words, or []."""
    reasons = ["node %d: %s" % (node, why) for node, why in run.incomplete_nodes()]
    reasons += [line.split(":", 1)[1].strip() for line in summary_lines
                if line.startswith(INCOMPLETE_MARK + ":")]
    return reasons


def print_summary(run):
    """Prints the monitor's summary block and a one-line digest of it.

    Returns True if the run did far less than asked (a "result: INCOMPLETE" line).
    """
    output = run.monitor_output
    lines = output.summary() if output else []
    reasons = incomplete_reasons(run, lines)
    if not lines:
        if output and output.subscribed:
            print("(the monitor printed no summary; see %s)"
                  % os.path.join(run.run_dir, "monitor.log"))
        if reasons:
            print("result: INCOMPLETE: " + "; ".join(reasons))
        return bool(reasons)
    print("summary (from the monitor):")
    for line in lines:
        print("  " + line)
    values = dict(line.split(None, 1) for line in lines if len(line.split(None, 1)) == 2)
    digest = []
    if "test_accuracy" in values:
        text = "test accuracy %s" % values["test_accuracy"]
        if "reference_test_accuracy" in values:
            text += " (centralized solver: %s)" % values["reference_test_accuracy"]
        digest.append(text)
    if "rel_gap" in values:
        digest.append("relative gap to f* %s" % values["rel_gap"])
    if run.failure:
        # Not a result: the run failed, and the launcher's last line says how.
        if digest:
            print("at the average model when the run stopped: " + ", ".join(digest))
    elif reasons:
        print("result: INCOMPLETE: %s%s" % ("; ".join(reasons),
                                            " (at the average model: %s)" % ", ".join(digest)
                                            if digest else ""))
    elif digest:
        print("result: " + ", ".join(digest))
    return bool(reasons)


def summary_number(run, name):
    """Returns the number on the monitor's summary line `name VALUE`, or None."""
    lines = run.monitor_output.summary() if run.monitor_output else []
    for line in lines:
        words = line.split()
        if len(words) == 2 and words[0] == name:
            try:
                return float(words[1])
            except ValueError:
                return None
    return None


def evaluate_snapshots(run, argv):
    """Runs starling-probe evaluate (the dense curves, RUN_DIR/curves.jsonl); prints its lines."""
    if not os.path.isfile(os.path.join(run.run_dir, "snapshots-0.bin")):
        print("note: no dense curves: the daemons wrote no snapshots")
        return
    print("evaluating the nodes' model snapshots (starling-probe evaluate)...", flush=True)
    try:
        result = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, timeout=EVALUATE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        print("note: starling-probe evaluate took longer than %d s and was stopped; the plots "
              "use the monitor's metrics" % EVALUATE_TIMEOUT_S)
        return
    for line in result.stdout.decode("utf-8", "replace").splitlines():
        print("  " + line)
    if result.returncode != 0:
        print("note: starling-probe evaluate failed (exit %d): the plots use the monitor's "
              "metrics\n  command: %s" % (result.returncode, quote_command(argv)))


def make_plots(run_dir):
    """Runs plot_run.py with PLOT_PYTHON; prints a note instead if that is not possible."""
    if not os.path.isfile(PLOT_PYTHON):
        print("note: no plots: %s not found (plot_run.py needs Debian's python3 with "
              "python3-matplotlib)" % PLOT_PYTHON)
        return
    metrics = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.isfile(metrics) or os.path.getsize(metrics) == 0:
        print("note: no plots: the monitor wrote no metrics")
        return
    try:
        subprocess.run(plot_command(run_dir), stdin=subprocess.DEVNULL, timeout=PLOT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        print("note: plot_run.py took longer than %d s and was stopped" % PLOT_TIMEOUT_S)


def make_report(run_dir):
    """Runs run_report.py (standard library only) on the run folder; a failure is a note."""
    try:
        subprocess.run([sys.executable, REPORT_SCRIPT, run_dir], stdin=subprocess.DEVNULL,
                       timeout=REPORT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        print("note: no run report: %s" % e)


def prepare(args, forwarded):
    """Runs the checks and writes cluster.conf and command.txt; returns a Run ready to start."""
    shared, daemon_only, monitor_only = split_forwarded(forwarded)
    check_options(args)
    binaries = find_binaries(args.bin_dir)
    ipc_dir, temporary_ipc_dir = None, False
    if args.transport == "ipc":
        ipc_dir, temporary_ipc_dir = choose_ipc_dir(os.path.abspath(args.out), args.nodes)
        prepare_ipc_dir(ipc_dir, args.nodes)
    try:
        return prepare_files(args, binaries, shared, daemon_only, monitor_only, ipc_dir,
                             temporary_ipc_dir)
    except BaseException:
        if temporary_ipc_dir:
            shutil.rmtree(ipc_dir, ignore_errors=True)
        raise


def prepare_files(args, binaries, shared, daemon_only, monitor_only, ipc_dir, temporary_ipc_dir):
    """prepare()'s second half: the run folder, cluster.conf, command.txt; returns the Run."""
    endpoints = expected_endpoints(args.nodes, args.port, ipc_dir)
    if ipc_dir is None:
        check_ports(endpoints)
    run_dir = prepare_run_dir(args.out)
    cluster_path = os.path.join(run_dir, "cluster.conf")
    # Key files are never overwritten: an earlier run's keys go, each run gets fresh ones.
    shutil.rmtree(os.path.join(run_dir, "keys"), ignore_errors=True)
    cluster_argv = write_cluster_file(binaries["starling-probe"], args, cluster_path, ipc_dir)
    check_cluster_file(cluster_path, endpoints)
    monitor_argv = monitor_command(binaries["starling-probe"], run_dir, args, shared,
                                   monitor_only)
    daemon_argvs = [daemon_command(binaries["starlingd"], node, run_dir, args, shared,
                                   daemon_only) for node in range(args.nodes)]
    sections = ([("launcher", [sys.executable] + sys.argv), ("cluster file", cluster_argv),
                 ("monitor (output: monitor.log)", monitor_argv)]
                + [("node %d (output: node-%d.log)" % (k, k), a)
                   for k, a in enumerate(daemon_argvs)]
                + ([] if args.no_plots else [("plots", plot_command(run_dir))]))
    write_command_file(run_dir, sections)
    run = Run(run_dir, monitor_argv, daemon_argvs)
    run.probe, run.shared = binaries["starling-probe"], shared  # for starling-probe evaluate
    run.temporary_ipc_dir = ipc_dir if temporary_ipc_dir else None
    return run


def main(argv=None):
    """Entry point; returns the process exit code."""
    args, forwarded = parse_args(sys.argv[1:] if argv is None else argv)
    started = time.monotonic()
    signal.signal(signal.SIGTERM, raise_interrupted)
    signal.signal(signal.SIGHUP, raise_interrupted)
    if args.worker:
        import launch_workers  # examples/launch_workers.py
        return launch_workers.run(args, forwarded)
    try:
        run = prepare(args, forwarded)
    except SetupError as e:
        print("launch_local.py: error: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    except (KeyboardInterrupt, Interrupted):
        print("\ninterrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    try:
        code = execute(run, started + args.timeout_s)
    finally:
        if run.temporary_ipc_dir:  # every process is stopped by now
            shutil.rmtree(run.temporary_ipc_dir, ignore_errors=True)
    try:
        if print_summary(run) and code == EXIT_OK:
            code = EXIT_INCOMPLETE
        if code == EXIT_OK:
            print("run finished in %.1f s" % (time.monotonic() - started))
        if not args.no_snapshots and code in (EXIT_OK, EXIT_INCOMPLETE):
            evaluate_snapshots(run, evaluate_command(run.probe, run.run_dir, args, run.shared,
                                                     summary_number(run, "f_star")))
        if not args.no_plots and code != EXIT_INTERRUPTED:
            make_plots(run.run_dir)
        if code != EXIT_INTERRUPTED:
            make_report(run.run_dir)
    except (KeyboardInterrupt, Interrupted):
        print("\ninterrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    print("run folder: %s" % run.run_dir)
    last = failure_line(run, code)
    if last:
        print(last)
    return code


def failure_line(run, code):
    """The launcher's last line after a failure ("result: FAILED: node 2: killed by ..."), or None.

    After a failure the monitor's numbers are those of a run cut short: the last line names the
    failure, so that nobody reads them as the run's result.
    """
    if run.failure or code not in (EXIT_OK, EXIT_INTERRUPTED, EXIT_INCOMPLETE):
        return "result: FAILED: %s" % (run.failure or "launcher exit code %d" % code)
    return None


if __name__ == "__main__":
    sys.exit(main())
