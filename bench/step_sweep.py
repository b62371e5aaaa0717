#!/usr/bin/env python3
"""Default step against the best fixed step (docs/results/exact-methods-a9a.md).

For each data set and each round-based method that takes --step, runs build/node/starling-sim
once with the method's default step and once per fixed step c/L on a grid of c (L = the run's
smoothness bound, read from the simulator's banner), and prints one JSON line per run and a
Markdown table: the default step, the best fixed step of the grid, their ratio, and what each
reached.

Score of a run, lower is better: the iterations to the target (relative gap 1e-6 where f* > 0,
Bregman gap 1e-2 on the OPTRA instance, whose f* is 0) if it got there within the budget;
otherwise the final value of that metric (ranked after every run that got there); a run that
diverged (exit 4) or failed ranks last.

Usage: bench/step_sweep.py [--build build] [--data ../shared/data] [--out DIR]
       [--sets a9a,optra,multinomial] [--methods extra,gradient-tracking,...] [--quick]
Needs no Python package beyond the standard library. Keep it small: the grid is 7 steps.
"""
import argparse
import json
import math
import os
import random
import re
import subprocess
import sys

GRID = [0.25, 0.5, 1, 2, 4, 8, 16]  # c in step = c / L
METHODS = ["dgd", "gradient-tracking", "extra", "network-svrg", "network-sarah", "choco-sgd"]


def write_multinomial(path, seed=3, n=3000, d=20, k=4):
    """A small multinomial set: k Gaussian clusters in d dimensions, labels 0..k-1, LIBSVM."""
    rng = random.Random(seed)
    centers = [[rng.gauss(0, 1) for _ in range(d)] for _ in range(k)]
    with open(path, "w") as f:
        for _ in range(n):
            c = rng.randrange(k)
            x = [centers[c][j] + rng.gauss(0, 1.5) for j in range(d)]
            f.write(str(c) + " " + " ".join("%d:%.6g" % (j + 1, v) for j, v in enumerate(x)) +
                    "\n")


def data_sets(data_dir, out):
    a9a = os.path.join(data_dir, "a9a")
    optra = os.path.join(data_dir, "optra-least-squares")
    multi = os.path.join(out, "multinomial.libsvm")
    write_multinomial(multi)
    return {
        "a9a": dict(args=["--problem", "logistic", "--l2", "1e-2", "--data", a9a, "--format",
                          "libsvm", "--nodes", "8", "--topology", "ring", "--seed", "1",
                          "--reference-optimum", "auto"],
                    metric="rel_gap", target=1e-6, budget=3000),
        "optra": dict(args=["--problem", "least-squares", "--l2", "0", "--data",
                            optra + "/rows.csv", "--format", "csv", "--partition", "column:0",
                            "--label-column", "1", "--loss-scale", "2", "--laplacian",
                            optra + "/laplacian.csv", "--nodes", "20", "--x0",
                            optra + "/x0.csv", "--x-star", optra + "/x_opt.csv"],
                      metric="bregman", target=1e-2, budget=3000),
        "multinomial": dict(args=["--problem", "multinomial", "--l2", "1e-3", "--data", multi,
                                  "--format", "libsvm", "--nodes", "8", "--topology", "ring",
                                  "--seed", "1", "--reference-optimum", "auto"],
                            metric="rel_gap", target=1e-6, budget=3000),
    }


def run(sim, spec, method, step, budget):
    """One simulator run; returns dict(L, reached, final, status)."""
    cmd = [sim, "--algorithm", method, "--iterations", str(budget), "-q"] + spec["args"]
    if step is not None:
        cmd += ["--step", repr(step)]
    if spec["metric"] == "rel_gap":
        cmd += ["--stop-at-gap", str(spec["target"])]
    else:
        cmd += ["--log-every", "10", "--metrics", "/dev/stdout"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    out = {"status": p.returncode}
    m = re.search(r"L = ([0-9.eE+-]+)", p.stderr)
    out["L"] = float(m.group(1)) if m else None
    m = re.search(r"step = ([0-9.eE+-]+)", p.stderr)
    out["resolved_step"] = float(m.group(1)) if m else None
    if p.returncode != 0:
        out["error"] = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
        return out
    fields = dict(line.split(" ", 1) for line in p.stdout.splitlines()
                  if " " in line and not line.startswith("{"))
    if spec["metric"] == "rel_gap":
        out["final"] = float(fields["rel_gap"])
        r = fields.get("iterations_to_rel_gap_1e-6", "not reached")
        out["reached"] = None if r == "not reached" else int(r)
    else:
        out["final"] = float(fields["bregman"])
        out["reached"] = None
        for line in p.stdout.splitlines():
            if line.startswith("{"):
                point = json.loads(line)
                if point.get("bregman", math.inf) <= spec["target"]:
                    out["reached"] = point["iter"]
                    break
    return out


def score(r):
    if r["status"] != 0 or not math.isfinite(r.get("final", math.inf)):
        return (2, 0.0)
    if r["reached"] is not None:
        return (0, r["reached"])
    return (1, r["final"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.environ.get("STARLING_BUILD_DIR", "build"))
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                   "shared", "data"))
    ap.add_argument("--out", default="/tmp/starling-step-sweep")
    ap.add_argument("--sets", default="a9a,optra,multinomial")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--quick", action="store_true", help="budget / 3")
    ap.add_argument("--report", nargs="+", metavar="JSONL",
                    help="print the table from the JSON lines of earlier sweeps instead")
    a = ap.parse_args()
    if a.report:
        return report(a.report)
    os.makedirs(a.out, exist_ok=True)
    sim = os.path.join(a.build, "node", "starling-sim")
    sets = data_sets(a.data, a.out)
    # One table, from the JSON lines (report() below): the default competes with the grid, and
    # a grid whose every step diverged leaves the default the best.
    lines = os.path.join(a.out, "sweep.jsonl")
    with open(lines, "w") as saved:
        def emit(record):
            text = json.dumps(record)
            print(text, flush=True)
            saved.write(text + "\n")

        for name in a.sets.split(","):
            spec = sets[name]
            if a.quick:
                spec["budget"] //= 3
            for method in a.methods.split(","):
                default = run(sim, spec, method, None, spec["budget"])
                emit(dict(set=name, method=method, grid="default", **default))
                if default["L"] is None:
                    continue
                for c in GRID:
                    r = run(sim, spec, method, c / default["L"], spec["budget"])
                    emit(dict(set=name, method=method, c=c, **r))
    print()
    return report([lines])


def report(files):
    """The Markdown table from saved JSON lines (one sweep's output, or several)."""
    runs = {}
    for path in files:
        for line in open(path):
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            runs.setdefault((r["set"], r["method"]), []).append(r)
    metric = {"a9a": ("rel_gap", "1e-6"), "multinomial": ("rel_gap", "1e-6"),
              "optra": ("bregman", "1e-2")}
    print("| data set (target) | method | L | default | best fixed step of the grid | "
          "best / default | default reached | best reached |")
    print("|---|---|---|---|---|---|---|---|")
    for (name, method), rs in runs.items():
        default = next(r for r in rs if r.get("grid") == "default")
        lip, d_step = default["L"], default.get("resolved_step")
        # The default competes too: the best fixed step is the best of the grid and it.
        grid = [r for r in rs if "c" in r] + [dict(default, c=d_step * lip)]
        best = min(grid, key=score)
        edge = best["c"] >= max(GRID)
        spec = {"metric": metric[name][0], "budget": "budget"}

        def said(r):
            if r["status"] == 4:
                return "diverged"
            if r["status"] != 0:
                return "failed"
            if r["reached"] is not None:
                return "%d its" % r["reached"]
            return "%s %.2g at the end" % (spec["metric"], r["final"])

        ratio = best["c"] / lip / d_step
        print("| %s (%s %s) | %s | %.4g | %.4g = %.2g/L | %s%.4g = %.2g/L | %s%.2g | %s | %s |" % (
            name, metric[name][0], metric[name][1], method, lip, d_step, d_step * lip,
            ">= " if edge else "", best["c"] / lip, best["c"], ">= " if edge else "", ratio,
            said(default), said(best)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
