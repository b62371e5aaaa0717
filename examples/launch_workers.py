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


def worker_env(args, run_dir, node):
    env = dict(os.environ)
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
    command = shlex.split(args.worker) + list(forwarded)
    if not command:
        raise ll.SetupError("--worker: an empty command")
    ll.write_command_file(run_dir, [("launcher", [sys.executable] + sys.argv),
                                    ("cluster file", cluster_argv),
                                    ("every worker (STARLING_ID=K, output: worker-K.log)",
                                     command)])
    return run_dir, command


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
        run_dir, command = prepare(args, forwarded)
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
                                                  env=worker_env(args, run_dir, node),
                                                  start_new_session=True))
                except OSError as e:
                    raise ll.StartError("cannot run %s: %s" % (command[0], e))
        print("started %d workers: %s" % (args.nodes, ll.quote_command(command)), flush=True)
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
