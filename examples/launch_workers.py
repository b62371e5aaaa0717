"""launch_local.py --worker CMD: N training processes of your own instead of N starlingd.

Each worker is a program that embeds a Starling node through libstarling (python/starling:
starling.Node, starling.torch.DecentralizedOptimizer). The launcher writes the cluster file
with fresh CURVE keys (starling-probe cluster), as for daemons, and starts worker K as

    CMD [forwarded options...]

with STARLING_CLUSTER, STARLING_ID, STARLING_SECRET_KEY, STARLING_NODES, STARLING_SEED and
STARLING_RUN_DIR in its environment (starling.launch_options() reads them), its output in
RUN_DIR/worker-K.log and, when run from a checkout, PYTHONPATH extended with the source tree's
python/ and STARLING_LIBRARY pointing at the build tree's libstarling.so (an installed package
finds its own library). On a LAN the same worker runs on each host with
--cluster, --id and --secret-key given by hand (or the same variables).

--partition SPEC (iid, label, dirichlet:ALPHA, column:K) is the launcher's, not CMD's: it sets
STARLING_PARTITION, and starling.shard(data) in a worker then gives it the rows of `data` that a
starlingd of a run with the same --nodes, --seed and --partition would train on (non-i.i.d.
splits included). Without it STARLING_PARTITION is unset and starling.shard uses starlingd's
default (iid).

It stops every worker (SIGTERM, then SIGKILL) when one fails, on Ctrl-C and at --timeout-s.
Python 3 standard library only.
"""
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

import launch_local as ll

LIBRARY = os.path.join(ll.REPO_DIR, "build", "capi", "libstarling.so")
PYTHON_DIR = os.path.join(ll.REPO_DIR, "python")


def take_partition(forwarded):
    """(the --partition value or None, the other tokens): --partition is the launcher's in worker
    mode (STARLING_PARTITION), so CMD never sees it. Raises SetupError for a missing value."""
    rest, partition = [], None
    i = 0
    while i < len(forwarded):
        token = forwarded[i]
        if token == "--partition":
            if i + 1 >= len(forwarded) or forwarded[i + 1].startswith("--"):
                raise ll.SetupError("--partition needs a value: iid, label, dirichlet:ALPHA or "
                                    "column:K")
            partition = forwarded[i + 1]
            i += 2
            continue
        if token.startswith("--partition="):
            partition = token.split("=", 1)[1]
            if not partition:
                raise ll.SetupError("--partition needs a value: iid, label, dirichlet:ALPHA or "
                                    "column:K")
        else:
            rest.append(token)
        i += 1
    return partition, rest


def worker_env(args, run_dir, node, partition=None):
    env = dict(os.environ)
    env.pop("STARLING_PARTITION", None)  # only the launcher's --partition, never an old one
    if partition is not None:
        env["STARLING_PARTITION"] = partition
    env.update({
        "STARLING_CLUSTER": os.path.join(run_dir, "cluster.conf"),
        "STARLING_ID": str(node),
        "STARLING_SECRET_KEY": os.path.join(run_dir, "keys", "node-%d.key" % node),
        "STARLING_NODES": str(args.nodes),
        "STARLING_SEED": str(args.seed),
        "STARLING_RUN_DIR": run_dir,
    })
    if "STARLING_LIBRARY" not in env and os.path.isfile(LIBRARY):
        env["STARLING_LIBRARY"] = LIBRARY
    if os.path.isdir(PYTHON_DIR):  # a checkout; an installed package is on sys.path already
        env["PYTHONPATH"] = PYTHON_DIR + (os.pathsep + env["PYTHONPATH"]
                                          if env.get("PYTHONPATH") else "")
    return env


def prepare(args, forwarded):
    ll.check_options(args)
    probe = ll.find_binaries(args.bin_dir)["starling-probe"]
    endpoints = ll.expected_endpoints(args.nodes, args.port)
    ll.check_ports(endpoints)
    run_dir = ll.prepare_run_dir(args.out)
    shutil.rmtree(os.path.join(run_dir, "keys"), ignore_errors=True)
    cluster_path = os.path.join(run_dir, "cluster.conf")
    cluster_argv = ll.write_cluster_file(probe, args, cluster_path)
    ll.check_cluster_file(cluster_path, endpoints)
    partition, forwarded = take_partition(list(forwarded))
    command = shlex.split(args.worker) + forwarded
    if not command:
        raise ll.SetupError("--worker: an empty command")
    every = "every worker (STARLING_ID=K%s, output: worker-K.log)" % (
        "" if partition is None else ", STARLING_PARTITION=" + partition)
    ll.write_command_file(run_dir, [("launcher", [sys.executable] + sys.argv),
                                    ("cluster file", cluster_argv), (every, command)])
    return run_dir, command, partition


def supervise(procs, logs, deadline):
    """Waits for every worker; returns the launcher's exit code."""
    while True:
        codes = [p.poll() for p in procs]
        failed = [k for k, c in enumerate(codes) if c not in (None, 0)]
        if failed:
            k = failed[0]
            print("FAILED: worker %d exited with %d; stopping the others. Last lines of %s:\n%s"
                  % (k, codes[k], logs[k], "\n".join(ll.tail(logs[k], ll.LOG_TAIL_LINES))),
                  file=sys.stderr)
            return ll.EXIT_FAILED
        if all(c == 0 for c in codes):
            return ll.EXIT_OK
        if time.monotonic() >= deadline:
            print("TIMEOUT: --timeout-s passed with %d worker(s) still running"
                  % sum(c is None for c in codes), file=sys.stderr)
            return ll.EXIT_TIMEOUT
        time.sleep(ll.POLL_S)


def interrupted(signum, _frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


def run(args, forwarded):
    started = time.monotonic()
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGHUP, interrupted)
    try:
        run_dir, command, partition = prepare(args, forwarded)
    except ll.SetupError as e:
        print("launch_local.py: error: %s" % e, file=sys.stderr)
        return ll.EXIT_USAGE
    procs, logs = [], []
    code = ll.EXIT_FAILED
    try:
        for node in range(args.nodes):
            logs.append(os.path.join(run_dir, "worker-%d.log" % node))
            with open(logs[-1], "w") as log:
                try:
                    procs.append(subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                                  stderr=subprocess.STDOUT,
                                                  env=worker_env(args, run_dir, node,
                                                                 partition),
                                                  start_new_session=True))
                except OSError as e:
                    raise ll.StartError("cannot run %s: %s" % (command[0], e))
        print("started %d workers: %s%s" % (
            args.nodes, ll.quote_command(command),
            "" if partition is None else " (--partition %s: starling.shard)" % partition),
            flush=True)
        code = supervise(procs, logs, started + args.timeout_s)
    except KeyboardInterrupt:
        print("\ninterrupted: stopping every worker", file=sys.stderr)
        code = ll.EXIT_INTERRUPTED
    except ll.StartError as e:
        print("FAILED: %s" % e, file=sys.stderr)
    finally:
        killed = ll.stop_processes(procs)
        if killed:
            print("note: %d worker(s) ignored SIGTERM and were killed" % killed)
    for k, path in enumerate(logs):
        print("worker %d: %s" % (k, " ".join(ll.tail(path, 1))))
    if code == ll.EXIT_OK:
        print("run finished in %.1f s" % (time.monotonic() - started))
    print("run folder: %s" % run_dir)
    return code
