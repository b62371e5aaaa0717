#!/usr/bin/env python3
"""Multi-process benchmarks: real starlingd processes on this machine.

    cluster_bench.py scale [--nodes 8,16,32,64] [--quick]
    cluster_bench.py overhead [--nodes 4,8,16]
    cluster_bench.py time-to-accuracy [--nodes 16]

Every benchmark prints JSON lines on stdout, each with a `ratio` against a reference measured in
the same run (absolute times on a shared machine drift):
  scale             per N: RSS per daemon, idle CPU per daemon, SwarmSGD exchanges/s, EXTRA step
                    time; ratio = value / value at the smallest N (growth with N); and at the
                    smallest N the same for d = 7840 (Fashion-MNIST multinomial) against d = 123
                    (a9a), ratio = value at d = 7840 / value at d = 123 (growth with d).
  overhead          SwarmSGD's time blocked on communication relative to its
                    compute time, per node, with a 5 ms simulated compute per local step, and
                    D-PSGD's (a synchronous round) for comparison; ratio = blocked / compute
                    over the window in which all N nodes were stepping (target < 0.1, flat in
                    N). ratio_whole_run: from each node's first step to its last; start-up skew
                    (waiting for the first neighbour to come up) is startup_s, and is added in
                    ratio_with_startup.
  time-to-accuracy  16 daemons of SwarmSGD on Fashion-MNIST multinomial until the monitor sees
                    the centralized test accuracy minus one point; ratio = time of one process
                    doing the same total number of plain SGD steps on the whole data
                    (starling-bench-sgd, steps only) / the daemons' time to the target on their
                    own clocks (the slowest node, from the end of its data loading).

Binaries come from $STARLING_BUILD_DIR (default ./build): node/starlingd, node/starling-probe,
bench/starling-bench-sgd. Runs go to a temporary folder (kept with --keep). Every process this
script starts is stopped on exit, error or Ctrl-C; every wait has a deadline. Progress notes go
to stderr. Python 3 standard library only.
"""

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SHARED_DATA = os.environ.get(
    "STARLING_SHARED_DATA",
    os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared",
                 "data"))
FMNIST = os.environ.get("STARLING_FMNIST_DIR", "/usr/share/datasets/fashion-mnist")
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024

STARTUP_DEADLINE_S = 180.0  # all daemons up (they each load and split the data)
RUN_DEADLINE_S = 600.0      # one configuration
STOP_GRACE_S = 5.0

A9A_OPTIONS = ["--problem", "logistic", "--l2", "1e-2", "--format", "libsvm"]


def note(message):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), message), file=sys.stderr, flush=True)


def emit(record):
    print(json.dumps(record, sort_keys=False), flush=True)


class BenchError(Exception):
    pass


def binaries():
    build = os.environ.get("STARLING_BUILD_DIR", "./build")
    paths = {
        "starlingd": os.path.join(build, "node", "starlingd"),
        "probe": os.path.join(build, "node", "starling-probe"),
        "sgd": os.path.join(build, "bench", "starling-bench-sgd"),
    }
    return paths


def need(path, what):
    if not os.access(path, os.X_OK):
        raise BenchError("%s not found at %s: build first (cmake --build BUILD --target %s)"
                         % (what, path, os.path.basename(path)))


def free_port_pair(hosts):
    """A port P with P and P+1 free on every loopback address in hosts (checked by binding)."""
    for _ in range(200):
        port = random.randrange(20000, 60000, 2)
        ok = True
        for host in hosts:
            for p in (port, port + 1):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                try:
                    s.bind((host, p))
                except OSError:
                    ok = False
                finally:
                    s.close()
                if not ok:
                    break
            if not ok:
                break
        if ok:
            return port
    raise BenchError("no free port pair found on the loopback addresses")


def proc_cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def proc_rss_mb(pid):
    with open("/proc/%d/statm" % pid) as f:
        return int(f.read().split()[1]) * PAGE_KB / 1024.0


def read_jsonl(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        row = json.loads(line)
                    except ValueError:
                        continue  # a line being written
                    if "iter" in row:  # not the header line (run id, labels, scaling)
                        rows.append(row)
    except FileNotFoundError:
        pass
    return rows


class Cluster:
    """N starlingd processes (CURVE on, as by default) from one cluster file."""

    def __init__(self, bins, run_dir, nodes, topology, run_options, daemon_options=(),
                 skip=()):
        self.bins = bins
        self.run_dir = run_dir
        self.nodes = nodes
        self.run_options = list(run_options)
        self.procs = {}
        self.logs = {}
        os.makedirs(run_dir, exist_ok=True)
        hosts = ["127.0.0.%d" % (i + 1) for i in range(nodes)]
        self.port = free_port_pair(hosts)
        self.cluster_file = os.path.join(run_dir, "cluster.conf")
        cmd = [bins["probe"], "cluster", "--nodes", str(nodes), "--topology", topology,
               "--port", str(self.port), "--out", self.cluster_file,
               "--keys", os.path.join(run_dir, "keys")]
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60)
        if r.returncode != 0:
            raise BenchError("starling-probe cluster failed: %s" % r.stdout.decode(errors="replace"))
        for i in range(nodes):
            if i in skip:
                continue
            log_path = os.path.join(run_dir, "node-%d.log" % i)
            self.logs[i] = log_path
            argv = ([bins["starlingd"], "--cluster", self.cluster_file, "--id", str(i)]
                    + self.run_options + list(daemon_options)
                    + ["--metrics", os.path.join(run_dir, "node-%d.jsonl" % i),
                       "--secret-key", os.path.join(run_dir, "keys", "node-%d.key" % i)])
            with open(log_path, "w") as log:
                self.procs[i] = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                                 stdout=log, stderr=subprocess.STDOUT)
        self.started = time.monotonic()

    def metrics(self, i):
        return read_jsonl(os.path.join(self.run_dir, "node-%d.jsonl" % i))

    def wait_up(self, deadline_s=STARTUP_DEADLINE_S):
        """Waits until every started daemon logged that it is up."""
        end = time.monotonic() + deadline_s
        pending = set(self.procs)
        while pending:
            for i in list(pending):
                if self.procs[i].poll() is not None:
                    raise BenchError("node %d exited with %d during start-up; log %s:\n%s"
                                     % (i, self.procs[i].returncode, self.logs[i], self.tail(i)))
                with open(self.logs[i], errors="replace") as f:
                    if " up: " in f.read():
                        pending.discard(i)
            if time.monotonic() > end:
                raise BenchError("%d daemon(s) not up after %.0f s: %s"
                                 % (len(pending), deadline_s, sorted(pending)[:10]))
            time.sleep(0.2)

    def wait_exit(self, deadline_s=RUN_DEADLINE_S):
        end = time.monotonic() + deadline_s
        while any(p.poll() is None for p in self.procs.values()):
            if time.monotonic() > end:
                raise BenchError("daemons still running after %.0f s (see %s)"
                                 % (deadline_s, self.run_dir))
            time.sleep(0.1)
        bad = {i: p.returncode for i, p in self.procs.items() if p.returncode != 0}
        if bad:
            i = sorted(bad)[0]
            raise BenchError("daemon(s) failed %s; node %d's log:\n%s" % (bad, i, self.tail(i)))

    def tail(self, i, lines=8):
        try:
            with open(self.logs[i], errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def stop(self):
        live = [p for p in self.procs.values() if p.poll() is None]
        for p in live:
            p.send_signal(signal.SIGTERM)
        end = time.monotonic() + STOP_GRACE_S
        for p in live:
            try:
                p.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)


class Runs:
    """Temporary run folders and every cluster started, stopped on exit."""

    def __init__(self, keep):
        self.root = tempfile.mkdtemp(prefix="starling-bench-")
        self.keep = keep
        self.clusters = []
        self.serial = 0

    def cluster(self, *args, **kwargs):
        self.serial += 1
        c = Cluster(args[0], os.path.join(self.root, "run%d" % self.serial), *args[1:], **kwargs)
        self.clusters.append(c)
        return c

    def close(self):
        for c in self.clusters:
            c.stop()
        if self.keep:
            note("run folders kept in %s" % self.root)
        else:
            shutil.rmtree(self.root, ignore_errors=True)


def active_rate(rows, iterations, key):
    """(change of `key`, seconds) between the node's first metrics line with key > 0 and the line
    at which it had done its iterations: the steady part of the run, without start-up (loading,
    handshakes) and lingering. Node clocks differ, so rates are per node."""
    first = next((r for r in rows if r.get(key, 0) > 0), None)
    last = finish_row(rows, iterations)
    if first is None or last is None or last["time"] <= first["time"]:
        return None
    return last[key] - first[key], last["time"] - first["time"]


def finish_row(rows, iterations):
    """The first metrics line at which the node had done its iterations (else the last)."""
    for r in rows:
        if r.get("iter", 0) >= iterations:
            return r
    return rows[-1] if rows else None


def problem_options(d):
    if d == 123:
        return A9A_OPTIONS + ["--data", os.path.join(SHARED_DATA, "a9a")]
    if d == 7840:
        return ["--problem", "multinomial", "--l2", "1e-4", "--format", "idx",
                "--data", os.path.join(FMNIST, "train-images-idx3-ubyte.gz")]
    raise BenchError("no data set for d = %d" % d)


def check_data(d):
    path = problem_options(d)[-1]
    if not os.path.exists(path):
        raise BenchError("data for d = %d missing: %s (set STARLING_SHARED_DATA or "
                         "STARLING_FMNIST_DIR)" % (d, path))


# ------------------------------------------------------------------------------------------
# scale

def measure_idle(runs, bins, n, d, window_s):
    """N-1 daemons of EXTRA whose node 0 never starts: everybody waits (polls, heartbeats,
    RESENDs). Returns (mean RSS MB, mean CPU % of one core) per daemon over the window."""
    c = runs.cluster(bins, n, "ring",
                     ["--algorithm", "extra", "--iterations", "1000000", "--seed", "1"]
                     + problem_options(d), ["--telemetry-ms", "1000"], skip=(0,))
    try:
        c.wait_up()
        time.sleep(2.0)  # handshakes and first RESENDs settle
        pids = [p.pid for p in c.procs.values()]
        cpu0 = [proc_cpu_seconds(pid) for pid in pids]
        t0 = time.monotonic()
        time.sleep(window_s)
        cpu1 = [proc_cpu_seconds(pid) for pid in pids]
        elapsed = time.monotonic() - t0
        rss = [proc_rss_mb(pid) for pid in pids]
    finally:
        c.stop()
    cpu_pct = [100.0 * (b - a) / elapsed for a, b in zip(cpu0, cpu1)]
    return sum(rss) / len(rss), sum(cpu_pct) / len(cpu_pct), max(rss)


def measure_swarm(runs, bins, n, d, iterations):
    """SwarmSGD for `iterations` local steps per node; returns exchanges/s over the network."""
    c = runs.cluster(bins, n, "ring",
                     ["--algorithm", "swarmsgd", "--iterations", str(iterations), "--batch", "8",
                      "--seed", "1", "--step", "0.05"] + problem_options(d),
                     ["--telemetry-ms", "100", "--linger-s", "5"])
    try:
        c.wait_up()
        c.wait_exit()
    finally:
        c.stop()
    rate = 0.0
    for i in range(n):
        r = active_rate(c.metrics(i), iterations, "comm_rounds")
        if r is None:
            raise BenchError("node %d: too few metrics lines (%s)" % (i, c.run_dir))
        rate += r[0] / r[1] / 2.0  # each exchange is counted by both sides
    return rate, None


def measure_extra(runs, bins, n, d, iterations):
    """EXTRA for `iterations` rounds; returns the mean over nodes of a round's wall time."""
    c = runs.cluster(bins, n, "ring",
                     ["--algorithm", "extra", "--iterations", str(iterations), "--seed", "1"]
                     + problem_options(d), ["--telemetry-ms", "100", "--linger-s", "5"])
    try:
        c.wait_up()
        c.wait_exit()
    finally:
        c.stop()
    per_round = []
    for i in range(n):
        r = active_rate(c.metrics(i), iterations, "iter")
        if r is None:
            raise BenchError("node %d: too few metrics lines (%s)" % (i, c.run_dir))
        per_round.append(r[1] / r[0])
    return sum(per_round) / n


def run_scale(args, runs, bins):
    need(bins["starlingd"], "starlingd")
    need(bins["probe"], "starling-probe")
    check_data(123)
    sizes = [int(x) for x in args.nodes.split(",")] if args.nodes else [8, 16, 32, 64]
    swarm_iters = 300 if args.quick else 1000
    extra_iters = 100 if args.quick else 300
    window = 2.0 if args.quick else 4.0
    base = {}

    def report(metric, n, d, value, unit, against):
        key = (metric, against)
        if key not in base:
            base[key] = value
        emit({"bench": "scale", "metric": metric, "nodes": n, "dim": d, "value": round(value, 6),
              "unit": unit, "ratio": round(value / base[key], 3) if base[key] else None,
              "reference": against})

    for n in sizes:
        note("scale: %d daemons, idle (node 0 absent)" % n)
        rss, cpu, rss_max = measure_idle(runs, bins, n, 123, window)
        report("rss_mb_per_daemon", n, 123, rss, "MB", "nodes=%d" % sizes[0])
        report("idle_cpu_pct_per_daemon", n, 123, cpu, "% of one core", "nodes=%d" % sizes[0])
        note("scale: %d daemons, SwarmSGD %d local steps each" % (n, swarm_iters))
        rate, secs = measure_swarm(runs, bins, n, 123, swarm_iters)
        report("swarmsgd_exchanges_per_s", n, 123, rate, "exchanges/s (whole network)",
               "nodes=%d" % sizes[0])
        note("scale: %d daemons, EXTRA %d rounds" % (n, extra_iters))
        step = measure_extra(runs, bins, n, 123, extra_iters)
        report("extra_step_ms", n, 123, 1000 * step, "ms per round", "nodes=%d" % sizes[0])
    if args.skip_dim:
        return
    if not os.path.exists(problem_options(7840)[-1]):
        note("scale: Fashion-MNIST missing, growth with d skipped")
        return
    n = sizes[0]
    for d in (123, 7840):
        note("scale: %d daemons, d = %d" % (n, d))
        rss, cpu, _ = measure_idle(runs, bins, n, d, window)
        report("rss_mb_per_daemon", n, d, rss, "MB", "dim=123")
        report("idle_cpu_pct_per_daemon", n, d, cpu, "% of one core", "dim=123")
        rate, _ = measure_swarm(runs, bins, n, d, swarm_iters)
        report("swarmsgd_exchanges_per_s", n, d, rate, "exchanges/s (whole network)", "dim=123")
        step = measure_extra(runs, bins, n, d, extra_iters)
        report("extra_step_ms", n, d, 1000 * step, "ms per round", "dim=123")


# ------------------------------------------------------------------------------------------
# overhead (docs/results/overhead.md)

def steady_window(node_rows, iterations):
    """(start, end) in Unix time of the part of the run in which every node was stepping: after
    the last node's first local step, before the first node's finish. Start-up (daemons come up
    seconds apart while each loads its data, and compete for the cores meanwhile) and wind-down
    (finished nodes stop serving) are not N nodes running together."""
    starts, ends = [], []
    for i, rows in enumerate(node_rows):
        first = next((r for r in rows if r.get("iter", 0) > 0), None)
        last = finish_row(rows, iterations)
        if first is None or last is None or "unix_time" not in first:
            raise BenchError("node %d: no metrics lines with steps and unix_time" % i)
        starts.append(first["unix_time"])
        ends.append(last["unix_time"])
    return max(starts), min(ends)


def window_delta(rows, start, end, key):
    """Change of `key` between the node's first metrics line at or after `start` and its last
    one at or before `end` (None if the window holds fewer than two lines)."""
    inside = [r for r in rows if start <= r["unix_time"] <= end]
    if len(inside) < 2:
        return None
    return inside[-1].get(key, 0.0) - inside[0].get(key, 0.0)


def run_overhead(args, runs, bins):
    need(bins["starlingd"], "starlingd")
    need(bins["probe"], "starling-probe")
    check_data(7840)
    sizes = [int(x) for x in args.nodes.split(",")] if args.nodes else [4, 8, 16]
    algorithms = args.algorithms.split(",")
    iterations = args.iterations
    for n in sizes:
        for algorithm in algorithms:
            note("overhead: %d daemons, %s, batch %d, %d steps each, %.1f ms compute per step"
                 % (n, algorithm, args.batch, iterations, args.compute_delay_ms))
            run_flags = ["--algorithm", algorithm, "--iterations", str(iterations),
                         "--batch", str(args.batch), "--seed", "1", "--step", "0.1"]
            if algorithm == "swarmsgd":
                run_flags += ["--local-steps", str(args.local_steps)]
            c = runs.cluster(bins, n, "ring", run_flags + problem_options(7840),
                             ["--telemetry-ms", "100", "--linger-s", "5",
                              "--compute-delay-ms", str(args.compute_delay_ms)])
            try:
                c.wait_up()
                c.wait_exit()
            finally:
                c.stop()
            emit(overhead_record(args, n, algorithm, iterations,
                                 [c.metrics(i) for i in range(n)], c.run_dir))


def overhead_record(args, n, algorithm, iterations, node_rows, run_dir):
    """The overhead figures for one run from the nodes' metrics lines (cumulative compute_s,
    blocked_s, wait_s and startup_s, every 100 ms)."""
    start, end = steady_window(node_rows, iterations)
    if end - start < 1.0:
        raise BenchError("%s, %d nodes: the window in which all nodes ran is %.2f s; run more "
                         "--iterations (%s)" % (algorithm, n, end - start, run_dir))
    ratios, waits, whole, with_startup, startups = [], [], [], [], []
    compute_total, cpu_total = 0.0, 0.0
    for i, rows in enumerate(node_rows):
        cpu_total += window_delta(rows, start, end, "cpu_s") or 0.0
        compute = window_delta(rows, start, end, "compute_s")
        blocked = window_delta(rows, start, end, "blocked_s")
        if not compute or blocked is None:
            raise BenchError("node %d: no metrics inside the common window (%s)" % (i, run_dir))
        ratios.append(blocked / compute)
        if "wait_s" in rows[-1] and algorithm == "swarmsgd":
            waits.append(window_delta(rows, start, end, "wait_s") / compute)
        row = finish_row(rows, iterations)
        run_compute = max(row["compute_s"], 1e-9)
        compute_total += run_compute
        whole.append(row["blocked_s"] / run_compute)
        startup = row.get("startup_s", 0.0)
        startups.append(startup)
        with_startup.append((row["blocked_s"] + startup) / run_compute)
    record = {"bench": "overhead", "algorithm": algorithm, "nodes": n, "batch": args.batch,
              "local_steps": iterations, "compute_delay_ms": args.compute_delay_ms,
              "compute_ms_per_step": round(1000 * compute_total / n / iterations, 3),
              "window_s": round(end - start, 2),
              # The daemons' CPU time (all threads) over the window, as a share of all cores:
              # near 1, the machine, not the protocol, sets how promptly a node is served.
              "cpu_share": round(cpu_total / (end - start) / (os.cpu_count() or 1), 3),
              "ratio": round(sum(ratios) / n, 4), "ratio_max": round(max(ratios), 4)}
    if algorithm == "swarmsgd":
        record["H"] = args.local_steps
    if waits:
        record["wait_ratio"] = round(sum(waits) / n, 4)
        record["wait_ratio_max"] = round(max(waits), 4)
    record["ratio_whole_run"] = round(sum(whole) / n, 4)
    record["ratio_whole_run_max"] = round(max(whole), 4)
    record["startup_s"] = round(sum(startups) / n, 3)
    record["startup_s_max"] = round(max(startups), 3)
    record["ratio_with_startup"] = round(sum(with_startup) / n, 4)
    record["ratio_with_startup_max"] = round(max(with_startup), 4)
    return record


# ------------------------------------------------------------------------------------------
# time to accuracy

def run_time_to_accuracy(args, runs, bins):
    need(bins["starlingd"], "starlingd")
    need(bins["probe"], "starling-probe")
    need(bins["sgd"], "starling-bench-sgd")
    check_data(7840)
    n = int(args.nodes) if args.nodes else 16
    target = args.target
    train = os.path.join(FMNIST, "train-images-idx3-ubyte.gz")
    test = os.path.join(FMNIST, "t10k-images-idx3-ubyte.gz")
    shared = ["--algorithm", "swarmsgd", "--problem", "multinomial", "--l2", "1e-4",
              "--format", "idx", "--data", train, "--test-data", test,
              "--partition", args.partition, "--batch", str(args.batch), "--local-steps", "1",
              "--step", str(args.step), "--iterations", str(args.iterations), "--seed", "1"]
    c = runs.cluster(bins, n, "torus", shared, ["--telemetry-ms", "250", "--linger-s", "5"])
    monitor_metrics = os.path.join(c.run_dir, "monitor.jsonl")
    monitor_log = os.path.join(c.run_dir, "monitor.log")
    with open(monitor_log, "w") as log:
        monitor = subprocess.Popen(
            [bins["probe"], "monitor", "--cluster", c.cluster_file] + shared
            + ["--secret-key", os.path.join(c.run_dir, "keys", "probe.key"),
               "--interval-ms", "1000", "--timeout-s", str(int(RUN_DEADLINE_S)),
               "--metrics", monitor_metrics], stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT)
    try:
        c.wait_up()
        up_at = time.monotonic()
        note("time-to-accuracy: %d daemons up; waiting for test accuracy %.4f" % (n, target))
        reached = None
        end = time.monotonic() + RUN_DEADLINE_S
        while reached is None and time.monotonic() < end:
            for row in read_jsonl(monitor_metrics):
                if row.get("test_accuracy", 0) >= target:
                    reached = row
                    break
            if reached is None and all(p.poll() is not None for p in c.procs.values()):
                time.sleep(3)  # the monitor's last report
                for row in read_jsonl(monitor_metrics):
                    if row.get("test_accuracy", 0) >= target:
                        reached = row
                        break
                break
            time.sleep(0.5)
        best = max((r.get("test_accuracy", 0) for r in read_jsonl(monitor_metrics)), default=0)
    finally:
        c.stop()
        if monitor.poll() is None:
            monitor.send_signal(signal.SIGTERM)
            try:
                monitor.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                monitor.kill()
    if reached is None:
        emit({"bench": "time-to-accuracy", "nodes": n, "target": target, "reached": False,
              "best_test_accuracy": best, "ratio": None})
        return
    # The monitor's clock starts when it is ready, not with the daemons: time the training on the
    # daemons' own clocks (each starts once its data is loaded), at the step count the monitor saw.
    wall = reached["time"]
    training = 0.0
    for i in range(n):
        row = finish_row(c.metrics(i), int(reached["iter"]))
        if row is None:
            raise BenchError("node %d wrote no metrics (%s)" % (i, c.run_dir))
        training = max(training, row["time"])
    total_steps = int(reached["iter"]) * n  # iter is the slowest node's local steps
    note("time-to-accuracy: reached %.4f at monitor t = %.1f s, %d local steps per node"
         % (reached["test_accuracy"], wall, reached["iter"]))
    r = subprocess.run([bins["sgd"], "--data", train, "--test-data", test,
                        "--batch", str(args.batch), "--step", str(args.step),
                        "--steps", str(total_steps), "--target", str(target)],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=RUN_DEADLINE_S)
    if r.returncode != 0:
        raise BenchError("starling-bench-sgd failed: %s" % r.stderr.decode(errors="replace"))
    sgd = json.loads(r.stdout.decode().strip().splitlines()[-1])
    emit({"bench": "time-to-accuracy", "nodes": n, "partition": args.partition,
          "batch": args.batch, "step": args.step, "target": target, "reached": True,
          "test_accuracy": reached["test_accuracy"], "monitor_time_s": round(wall, 2),
          "daemons_startup_s": round(up_at - c.started, 2),
          "daemons_training_s": round(training, 2),
          "total_local_steps": total_steps,
          "sgd_wall_s": sgd["seconds"], "sgd_test_accuracy": sgd["test_accuracy"],
          "sgd_seconds_to_target": sgd.get("seconds_to_target"),
          "sgd_load_s": sgd.get("load_seconds"),
          # Both sides without loading the data.
          "ratio": round(sgd["seconds"] / max(1e-9, training), 3)})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="bench")
    p = sub.add_parser("scale", help="8-64 daemons: memory, idle CPU, exchanges/s, step time")
    p.add_argument("--nodes", help="comma-separated sizes (default 8,16,32,64)")
    p.add_argument("--quick", action="store_true", help="shorter runs")
    p.add_argument("--skip-dim", action="store_true", help="skip the growth with d")
    p = sub.add_parser("overhead", help="SwarmSGD (and D-PSGD) blocked/compute time per node")
    p.add_argument("--nodes", help="comma-separated sizes (default 4,8,16)")
    p.add_argument("--algorithms", default="swarmsgd,dpsgd",
                   help="comma-separated; D-PSGD is the synchronous comparison "
                        "(default swarmsgd,dpsgd)")
    p.add_argument("--batch", type=int, default=32, help="mini-batch (default 32)")
    p.add_argument("--iterations", type=int, default=1000,
                   help="local steps (rounds for D-PSGD) per node (default 1000)")
    p.add_argument("--local-steps", type=int, default=1,
                   help="H: local steps between the exchanges a node initiates (default 1)")
    p.add_argument("--compute-delay-ms", type=float, default=5.0,
                   help="simulated compute per local step or round (default 5), "
                        "during which the daemon keeps serving its neighbours")
    p = sub.add_parser("time-to-accuracy", help="16 daemons vs one process of plain SGD")
    p.add_argument("--nodes", help="number of daemons (default 16)")
    p.add_argument("--target", type=float, default=0.8344,
                   help="test accuracy to reach (centralized 0.8444 minus 1 point)")
    p.add_argument("--partition", default="iid")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--step", type=float, default=0.1)
    p.add_argument("--iterations", type=int, default=20000,
                   help="local steps per node at most")
    for name, sp in sub.choices.items():
        sp.add_argument("--keep", action="store_true", help="keep the run folders")
    args = parser.parse_args()
    if args.bench is None:
        parser.print_usage(sys.stderr)
        return 2
    bins = binaries()
    runs = Runs(args.keep)
    stop = {"signal": None}

    def on_signal(signum, _frame):
        stop["signal"] = signum
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, on_signal)
    try:
        {"scale": run_scale, "overhead": run_overhead,
         "time-to-accuracy": run_time_to_accuracy}[args.bench](args, runs, bins)
    except BenchError as e:
        print("%s: %s" % (args.bench, e), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("%s: interrupted" % args.bench, file=sys.stderr)
        return 130
    finally:
        runs.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
