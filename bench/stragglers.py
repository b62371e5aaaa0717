#!/usr/bin/python3
"""T11 (ASYNC.md): what one straggler costs, in real starlingd processes on this machine.

    bench/run.sh stragglers [--nodes 8] [--factors 1,2,4,8] [--methods extra,gradient-tracking,asy-sonata]
                            [--problem a9a|optra] [--slow-id 0] [--gaps 1e-4,1e-8] [--keep]

For each node count, method and factor k, one run of N daemons in which node --slow-id takes k
times as long for each local step or round (--slow-node ID:k, node/config/slow_nodes.h: it
serves its neighbours for (k - 1) x its measured step time after each step). Each daemon writes
model snapshots (--snapshots); afterwards the network's state at wall time t is the average of
every node's latest snapshot at t (on the common wall clock, whatever step each node is at: a
straggler's neighbours do not wait for it in an asynchronous method, and the time axis must show
that), and the relative gap (F(avg) - F*) / F* is evaluated here with numpy on the whole data. The
time to a gap is counted from the moment the last node took its first snapshot (all up).

F* comes from the project's reference solver (starling-sim --reference-optimum auto, cached),
and is checked against a Newton solve here (printed; they must agree to 1e-10 relatively). A
method that does not reach a gap within its run is reported as "not reached" with its final gap.

Output: one JSON line per run on stdout (method, nodes, k, seconds to each gap or null, final
gap, run seconds), then a table and the ratios time(k=4)/time(k=1) per method on stderr.
Methods are names of --algorithm (any round-based or pairwise method; pairwise ones get
--progress-window 0, so that no node waits for the straggler's step count). Run with numpy's
Python (/usr/bin/python3).
"""

import argparse
import json
import os
import struct
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_bench as cb  # noqa: E402  (Cluster, Runs, note, emit, BenchError)

PAIRWISE = {"swarmsgd", "asy-sonata", "async-admm", "acid"}
# Local steps (pairwise) or iterations (round-based) per run: enough for 1e-8 on a9a, lambda
# 1e-2, 8-16 nodes at k = 1 (measured in the simulator; a run that ends short says so).
DEFAULT_ITERATIONS = {"extra": 1500, "gradient-tracking": 2000, "asy-sonata": 6000}


def read_snapshots(path):
    """[(unix_time, step, model)] of one node's snapshots file (node/report/snapshot_file.h)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"STSNAP01":
        raise cb.BenchError("%s: not a snapshots file" % path)
    _version, node, dim = struct.unpack_from("<IiI", data, 8)
    records = []
    off = 48
    size = 56 + 8 * dim
    while off + size <= len(data):
        magic, flags, step, _rounds, unix_time, _elapsed = struct.unpack_from("<IIqqdd", data, off)
        if magic != 0x50414E53 and magic != 0x534E4150:
            raise cb.BenchError("%s: bad record at byte %d" % (path, off))
        model = np.frombuffer(data, dtype=np.float64, count=dim, offset=off + 56).copy()
        records.append((unix_time, step, bool(flags & 1), model))
        off += size
    return node, records


def read_libsvm(path, features):
    rows, labels = [], []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            labels.append(float(parts[0]))
            rows.append([(int(k) - 1, float(v)) for k, v in (p.split(":") for p in parts[1:])])
    a = np.zeros((len(rows), features))
    for r, entries in enumerate(rows):
        for k, v in entries:
            a[r, k] = v
    return a, np.array(labels)


class Objective:
    """F(x) of the whole data, as the project's problems define it (mean loss + l2/2 |x|^2)."""

    def __init__(self, problem, a, b, l2):
        self.problem, self.a, self.b, self.l2 = problem, a, b, l2
        if problem == "logistic":
            self.b = np.where(b > 0, 1.0, -1.0)

    def __call__(self, x):
        u = self.a @ x
        if self.problem == "logistic":
            loss = np.mean(np.logaddexp(0.0, -self.b * u))
        else:
            loss = 0.5 * np.mean((u - self.b) ** 2)
        return loss + 0.5 * self.l2 * x.dot(x)

    def newton(self):
        m, d = self.a.shape
        x = np.zeros(d)
        for _ in range(100):
            if self.problem == "logistic":
                s = 1.0 / (1.0 + np.exp(self.b * (self.a @ x)))
                g = -(self.a.T @ (self.b * s)) / m + self.l2 * x
                w = s * (1 - s)
                h = (self.a.T * w) @ self.a / m + self.l2 * np.eye(d)
            else:
                g = self.a.T @ (self.a @ x - self.b) / m + self.l2 * x
                h = self.a.T @ self.a / m + self.l2 * np.eye(d)
            x = x - np.linalg.solve(h, g)
            if np.linalg.norm(g) < 1e-13:
                break
        return x


def reference_f_star(bins_dir, run_options):
    """f* from the project's reference solver (starling-sim, 0 iterations, --reference-optimum
    auto: the solve, or its cache)."""
    sim = os.path.join(bins_dir, "node", "starling-sim")
    cb.need(sim, "starling-sim")
    r = subprocess.run([sim] + run_options + ["--iterations", "0", "--reference-optimum", "auto"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=600)
    text = r.stdout.decode(errors="replace")
    for line in text.splitlines():
        for token in ("f* = ", "f_star ", "f* "):
            at = line.find(token)
            if at >= 0:
                try:
                    return float(line[at + len(token):].split()[0].rstrip(",;)"))
                except ValueError:
                    pass
    raise cb.BenchError("no f* in starling-sim's output:\n" + text[-2000:])


def gap_curve(run_dir, nodes, objective, f_star):
    """[(seconds since all were up, rel gap)] of the average of the nodes' latest snapshots."""
    events = []
    for i in range(nodes):
        _node, records = read_snapshots(os.path.join(run_dir, "snap-%d.bin" % i))
        if not records:
            raise cb.BenchError("node %d wrote no snapshot (%s)" % (i, run_dir))
        for t, step, final, model in records:
            events.append((t, i, step, model))
    events.sort(key=lambda e: e[0])
    latest = [None] * nodes
    curve = []
    t_all_up = None
    for t, i, _step, model in events:
        latest[i] = model
        if any(m is None for m in latest):
            continue
        if t_all_up is None:
            t_all_up = t
        avg = sum(latest) / nodes
        curve.append((t - t_all_up, (objective(avg) - f_star) / f_star))
    return curve


def time_to(curve, gap):
    for t, g in curve:
        if g <= gap:
            return t
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", default="8", help="comma-separated daemon counts (default 8)")
    parser.add_argument("--factors", default="1,2,4,8", help="straggler factors k (default 1,2,4,8)")
    parser.add_argument("--methods", default="extra,gradient-tracking,asy-sonata",
                        help="comma-separated --algorithm names")
    parser.add_argument("--iterations", default="",
                        help="METHOD=N,... local steps or iterations per run (defaults: %s)"
                        % ",".join("%s=%d" % kv for kv in DEFAULT_ITERATIONS.items()))
    parser.add_argument("--problem", choices=["a9a", "optra"], default="a9a")
    parser.add_argument("--topology", default="ring")
    parser.add_argument("--slow-id", type=int, default=0, help="the straggler's node id")
    parser.add_argument("--gaps", default="1e-4,1e-8")
    parser.add_argument("--snapshots", type=int, default=150, help="snapshots per run")
    parser.add_argument("--compute-delay-ms", type=float, default=5.0,
                        help="every node's step also takes this long (--compute-delay-ms; the "
                             "straggler's k multiplies it with the step): a compute-bound step, "
                             "as on a device; 0 = only the real gradient (default 5)")
    parser.add_argument("--keep", action="store_true", help="keep the run folders")
    args = parser.parse_args()

    build = os.environ.get("STARLING_BUILD_DIR", "./build")
    bins = cb.binaries()
    cb.need(bins["starlingd"], "starlingd")
    cb.need(bins["probe"], "starling-probe")
    gaps = [float(g) for g in args.gaps.split(",")]
    iterations = dict(DEFAULT_ITERATIONS)
    for item in filter(None, args.iterations.split(",")):
        name, _, value = item.partition("=")
        iterations[name] = int(value)
    if args.problem == "a9a":
        # The whole file (48,842 rows), as the simulator's a9a table and its reference f* use it.
        data = os.path.join(cb.SHARED_DATA, "a9a")
        a, b = read_libsvm(data, 123)
        l2 = 1e-2
        problem_options = ["--problem", "logistic", "--l2", "1e-2", "--format", "libsvm",
                           "--features", "123"]
        objective = Objective("logistic", a, b, l2)
    else:
        raise cb.BenchError("--problem optra: not wired yet (its reader needs the instance's CSV)")
    run_base = problem_options + ["--data", data, "--seed", "1"]
    f_star = None
    records = []
    runs = cb.Runs(args.keep)
    try:
        for n in [int(v) for v in args.nodes.split(",")]:
            ref = reference_f_star(build, run_base + ["--nodes", str(n), "--topology",
                                                      args.topology, "--algorithm", "extra"])
            newton = objective(objective.newton())
            cb.note("f* = %.17g (reference solver), %.17g (Newton here), relative difference %.2g"
                    % (ref, newton, abs(ref - newton) / ref))
            if abs(ref - newton) > 1e-10 * abs(ref):
                raise cb.BenchError("the reference f* and the Newton solve here disagree")
            f_star = ref
            for method in args.methods.split(","):
                its = iterations.get(method, 3000)
                for k in [float(v) for v in args.factors.split(",")]:
                    run_opts = run_base + ["--nodes", str(n), "--topology", args.topology,
                                           "--algorithm", method, "--iterations", str(its),
                                           "--slow-node", "%d:%g" % (args.slow_id, k)]
                    daemon_opts = ["--snapshot-every", str(max(1, its // args.snapshots)),
                                   "--give-up-s", "900", "--linger-s", "900",
                                   "--compute-delay-ms", "%g" % args.compute_delay_ms]
                    if method in PAIRWISE:
                        # No node waits for the straggler's step count; the fast ones stay up
                        # (serving it) until it has done its budget too.
                        daemon_opts += ["--progress-window", "0"]
                    c = start_with_snapshots(runs, bins, n, args.topology, run_opts, daemon_opts)
                    t0 = time.monotonic()
                    cb.note("%s, %d nodes, k = %g: %d %s" % (method, n, k, its,
                            "local steps" if method in PAIRWISE else "iterations"))
                    c.wait_exit(deadline_s=3600)
                    wall = time.monotonic() - t0
                    curve = gap_curve(c.run_dir, n, objective, f_star)
                    rec = {"bench": "stragglers", "method": method, "nodes": n, "k": k,
                           "compute_delay_ms": args.compute_delay_ms,
                           "iterations": its, "run_s": round(wall, 2),
                           "final_gap": curve[-1][1] if curve else None}
                    for g in gaps:
                        t = time_to(curve, g)
                        rec["s_to_%g" % g] = None if t is None else round(t, 3)
                    cb.emit(rec)
                    records.append(rec)
                    c.stop()
    except cb.BenchError as e:
        print("stragglers: %s" % e, file=sys.stderr)
        return 1
    finally:
        runs.close()
    print_table(records, gaps)
    return 0


def start_with_snapshots(runs, bins, n, topology, run_opts, daemon_opts):
    """A cluster whose node i writes RUN/snap-i.bin (Cluster passes one option list to all)."""
    runs.serial += 1
    run_dir = os.path.join(runs.root, "run%d" % runs.serial)
    c = SnapshotCluster(bins, run_dir, n, topology, run_opts, daemon_opts)
    runs.clusters.append(c)
    return c


class SnapshotCluster(cb.Cluster):
    def __init__(self, bins, run_dir, nodes, topology, run_options, daemon_options):
        self.extra = list(daemon_options)
        super().__init__(bins, run_dir, nodes, topology, run_options, daemon_options=(),
                         skip=range(nodes))
        for i in range(nodes):
            log_path = os.path.join(run_dir, "node-%d.log" % i)
            self.logs[i] = log_path
            argv = ([bins["starlingd"], "--cluster", self.cluster_file, "--id", str(i)]
                    + self.run_options + self.extra
                    + ["--snapshots", os.path.join(run_dir, "snap-%d.bin" % i),
                       "--metrics", os.path.join(run_dir, "node-%d.jsonl" % i),
                       "--secret-key", os.path.join(run_dir, "keys", "node-%d.key" % i)])
            with open(log_path, "w") as log:
                self.procs[i] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                                 stderr=subprocess.STDOUT)


def print_table(records, gaps):
    out = sys.stderr
    cols = ["method", "N", "k"] + ["s to %g" % g for g in gaps] + ["final gap", "run s"]
    print("| " + " | ".join(cols) + " |", file=out)
    print("|" + "---|" * len(cols), file=out)
    for r in records:
        cells = [r["method"], str(r["nodes"]), "%g" % r["k"]]
        for g in gaps:
            t = r["s_to_%g" % g]
            cells.append("not reached" if t is None else "%.2f" % t)
        cells += ["%.2g" % r["final_gap"] if r["final_gap"] is not None else "-",
                  "%.1f" % r["run_s"]]
        print("| " + " | ".join(cells) + " |", file=out)
    print("", file=out)
    for g in gaps:
        for m in sorted({r["method"] for r in records}):
            for n in sorted({r["nodes"] for r in records}):
                t = {r["k"]: r["s_to_%g" % g] for r in records
                     if r["method"] == m and r["nodes"] == n}
                if t.get(1.0) and t.get(4.0):
                    print("%s, N = %d, gap %g: time(k=4) / time(k=1) = %.2f"
                          % (m, n, g, t[4.0] / t[1.0]), file=out)
                elif 1.0 in t and 4.0 in t:
                    print("%s, N = %d, gap %g: ratio undefined (k=1: %s, k=4: %s)"
                          % (m, n, g, t[1.0], t[4.0]), file=out)


if __name__ == "__main__":
    sys.exit(main())
