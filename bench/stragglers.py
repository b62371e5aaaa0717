#!/usr/bin/python3
"""What one straggler costs, in real starlingd processes on this machine.

    bench/run.sh stragglers [--nodes 8] [--factors 1,2,4,8] [--methods extra,gradient-tracking,...]
                            [--problem a9a|optra] [--loss P] [--slow-id 0] [--gaps 1e-4,1e-6,1e-8]
                            [--results FILE.jsonl] [--plot FILE.png] [--keep]
    bench/run.sh stragglers --replot FILE.jsonl[,FILE.jsonl...] --plot FILE.png

For each node count, method and factor k, one run of N daemons in which node --slow-id takes k
times as long for each local step or round (--slow-node ID:k, node/config/slow_nodes.h: it
serves its neighbours for (k - 1) x its measured step time after each step). Each daemon writes
model snapshots (--snapshots); afterwards the network's state at wall time t is the average of
every node's latest snapshot at t (on the common wall clock, whatever step each node is at: a
straggler's neighbours do not wait for it in an asynchronous method, and the time axis must show
that), and the gap of that average is evaluated here with numpy on the whole data. The time to a
gap is counted from the moment the last node took its first snapshot (all up).

Problems:
- a9a (default): logistic, lambda 1e-2, the whole file; relative gap (F(avg) - F*) / F*, F* from
  the project's reference solver (starling-sim --reference-optimum auto, cached), checked against
  a Newton solve here (printed; they must agree to 1e-10 relatively).
- optra: the OPTRA authors' least-squares instance (../shared/data/optra-least-squares: 20
  nodes with 10 rows each, d = 500, l2 = 0, f_i = ||A_i x - b_i||^2, their graph from
  laplacian.csv and their starting point x0.csv). Its F* is ~0 (fmin 5e-24: 200 rows, 500
  unknowns), so the gap is relative to the start: (F(avg) - F*) / (F(avg of x0) - F*), with F*
  from a least-squares solve here (checked against meta.json's fmin). Always 20 nodes.

While a run goes, its snapshots are read every --poll-s seconds and the run is stopped as soon
as the network's average is at the smallest gap (--stop-at-gap, default the smallest of --gaps;
0 = run every budget out), or after --run-deadline-s. A method that does not reach a gap is
reported as "not reached" with its final gap; a run whose daemons fail is reported with the
failure (and the curve up to it), and the benchmark goes on with the next run.

--loss P gives every daemon --fault-loss P (the transport's own fault injection: each message
is dropped with probability P; round-based methods resend, pairwise ones time out).

Output: one JSON line per run on stdout (and appended to --results), then a table and the ratios
time(k)/time(1) per method and gap on stderr; --plot draws the wall time to each gap against k
per method (matplotlib). Methods are names of --algorithm (any round-based or pairwise method;
pairwise ones get --progress-window 0, so that no node waits for the straggler's step count).
Run with numpy's Python (/usr/bin/python3).
"""

import argparse
import json
import os
import struct
import subprocess
import sys
import time

import re
import signal

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_bench as cb  # noqa: E402  (Cluster, Runs, note, emit, BenchError)

PAIRWISE = {"swarmsgd", "asy-sonata", "async-admm", "acid", "dadao"}
DEFAULT_METHODS = "extra,gradient-tracking,optra,asy-sonata,async-admm,dadao"
# Local steps (pairwise; DADAO: gradient events) or iterations (round-based) per run: enough for
# 1e-8 on a9a, lambda 1e-2, 8-16 nodes at k = 1 (measured in the simulator, with a margin for
# daemons, where a pairwise node takes up to two steps per completed exchange); runs stop at
# the smallest gap anyway. A run that ends short says so. OPTRA's steps depend on its horizon,
# which is the run's --iterations.
DEFAULT_ITERATIONS = {"extra": 1500, "gradient-tracking": 2000, "optra": 2000,
                      "asy-sonata": 6000, "async-admm": 3000, "dadao": 3000}
OPTRA_DIR = "optra-least-squares"


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
        # a9a is 89% zeros: a sparse product is ~10x cheaper than the dense one, which matters
        # with thousands of evaluations per run on a loaded machine.
        try:
            import scipy.sparse
            self.a_fast = scipy.sparse.csr_matrix(a)
        except ImportError:
            self.a_fast = a

    def __call__(self, x):
        u = self.a_fast @ x
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


def last_snapshot(path):
    """The model of the last complete record of a snapshots file being written, or None."""
    try:
        with open(path, "rb") as f:
            head = f.read(48)
            if len(head) < 48 or head[:8] != b"STSNAP01":
                return None
            dim = struct.unpack_from("<IiI", head, 8)[2]
            size = 56 + 8 * dim
            f.seek(0, os.SEEK_END)
            count = (f.tell() - 48) // size
            if count <= 0:
                return None
            f.seek(48 + (count - 1) * size + 56)
            return np.frombuffer(f.read(8 * dim), dtype=np.float64).copy()
    except OSError:
        return None


def last_steps(run_dir, nodes):
    """Each node's step at its last snapshot (None where it wrote none)."""
    steps = []
    for i in range(nodes):
        try:
            _node, records = read_snapshots(os.path.join(run_dir, "snap-%d.bin" % i))
        except (OSError, cb.BenchError):
            records = []
        steps.append(records[-1][1] if records else None)
    return steps


def read_numbers(path):
    """Every number of a CSV file (comment lines start with #), flat."""
    with open(path) as f:
        text = "\n".join(line for line in f if not line.startswith("#"))
    return np.array([float(v) for v in re.split(r"[,\s]+", text) if v])


class A9a:
    """a9a logistic, lambda 1e-2: relative gap (F - F*) / F*."""

    name = "a9a"

    def __init__(self, build, topology, nodes):
        # The whole file (48,842 rows), as the simulator's a9a table and its reference f* use it.
        self.data = os.path.join(cb.SHARED_DATA, "a9a")
        a, b = read_libsvm(self.data, 123)
        self.objective = Objective("logistic", a, b, 1e-2)
        self.run_base = ["--problem", "logistic", "--l2", "1e-2", "--format", "libsvm",
                         "--features", "123", "--data", self.data, "--seed", "1"]
        # OPTRA's default nu = 100 ends at 2.2e-8 after a 3000-iteration horizon on a9a (8-ring,
        # starling-sim); nu = 1000 reaches 1e-8 at iteration 750 of a 2000-iteration horizon.
        self.method_options = {"optra": ["--optra-nu", "1000"]}
        self.topology = topology
        self.build = build
        self.f_star = None
        self.fixed_nodes = None

    def prepare(self, n, _root):
        ref = reference_f_star(self.build, self.run_base + ["--nodes", str(n), "--topology",
                                                            self.topology, "--algorithm", "extra"])
        newton = self.objective(self.objective.newton())
        cb.note("f* = %.17g (reference solver), %.17g (Newton here), relative difference %.2g"
                % (ref, newton, abs(ref - newton) / ref))
        if abs(ref - newton) > 1e-10 * abs(ref):
            raise cb.BenchError("the reference f* and the Newton solve here disagree")
        self.f_star = ref
        return self.topology, ["--nodes", str(n), "--topology", self.topology]

    def gap(self, x):
        return (self.objective(x) - self.f_star) / self.f_star


class OptraInstance:
    """The OPTRA authors' least-squares instance: gap relative to the start's."""

    name = "optra"
    fixed_nodes = 20

    def __init__(self, _build, _topology, _nodes):
        d = os.path.join(cb.SHARED_DATA, OPTRA_DIR)
        for f in ("rows.csv", "laplacian.csv", "x0.csv", "meta.json"):
            if not os.path.isfile(os.path.join(d, f)):
                raise cb.BenchError("the OPTRA instance's %s is missing in %s" % (f, d))
        self.dir = d
        rows = np.loadtxt(os.path.join(d, "rows.csv"), delimiter=",", comments="#")
        self.a, self.b = rows[:, 2:], rows[:, 1]
        dim = self.a.shape[1]
        x0 = read_numbers(os.path.join(d, "x0.csv")).reshape(-1, dim)
        with open(os.path.join(d, "meta.json")) as f:
            fmin = json.load(f)["fmin"]
        # F = sum_i ||A_i x - b_i||^2 = ||A x - b||^2 over all rows (--loss-scale 2 of the
        # project's (a.x - b)^2 / 2, l2 = 0); F* by least squares (minimum-norm solution).
        x_star = np.linalg.lstsq(self.a, self.b, rcond=None)[0]
        self.f_star = self.value(x_star)
        self.f_start = self.value(x0.mean(axis=0))
        cb.note("optra instance: F* = %.3g here (meta.json fmin %.3g), F(avg of x0) = %.9g"
                % (self.f_star, fmin, self.f_start))
        if abs(self.f_star - fmin) > 1e-12 * self.f_start:
            raise cb.BenchError("F* here and the instance's fmin disagree")
        self.run_base = ["--problem", "least-squares", "--l2", "0",
                         "--data", os.path.join(d, "rows.csv"), "--format", "csv",
                         "--partition", "column:0", "--label-column", "1", "--loss-scale", "2",
                         "--x0", os.path.join(d, "x0.csv"), "--seed", "1"]
        # The paper's constants on its own instance.
        self.method_options = {"optra": ["--optra-nu", "100", "--optra-inner", "4"]}

    def value(self, x):
        r = self.a @ x - self.b
        return r.dot(r)

    def prepare(self, n, root):
        if n != self.fixed_nodes:
            raise cb.BenchError("--problem optra runs its own 20 nodes (got --nodes %d)" % n)
        lap = np.loadtxt(os.path.join(self.dir, "laplacian.csv"), delimiter=",", comments="#")
        edges = os.path.join(root, "optra-edges.txt")
        with open(edges, "w") as f:
            for i in range(len(lap)):
                for j in range(i + 1, len(lap)):
                    if lap[i, j] != 0:
                        f.write("%d %d\n" % (i, j))
        return ("file:" + edges,
                ["--nodes", "20", "--laplacian", os.path.join(self.dir, "laplacian.csv")])

    def gap(self, x):
        return (self.value(x) - self.f_star) / (self.f_start - self.f_star)


def gap_curve(run_dir, nodes, instance, thresholds=()):
    """[(seconds since all were up, gap)] of the average of the nodes' latest snapshots."""
    events = []
    for i in range(nodes):
        path = os.path.join(run_dir, "snap-%d.bin" % i)
        if not os.path.exists(path):
            raise cb.BenchError("node %d wrote no snapshots file (%s)" % (i, run_dir))
        _node, records = read_snapshots(path)
        if not records:
            raise cb.BenchError("node %d wrote no snapshot (%s)" % (i, run_dir))
        for t, step, _final, model in records:
            events.append((t, i, step, model))
    events.sort(key=lambda e: e[0])
    latest = [None] * nodes
    times, averages = [], []
    t_all_up = None
    for t, i, _step, model in events:
        latest[i] = model
        if any(m is None for m in latest):
            continue
        if t_all_up is None:
            t_all_up = t
        times.append(t - t_all_up)
        averages.append(sum(latest) / nodes)
    # The gap at every event costs a pass over the data each (a minute per run at load 20):
    # evaluate every stride-th event and the last, then every event of the stride just before
    # each threshold's first coarse crossing, so that the first crossing is exact unless the
    # curve dipped below a threshold and came back within one stride.
    count = len(averages)
    stride = max(1, count // 250)
    gaps = {}

    def at(j):
        if j not in gaps:
            gaps[j] = instance.gap(averages[j])
        return gaps[j]

    coarse = list(range(0, count, stride)) + ([count - 1] if count else [])
    for j in coarse:
        at(j)
    for threshold in thresholds:
        first = next((j for j in coarse if gaps[j] <= threshold), None)
        if first is not None:
            for j in range(max(0, first - stride + 1), first):
                at(j)
    return [(times[j], gaps[j]) for j in sorted(gaps)]


def time_to(curve, gap):
    for t, g in curve:
        if g <= gap:
            return t
    return None


def run_until(c, n, instance, stop_gap, poll_s, deadline_s):
    """Waits for the daemons to end, or for the network's average to reach stop_gap (> 0), or
    for the deadline. Returns (how it ended, error text or None)."""
    end = time.monotonic() + deadline_s
    next_poll = time.monotonic() + poll_s
    while any(p.poll() is None for p in c.procs.values()):
        now = time.monotonic()
        if now > end:
            return "deadline", None
        if stop_gap > 0 and now >= next_poll:
            latest = [last_snapshot(os.path.join(c.run_dir, "snap-%d.bin" % i))
                      for i in range(n)]
            if all(m is not None for m in latest):
                g = instance.gap(sum(latest) / n)
                if np.isfinite(g) and g <= stop_gap:
                    return "stopped at gap", None
            next_poll = time.monotonic() + poll_s
        time.sleep(0.1)
    bad = {i: p.returncode for i, p in c.procs.items() if p.returncode != 0}
    if bad:
        i = sorted(bad)[0]
        return "failed", "daemon(s) failed %s; node %d's log: %s" % (
            bad, i, " / ".join(c.tail(i, 4).split("\n")))
    return "budget done", None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", default="",
                        help="comma-separated daemon counts (default 8; optra: 20, its own)")
    parser.add_argument("--factors", default="1,2,4,8", help="straggler factors k (default 1,2,4,8)")
    parser.add_argument("--methods", default=DEFAULT_METHODS,
                        help="comma-separated --algorithm names (default %s)" % DEFAULT_METHODS)
    parser.add_argument("--iterations", default="",
                        help="METHOD=N,... local steps or iterations per run (defaults: %s)"
                        % ",".join("%s=%d" % kv for kv in DEFAULT_ITERATIONS.items()))
    parser.add_argument("--problem", choices=["a9a", "optra"], default="a9a")
    parser.add_argument("--topology", default="ring", help="a9a only (optra: the authors' graph)")
    parser.add_argument("--slow-id", type=int, default=0, help="the straggler's node id")
    parser.add_argument("--gaps", default="1e-4,1e-6,1e-8")
    parser.add_argument("--loss", type=float, default=0.0,
                        help="--fault-loss P for every daemon (default 0: no injected loss)")
    parser.add_argument("--stop-at-gap", type=float, default=-1,
                        help="stop a run once the average is at this gap (default: the "
                             "smallest of --gaps; 0 = never)")
    parser.add_argument("--poll-s", type=float, default=1.0,
                        help="how often a running run's snapshots are checked (default 1 s)")
    parser.add_argument("--run-deadline-s", type=float, default=900,
                        help="a run still going after this is stopped and scored (default 900)")
    parser.add_argument("--snapshots", type=int, default=150, help="snapshots per run")
    parser.add_argument("--compute-delay-ms", type=float, default=5.0,
                        help="every node's step also takes this long (--compute-delay-ms; the "
                             "straggler's k multiplies it with the step): a compute-bound step, "
                             "as on a device; 0 = only the real gradient (default 5)")
    parser.add_argument("--extra-daemon-options", default="",
                        help="more starlingd options for every run, space-separated")
    parser.add_argument("--results", default="", help="append every run's JSON line to FILE")
    parser.add_argument("--plot", default="", help="write the time-to-gap plot to FILE.png")
    parser.add_argument("--replot", default="",
                        help="FILE.jsonl[?FIELD=VALUE&...][,...]: no runs; table, ratios and "
                             "--plot from saved lines (only the lines whose fields match; a "
                             "method's curve in a configuration comes from the last file with it)")
    parser.add_argument("--keep", action="store_true", help="keep the run folders")
    args = parser.parse_args()
    gaps = [float(g) for g in args.gaps.split(",")]

    if args.replot:
        records = replot_records(args.replot)
        gaps = sorted({float(k[5:]) for r in records for k in r if k.startswith("s_to_")},
                      reverse=True)
        print_table(records, gaps)
        if args.plot:
            plot(records, gaps, args.plot)
        return 0

    build = os.environ.get("STARLING_BUILD_DIR", "./build")
    bins = cb.binaries()
    cb.need(bins["starlingd"], "starlingd")
    cb.need(bins["probe"], "starling-probe")
    iterations = dict(DEFAULT_ITERATIONS)
    for item in filter(None, args.iterations.split(",")):
        name, _, value = item.partition("=")
        iterations[name] = int(value)
    stop_gap = min(gaps) if args.stop_at_gap < 0 else args.stop_at_gap
    instance = (A9a if args.problem == "a9a" else OptraInstance)(build, args.topology, None)
    default_nodes = str(instance.fixed_nodes or 8)
    records = []
    runs = cb.Runs(args.keep)
    # SIGTERM (or SIGINT, ignored in a background job) stops the daemons on the way out.
    signal.signal(signal.SIGTERM, lambda _s, _f: sys.exit(1))
    try:
        for n in [int(v) for v in (args.nodes or default_nodes).split(",")]:
            topology, node_opts = instance.prepare(n, runs.root)
            for method in args.methods.split(","):
                its = iterations.get(method, 3000)
                for k in [float(v) for v in args.factors.split(",")]:
                    run_opts = instance.run_base + node_opts + [
                        "--algorithm", method, "--iterations", str(its),
                        "--slow-node", "%d:%g" % (args.slow_id, k)] + \
                        instance.method_options.get(method, [])
                    daemon_opts = ["--snapshot-every", str(max(1, its // args.snapshots)),
                                   "--give-up-s", "900", "--linger-s", "900",
                                   "--compute-delay-ms", "%g" % args.compute_delay_ms]
                    if args.loss > 0:
                        daemon_opts += ["--fault-loss", "%g" % args.loss]
                    daemon_opts += args.extra_daemon_options.split()
                    if method in PAIRWISE:
                        # No node waits for the straggler's step count; the fast ones stay up
                        # (serving it) until it has done its budget too.
                        daemon_opts += ["--progress-window", "0"]
                    load = os.getloadavg()[0]
                    c = start_with_snapshots(runs, bins, n, topology, run_opts, daemon_opts)
                    t0 = time.monotonic()
                    cb.note("%s, %s, %d nodes, k = %g, loss %g: %d %s (load %.1f)"
                            % (method, instance.name, n, k, args.loss, its,
                               "local steps" if method in PAIRWISE else "iterations", load))
                    ended, error = run_until(c, n, instance, stop_gap, args.poll_s,
                                             args.run_deadline_s)
                    wall = time.monotonic() - t0
                    c.stop()
                    rec = {"bench": "stragglers", "problem": instance.name, "method": method,
                           "nodes": n, "k": k, "loss": args.loss,
                           "compute_delay_ms": args.compute_delay_ms, "iterations": its,
                           "daemon_options": args.extra_daemon_options,
                           "topology": args.topology if args.problem == "a9a" else "optra",
                           "snapshot_every": max(1, its // args.snapshots),
                           "run_s": round(wall, 2), "ended": ended,
                           "load_start": round(load, 1),
                           "load_end": round(os.getloadavg()[0], 1)}
                    try:
                        curve = gap_curve(c.run_dir, n, instance, gaps)
                    except cb.BenchError as e:
                        curve = []
                        error = error or str(e)
                    if error:
                        rec["error"] = error[:600]
                        cb.note("%s, k = %g: %s" % (method, k, error[:600]))
                    # Who paced whom: the straggler's last snapshot step against the others'
                    # (an asynchronous method's fast nodes run ahead, a round-based one's not).
                    steps = last_steps(c.run_dir, n)
                    if steps and all(v is not None for v in steps):
                        rec["slow_steps"] = steps[args.slow_id]
                        rec["other_steps_median"] = float(np.median(
                            [v for i, v in enumerate(steps) if i != args.slow_id]))
                    rec["final_gap"] = curve[-1][1] if curve else None
                    rec["best_gap"] = min(g for _t, g in curve) if curve else None
                    for g in gaps:
                        t = time_to(curve, g)
                        rec["s_to_%g" % g] = None if t is None else round(t, 3)
                    cb.emit(rec)
                    if args.results:
                        with open(args.results, "a") as f:
                            f.write(json.dumps(rec) + "\n")
                    records.append(rec)
    except cb.BenchError as e:
        print("stragglers: %s" % e, file=sys.stderr)
        return 1
    finally:
        runs.close()
    print_table(records, gaps)
    if args.plot:
        plot(records, gaps, args.plot)
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




def configuration(r):
    """The runs that belong in one table and one panel row: problem, N, loss, topology (a9a's;
    lines without one are a9a's, all on the ring; the OPTRA instance has its authors' graph)."""
    problem = r.get("problem", "a9a")
    topology = r.get("topology", "ring") if problem == "a9a" else ""
    return (problem, r["nodes"], r.get("loss", 0.0), topology)


def curve(r):
    """A run's curve: its method, with edge ADMM's --admm-rho when the run set one."""
    rho = re.search(r"--admm-rho\s+(\S+)", r.get("daemon_options", ""))
    return r["method"] + (" rho %s" % rho.group(1) if rho else "")


def conf_name(conf):
    """The problem, and the graph if it is not the ring (a9a's default)."""
    return conf[0] if conf[3] in ("ring", "") else "%s %s" % (conf[0], conf[3])


def field_matches(value, wanted):
    """A --replot filter's VALUE against a saved field: as text, or as a number if both are."""
    if str(value) == wanted:
        return True
    try:
        return isinstance(value, (int, float)) and float(wanted) == float(value)
    except ValueError:
        return False


def replot_records(spec):
    """The lines of --replot FILE[?FIELD=VALUE&...],...: each file's matching lines; a
    (configuration, method) in a later file replaces that in the earlier ones, so that a
    rerun's curve is drawn instead of the old one, never mixed with it point by point."""
    records = []
    for item in filter(None, spec.split(",")):
        path, _, query = item.partition("?")
        wanted = [q.partition("=") for q in filter(None, query.split("&"))]
        with open(path) as f:
            lines = [json.loads(line) for line in f if line.strip()]
        lines = [r for r in lines
                 if all(field_matches(r.get(k), v) for k, _, v in wanted)]
        replaced = {(configuration(r), curve(r)) for r in lines}
        records = [r for r in records if (configuration(r), curve(r)) not in replaced] + lines
    return records


def print_table(records, gaps):
    out = sys.stderr
    cols = (["problem", "loss", "method", "N", "k"] + ["s to %g" % g for g in gaps]
            + ["final gap", "steps slow / others", "run s", "ended", "load"])
    print("| " + " | ".join(cols) + " |", file=out)
    print("|" + "---|" * len(cols), file=out)
    for r in records:
        cells = [r.get("problem", "a9a"), "%g" % r.get("loss", 0.0), curve(r),
                 str(r["nodes"]), "%g" % r["k"]]
        for g in gaps:
            t = r.get("s_to_%g" % g)
            cells.append("not reached" if t is None else "%.2f" % t)
        cells += ["%.2g" % r["final_gap"] if r.get("final_gap") is not None else "-",
                  "%s / %s" % (r.get("slow_steps", "-"), r.get("other_steps_median", "-")),
                  "%.1f" % r["run_s"], r.get("ended", "-") + (" (error)" if r.get("error") else ""),
                  "%s-%s" % (r.get("load_start", "?"), r.get("load_end", "?"))]
        print("| " + " | ".join(cells) + " |", file=out)
    print("", file=out)
    # time(k) / time(1) for every k, per configuration, method and gap.
    ks = sorted({r["k"] for r in records})
    print("| problem | loss | N | method | gap | " + " | ".join("k=%g" % k for k in ks) + " |",
          file=out)
    print("|" + "---|" * (5 + len(ks)), file=out)
    for conf in sorted({configuration(r) for r in records}):
        runs = [r for r in records if configuration(r) == conf]
        for m in sorted({curve(r) for r in runs}):
            for g in gaps:
                t = {r["k"]: r.get("s_to_%g" % g) for r in runs if curve(r) == m}
                base = t.get(1.0)
                cells = []
                for k in ks:
                    if k not in t:
                        cells.append("")
                    elif t[k] is None:
                        cells.append("not reached")
                    elif not base:
                        cells.append("%.2f s" % t[k])
                    else:
                        cells.append("%.2f" % (t[k] / base))
                print("| %s | %g | %d | %s | %g | %s |" % (conf_name(conf), conf[2], conf[1], m, g,
                                                         " | ".join(cells)), file=out)


def plot(records, gaps, path):
    """Wall time to each gap against k, one line per method; a row of panels per
    configuration (problem, N, loss), a column per gap. Unreached points are left out."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    confs = sorted({configuration(r) for r in records})
    methods = sorted({curve(r) for r in records})
    styles = {m: ("-" if m.split()[0] not in PAIRWISE else "--") for m in methods}
    markers = dict(zip(methods, "osD^vx<>p*"))
    colors = {m: "C%d" % (i % 10) for i, m in enumerate(methods)}
    fig, axes = plt.subplots(len(confs), len(gaps), figsize=(4.2 * len(gaps), 3.4 * len(confs)),
                             squeeze=False)
    for row, conf in enumerate(confs):
        runs = [r for r in records if configuration(r) == conf]
        for col, g in enumerate(gaps):
            ax = axes[row][col]
            for m in methods:
                mine = [r for r in runs if curve(r) == m]
                pts = sorted((r["k"], r.get("s_to_%g" % g)) for r in mine)
                pts = [(k, t) for k, t in pts if t is not None]
                # Lines saved with "code": "current" are reruns with a later build.
                label = m + (" (async)" if m.split()[0] in PAIRWISE else "") + (
                    ", rerun" if any(r.get("code") == "current" for r in mine) else "")
                if pts:
                    ax.plot([k for k, _ in pts], [t for _, t in pts], styles[m],
                            marker=markers[m], color=colors[m], label=label)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ks = sorted({r["k"] for r in runs})
            ax.set_xticks(ks)
            ax.set_xticklabels(["%g" % k for k in ks])
            ax.set_xlabel("straggler factor k")
            ax.set_ylabel("wall seconds to gap")
            ax.set_title("%s, N = %d%s, gap %g" % (conf_name(conf), conf[1],
                         ", %g%% loss" % (100 * conf[2]) if conf[2] else "", g), fontsize=9)
            ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
            ax.yaxis.set_minor_formatter(ticker.NullFormatter())
            ax.grid(True, which="both", alpha=0.3)
            if col == 0:
                ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    cb.note("plot written to %s" % path)


if __name__ == "__main__":
    sys.exit(main())
