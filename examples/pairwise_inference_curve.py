#!/usr/bin/env python3
"""Topology inference from the pairwise diffusion against the synchronous diffusion.

usage: pairwise_inference_curve.py SIM_BINARY OUT_PREFIX [--seeds R] [--nodes N] [--p P]
           [--topology SPEC] [--relabel PROBE_BINARY] [--observe K] [--samples S]
           [--sync-samples S] [--periods 0.25,1] [--pairwise-estimators LIST]
           [--sync-estimators LIST] [--clustering 2-means|gmm] [--panels]
           [--live ARGS [--live ARGS ...] [--live-seeds R] [--live-samples S]
           [--live-estimators LIST]]
           [--resume] [-- EXTRA pairwise options]

Runs, for seeds 1..R, `SIM_BINARY --algorithm diffusion` (the synchronous diffusion,
rho 0.75, c 0.9) and `SIM_BINARY --algorithm pairwise-diffusion --period D` for each D
(the simulator's defaults: decay 0.75, mix 0.5, exchange-prob 1), on the same
graphs (same --seed: same graph). The graph is --topology (default er:P). The simulators watch
nodes 0..K-1; that is a uniformly random subset of an ER graph, but a block of whole cliques of
a ring of cliques. --relabel PROBE_BINARY makes it a random subset for any graph: per seed, the
graph is written by `PROBE_BINARY cluster`, its nodes are renumbered by a permutation drawn from
the seed (Python's random.Random(seed)), and both simulators read that edge list
(--topology file:...). --live ARGS adds, for seeds 1..--live-seeds, `SIM_BINARY ARGS
--infer-live --period D` (a pairwise method's run, e.g. ARGS = '--algorithm swarmsgd --problem
logistic --data ...', or a round-based one's, '--algorithm dpsgd ...', inferring from its models'
projections) on the same graphs; --live may be given more than once (one curve per --algorithm),
and a --period in ARGS replaces the --periods (a round-based run: --period 1, one round).
--resume keeps the runs already in OUT_PREFIX.jsonl and runs only the missing (seed, method,
period) ones.

Writes OUT_PREFIX.jsonl (every metrics line, with "seed", "method", "period" and for the live
runs "live_algorithm"), OUT_PREFIX.md
(mean accuracy [min-max over the seeds] per sample count, and the commands; with --panels also
the mean identifiability gap, sensitivity and specificity) and OUT_PREFIX.png (accuracy against
samples, one line per method, estimator and period; with --panels four panels: accuracy, gap,
sensitivity, specificity; needs matplotlib, Debian: /usr/bin/python3 with python3-matplotlib).
"""

import argparse
import collections
import json
import os
import random
import shlex
import subprocess
import sys
import tempfile


def run(cmd, metrics):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(metrics) as f:
        return [json.loads(line) for line in f if '"samples"' in line]


def algorithm_of(cmd):
    """The --algorithm of a command line (a list of words), or "run"."""
    return cmd[cmd.index("--algorithm") + 1] if "--algorithm" in cmd else "run"


def live_algorithm(r):
    """The live run's method of a row; rows written before there was more than one live run
    carry none and were SwarmSGD's. None for the diffusions."""
    if r["method"] != "live":
        return None
    return r.get("live_algorithm", "swarmsgd")


def relabelled_graph(probe, spec, nodes, seed, tmp):
    """Writes SPEC's graph (seed SEED) with its nodes permuted by a seeded shuffle; returns the
    edge-list path. The graph itself comes from the C++ generator, through `probe cluster`."""
    conf = os.path.join(tmp, "cluster_%d.conf" % seed)
    subprocess.run([probe, "cluster", "--nodes", str(nodes), "--topology", spec, "--seed",
                    str(seed), "--out", conf], check=True, stdout=subprocess.DEVNULL)
    edges = []
    with open(conf) as f:
        for line in f:
            fields = line.split()
            if fields and fields[0] == "edge":
                edges.append((int(fields[1]), int(fields[2])))
    perm = list(range(nodes))
    random.Random(seed).shuffle(perm)
    path = os.path.join(tmp, "graph_%d.txt" % seed)
    with open(path, "w") as f:
        f.write("nodes %d\n" % nodes)
        for u, v in edges:
            f.write("%d %d\n" % (perm[u], perm[v]))
    return path


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    ap = argparse.ArgumentParser()
    ap.add_argument("sim")
    ap.add_argument("out")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--p", type=float, default=0.1)
    ap.add_argument("--topology", default=None)
    ap.add_argument("--relabel", default=None, metavar="PROBE_BINARY")
    ap.add_argument("--panels", action="store_true")
    ap.add_argument("--clustering", default=None, help="2-means (default) or gmm, both methods")
    ap.add_argument("--observe", type=int, default=30)
    ap.add_argument("--samples", type=int, default=100000)
    ap.add_argument("--sync-samples", type=int, default=None)
    ap.add_argument("--periods", default="1")
    ap.add_argument("--pairwise-estimators", default="granger,residual,log-granger")
    ap.add_argument("--sync-estimators", default="granger,one-lag")
    ap.add_argument("--live", action="append", default=[], metavar="ARGS",
                    help="also run `SIM_BINARY ARGS --infer-live` (e.g. '--algorithm swarmsgd "
                    "--problem logistic --data a9a ...') at each period; repeatable")
    ap.add_argument("--live-seeds", type=int, default=None)
    ap.add_argument("--live-samples", type=int, default=None)
    ap.add_argument("--live-estimators", default=None)
    ap.add_argument("--resume", action="store_true",
                    help="keep the runs already in OUT_PREFIX.jsonl, run only the missing ones")
    a = ap.parse_args(argv)
    sync_samples = a.sync_samples or a.samples
    spec = a.topology or "er:%g" % a.p

    rows, commands = [], []
    done = set()
    if a.resume and os.path.exists(a.out + ".jsonl"):
        with open(a.out + ".jsonl") as f:
            rows = [json.loads(line) for line in f]
        done = {(r["seed"], r["method"], r["period"], live_algorithm(r)) for r in rows}
    live_seeds = a.live_seeds or a.seeds
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(1, a.seeds + 1):
            graph = spec
            if a.relabel:
                graph = "file:" + relabelled_graph(a.relabel, spec, a.nodes, seed, tmp)
            base = ["--nodes", str(a.nodes), "--topology", graph, "--observe",
                    str(a.observe), "--seed", str(seed), "--quiet"]
            if a.clustering:
                base += ["--clustering", a.clustering]
            jobs = [("sync", None, [a.sim, "--algorithm", "diffusion", "--samples",
                                    str(sync_samples), "--estimator", a.sync_estimators] + base)]
            for d in a.periods.split(","):
                jobs.append(("pairwise", float(d),
                             [a.sim, "--algorithm", "pairwise-diffusion", "--samples",
                              str(a.samples), "--estimator", a.pairwise_estimators,
                              "--period", d] + base + extra))
                for live in a.live if seed <= live_seeds else []:
                    words = shlex.split(live)
                    if "--period" in words:
                        if d != a.periods.split(",")[0]:
                            continue  # its own period: one run
                        period = words[words.index("--period") + 1]
                    else:
                        period = d
                        words += ["--period", d]
                    jobs.append(("live", float(period),
                                 [a.sim] + words + [
                                     "--infer-live", "--samples", str(a.live_samples or a.samples),
                                     "--estimator", a.live_estimators or a.pairwise_estimators]
                                 + base))
            for method, period, cmd in jobs:
                algorithm = algorithm_of(cmd) if method == "live" else None
                metrics = os.path.join(tmp, "m.jsonl")
                cmd = cmd + ["--metrics", metrics]
                if seed == 1:
                    command = " ".join(cmd[1:]).replace(metrics, "FILE").replace(
                        "--seed 1", "--seed X")
                    if a.relabel:
                        command = command.replace(graph, "file:GRAPH_X")
                    commands.append(command)
                if (seed, method, period, algorithm) in done:
                    continue
                for r in run(cmd, metrics):
                    r.update(seed=seed, method=method, period=period)
                    if algorithm:
                        r["live_algorithm"] = algorithm
                    rows.append(r)
                print("seed %d %s %s done" % (seed, method, period or ""), file=sys.stderr)
    with open(a.out + ".jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")

    def key(r):
        if r["method"] == "sync":
            return "synchronous %s" % r["estimator"]
        if r["method"] == "live":
            return "live %s %s, period %g" % (live_algorithm(r), r["estimator"], r["period"])
        return "pairwise %s, period %g" % (r["estimator"], r["period"])

    by = collections.defaultdict(list)
    series = []
    for r in rows:
        by[(key(r), r["samples"])].append(r)
        if key(r) not in series:
            series.append(key(r))
    samples = sorted({r["samples"] for r in rows})

    def mean(xs):
        xs = [x for x in xs if x is not None]
        return sum(xs) / len(xs) if xs else float("nan")

    lines = ["Commands (seeds 1..%d%s):" % (
        a.seeds, "; the live runs seeds 1..%d" % live_seeds if a.live else ""), ""]
    lines += ["    starling-sim " + c for c in commands]
    if a.relabel:
        lines += ["", "GRAPH_X: `starling-probe cluster --nodes %d --topology %s --seed X`'s "
                  "graph with its nodes renumbered by random.Random(X).shuffle "
                  "(examples/pairwise_inference_curve.py --relabel)." % (a.nodes, spec)]
    lines += ["", "Mean accuracy over the seeds (fraction of the %d observed pairs classified "
              "right), [min, max] over the seeds:" % (a.observe * (a.observe - 1) // 2),
              "", "| samples | " + " | ".join(series) + " |", "|---|" + "---|" * len(series)]
    for n in samples:
        cells = []
        for s in series:
            rs = by.get((s, n), [])
            acc = [r["accuracy"] for r in rs]
            cells.append("%.4f [%.3f, %.3f]" % (mean(acc), min(acc), max(acc)) if rs else "-")
        lines.append("| %d | %s |" % (n, " | ".join(cells)))
    if a.panels:
        for field, title in (("gap", "identifiability gap (min edge score - max non-edge "
                              "score; > 0: separable)"),
                             ("sensitivity", "sensitivity (edges found / edges)"),
                             ("specificity", "specificity (non-edges kept out / non-edges)")):
            lines += ["", "Mean %s over the seeds:" % title, "",
                      "| samples | " + " | ".join(series) + " |", "|---|" + "---|" * len(series)]
            for n in samples:
                cells = []
                for s in series:
                    vals = [r.get(field) for r in by.get((s, n), [])]
                    cells.append(("%+.3g" if field == "gap" else "%.4f") % mean(vals)
                                 if vals else "-")
                lines.append("| %d | %s |" % (n, " | ".join(cells)))
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed; no PNG drawn")
        return 0
    fields = ["accuracy", "gap", "sensitivity", "specificity"] if a.panels else ["accuracy"]
    ylabels = {"accuracy": "accuracy on observed pairs", "gap": "identifiability gap",
               "sensitivity": "sensitivity", "specificity": "specificity"}
    if a.panels:
        fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), sharex=True)
        axes = list(axes.flat)
    else:
        fig, ax = plt.subplots(figsize=(7.5, 4.8))
        axes = [ax]
    for ax, field in zip(axes, fields):
        for s in series:
            xs = [n for n in samples if by.get((s, n))]
            vals = [[r.get(field) for r in by[(s, n)] if r.get(field) is not None] for n in xs]
            keep = [i for i, v in enumerate(vals) if v]
            xs, vals = [xs[i] for i in keep], [vals[i] for i in keep]
            ax.plot(xs, [mean(v) for v in vals], marker="o", markersize=3, label=s,
                    linestyle="--" if s.startswith("synchronous") else
                    ":" if s.startswith("live") else "-")
            ax.fill_between(xs, [min(v) for v in vals], [max(v) for v in vals], alpha=0.12)
        if field == "accuracy":
            ax.axhline(0.99, color="grey", linewidth=0.8, linestyle=":")
        if field == "gap":
            ax.axhline(0.0, color="grey", linewidth=0.8, linestyle=":")
            ax.set_yscale("symlog", linthresh=0.01)
        ax.set_xscale("log")
        ax.set_ylabel(ylabels[field])
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes[-2:] if a.panels else axes:
        ax.set_xlabel("aligned samples n")
    axes[0].legend(fontsize=7)
    what = ("ER p=%g" % a.p) if spec.startswith("er:") else spec
    fig.suptitle("Topology inference: N=%d, %s, %d observed%s, %s (%d seeds%s; band: "
                 "min-max)" % (
        a.nodes, what, a.observe, ", random subset" if a.relabel else "",
        a.clustering or "2-means", a.seeds, ", live %d" % live_seeds if a.live else ""),
        fontsize=10)
    fig.tight_layout()
    fig.savefig(a.out + ".png", dpi=110)
    print("wrote", a.out + ".png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
