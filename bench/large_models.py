#!/usr/bin/env python3
"""Exchanges of large models between real starlingd processes.

    large_models.py [--dims 1000000,10000000] [--nodes 4] [--iterations 300,60]
                    [--compute-delay-ms 25] [--merge-pace R] [--before STARLINGD] [--reps 1]
                    [--keep]

N daemons on a ring (loopback, CURVE on as by default) run SwarmSGD (H = 1, batch 8) on a
synthetic least-squares problem with d features and a few sparse rows per node (a LIBSVM file
written here, `--features d`), so that nearly all the work is the exchanges of the d-vector and
the dense O(d) updates. Per d, one JSON line per run with, over the window in which all N nodes
were stepping (cluster_bench.steady_window):
  peak_rss_mb          the largest VmHWM of a daemon (sampled from /proc every 0.2 s and once
                       after the run's last step, while the daemons linger), also in model
                       copies (peak_rss_model_copies = VmHWM / 8d; the data are a few KB)
  exchanges_per_s      completed exchanges over the network (each counted by both sides)
  cpu_ms_per_exchange  the daemons' CPU time (all threads, CURVE included) per exchange
  minflt_per_exchange  minor page faults of the daemons per exchange, and in model sizes
                       (faulted_model_copies_per_exchange = faults x 4 KiB / 8d): a buffer of
                       the model's size that is allocated fresh and touched costs 8d / 4 KiB
                       faults, a reused one none, so this counts fresh multi-megabyte allocations
Then at the first d, SwarmSGD with --compute-delay-ms (simulated compute per local step, during
which the daemon keeps serving): blocked / compute per node over the same window
(cluster_bench.overhead_record: ratio, ratio_max, wait_ratio, cpu_share).

--before STARLINGD runs every configuration also with that binary (e.g. a build of the commit
before a fix), alternating with $STARLING_BUILD_DIR's, for an A/B in the same run; each line
says which ("binary": "before" or "after"). Every process started is stopped on exit; every wait
has a deadline. Progress notes and the load average go to stderr.
"""

import argparse
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_bench as cb  # noqa: E402

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
ROWS_PER_NODE = 32
NONZEROS_PER_ROW = 16


def write_problem(path, dim, rows, seed=1):
    """A least-squares problem in LIBSVM format: `rows` rows of NONZEROS_PER_ROW random features
    in 1..dim with standard normal values, labels from a sparse planted model plus noise."""
    rng = random.Random(seed)
    planted = {}
    with open(path, "w") as f:
        for _ in range(rows):
            idx = sorted(rng.sample(range(1, dim + 1), NONZEROS_PER_ROW))
            vals = [rng.gauss(0.0, 1.0) for _ in idx]
            for i in idx:
                planted.setdefault(i, rng.gauss(0.0, 1.0))
            label = sum(v * planted[i] for i, v in zip(idx, vals)) + rng.gauss(0.0, 0.1)
            f.write("%.6f %s\n" % (label, " ".join("%d:%.6f" % (i, v) for i, v in zip(idx, vals))))


def read_proc(pid):
    """(VmHWM MB, VmRSS MB, minor faults, CPU s) of a live process, or None once it is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            status = f.read()
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    kb = {}
    for line in status.splitlines():
        if line.startswith(("VmHWM:", "VmRSS:")):
            kb[line.split(":")[0]] = int(line.split()[1])
    if "VmHWM" not in kb:
        return None  # a zombie
    return (kb["VmHWM"] / 1024.0, kb["VmRSS"] / 1024.0, int(fields[7]),
            (int(fields[11]) + int(fields[12])) / cb.CLK_TCK)


class Sampler(threading.Thread):
    """Samples every daemon's /proc entries every `period` s until stopped:
    samples[i] = [(unix time, hwm, rss, minflt, cpu)]."""

    def __init__(self, procs, period=0.2):
        super().__init__(daemon=True)
        self.procs = dict(procs)
        self.period = period
        self.samples = {i: [] for i in self.procs}
        self.halt = threading.Event()

    def run(self):
        while not self.halt.is_set():
            for i, p in self.procs.items():
                if p.poll() is None:
                    s = read_proc(p.pid)
                    if s is not None:
                        self.samples[i].append((time.time(),) + s)
            self.halt.wait(self.period)

    def stop(self):
        self.halt.set()
        self.join(timeout=5)


def at(samples, t, column):
    """The sampled `column` (1 = hwm, 2 = rss, 3 = minflt, 4 = cpu) at time t, linearly
    interpolated between the samples around it."""
    before = [s for s in samples if s[0] <= t]
    after = [s for s in samples if s[0] >= t]
    if not before or not after:
        raise cb.BenchError("no /proc samples around t = %.2f" % t)
    a, b = before[-1], after[0]
    if b[0] == a[0]:
        return a[column]
    return a[column] + (b[column] - a[column]) * (t - a[0]) / (b[0] - a[0])


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def run_once(runs, bins, data, dim, args, iterations, compute_delay_ms, label, env=None):
    run_flags = ["--algorithm", "swarmsgd", "--iterations", str(iterations), "--batch", "8",
                 "--local-steps", "1", "--seed", "1", "--step", "0.01",
                 "--problem", "least-squares", "--l2", "1e-4", "--format", "libsvm",
                 "--features", str(dim), "--data", data]
    if args.merge_pace > 0:
        run_flags += ["--merge-pace", str(args.merge_pace)]
    daemon_flags = ["--telemetry-ms", str(args.telemetry_ms), "--linger-s", "3"]
    if compute_delay_ms > 0:
        daemon_flags += ["--compute-delay-ms", str(compute_delay_ms)]
    load0 = loadavg()
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        c = runs.cluster(bins, args.nodes, "ring", run_flags, daemon_flags)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    sampler = Sampler(c.procs)
    sampler.start()
    failure = None
    try:
        c.wait_up()
        c.wait_exit()
    except cb.BenchError as e:
        failure = str(e)
    finally:
        sampler.stop()
        c.stop()
    n = args.nodes
    rows = [c.metrics(i) for i in range(n)]
    if failure is not None:
        # A failed run (e.g. exchanges that never complete) is a result too: what was done.
        last = [r[-1] if r else {} for r in rows]
        return {"bench": "large", "binary": label, "dim": dim, "nodes": n,
                "local_steps": iterations, "compute_delay_ms": compute_delay_ms,
                "failed": failure.splitlines()[0][:200],
                "exchanges": int(sum(r.get("comm_rounds", 0) for r in last) / 2),
                "seconds": round(max((r.get("time", 0) for r in last), default=0), 1),
                "cpu_s": round(sum(r.get("cpu_s", 0) for r in last), 1),
                "peak_rss_mb": round(max((max((s[1] for s in sampler.samples[i]), default=0)
                                          for i in range(n)), default=0), 1),
                "load_before": load0, "load_after": loadavg()}
    start, end = cb.steady_window(rows, iterations)
    if end - start < 1.0:
        raise cb.BenchError("d = %d: the window in which all nodes ran is %.2f s; run more "
                            "--iterations (%s)" % (dim, end - start, c.run_dir))
    merges = sum(cb.window_delta(r, start, end, "comm_rounds") or 0 for r in rows)
    exchanges = merges / 2.0
    cpu = sum(cb.window_delta(r, start, end, "cpu_s") or 0.0 for r in rows)
    faults = sum(at(sampler.samples[i], end, 3) - at(sampler.samples[i], start, 3)
                 for i in range(n))
    peak = max(max(s[1] for s in sampler.samples[i]) for i in range(n))
    model_mb = 8.0 * dim / 2**20
    record = {"bench": "large", "binary": label, "dim": dim, "nodes": n,
              "local_steps": iterations, "compute_delay_ms": compute_delay_ms,
              "window_s": round(end - start, 2), "exchanges": int(exchanges),
              "exchanges_per_s": round(exchanges / (end - start), 3),
              "cpu_ms_per_exchange": round(1000 * cpu / max(exchanges, 1), 2),
              "minflt_per_exchange": round(faults / max(exchanges, 1), 1),
              "faulted_model_copies_per_exchange":
                  round(faults * PAGE_BYTES / max(exchanges, 1) / (8.0 * dim), 3),
              "peak_rss_mb": round(peak, 1),
              "peak_rss_model_copies": round(peak / model_mb, 2),
              "load_before": load0, "load_after": loadavg()}
    if compute_delay_ms > 0:
        args.batch = 8
        args.local_steps = 1
        args.compute_delay_ms = compute_delay_ms
        t7 = cb.overhead_record(args, n, "swarmsgd", iterations, rows, c.run_dir)
        for key in ("compute_ms_per_step", "cpu_share", "ratio", "ratio_max", "wait_ratio",
                    "wait_ratio_max", "ratio_whole_run", "startup_s"):
            if key in t7:
                record["blocked_over_compute" if key == "ratio" else
                       "blocked_over_compute_max" if key == "ratio_max" else key] = t7[key]
    return record


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dims", default="1000000,10000000", help="comma-separated dimensions")
    parser.add_argument("--nodes", type=int, default=4, help="daemons on a ring (default 4)")
    parser.add_argument("--iterations", default="300,60",
                        help="local steps per node, one per d (default 300,60)")
    parser.add_argument("--compute-delay-ms", type=float, default=25.0,
                        help="simulated compute per local step for the blocked/compute run at "
                             "the first d (default 25; 0 skips that run)")
    parser.add_argument("--compute-iterations", type=int, default=300,
                        help="local steps per node of the blocked/compute run (default 300)")
    parser.add_argument("--telemetry-ms", type=int, default=100,
                        help="the daemons' metrics period (default 100)")
    parser.add_argument("--merge-pace", type=float, default=0.0,
                        help="SwarmSGD's --merge-pace R for every run (default 0: off)")
    parser.add_argument("--before", help="a starlingd to compare with, alternating runs")
    parser.add_argument("--env", help="NAME=VALUE: also run the daemons with this variable set "
                             "(e.g. GLIBC_TUNABLES=...), as a third variant")
    parser.add_argument("--reps", type=int, default=1, help="runs of each configuration")
    parser.add_argument("--only", choices=["exchanges", "compute"],
                        help="only the exchange runs or only the blocked/compute run")
    parser.add_argument("--keep", action="store_true", help="keep the run folders")
    args = parser.parse_args()
    dims = [int(float(x)) for x in args.dims.split(",")]
    iters = [int(x) for x in args.iterations.split(",")]
    iters += [iters[-1]] * (len(dims) - len(iters))
    bins = cb.binaries()
    cb.need(bins["starlingd"], "starlingd")
    cb.need(bins["probe"], "starling-probe")
    variants = [("after", bins, {})]
    if args.before:
        cb.need(args.before, "the --before starlingd")
        variants.insert(0, ("before", dict(bins, starlingd=args.before), {}))
    if args.env:
        name, _, value = args.env.partition("=")
        variants.append(("after+" + args.env, bins, {name: value}))
    runs = cb.Runs(args.keep)
    try:
        data = {}
        for d in dims:
            data[d] = os.path.join(runs.root, "least-squares-%d.libsvm" % d)
            write_problem(data[d], d, ROWS_PER_NODE * args.nodes)
        for rep in range(args.reps):
            order = variants if rep % 2 == 0 else variants[::-1]
            if args.only != "compute":
                for d, it in zip(dims, iters):
                    for label, b, env in order:
                        cb.note("large: d = %d, %d daemons, %s, %d steps, load %s"
                                % (d, args.nodes, label, it, loadavg()))
                        cb.emit(run_once(runs, b, data[d], d, args, it, 0.0, label, env))
            if args.only != "exchanges" and args.compute_delay_ms > 0:
                for label, b, env in order:
                    cb.note("large: d = %d, %d daemons, %s, %.0f ms compute per step, load %s"
                            % (dims[0], args.nodes, label, args.compute_delay_ms, loadavg()))
                    cb.emit(run_once(runs, b, data[dims[0]], dims[0], args,
                                     args.compute_iterations, args.compute_delay_ms, label,
                                     env))
    except cb.BenchError as e:
        print("large: %s" % e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("large: interrupted", file=sys.stderr)
        return 130
    finally:
        runs.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
