#!/usr/bin/env python3
"""Accuracy of topology inference against the number of samples
(docs/results/topology-inference.md).

usage: inference_curve.py SIM_BINARY OUT_PREFIX [--seeds R] [--nodes N] [--p P] [--observe K]
                          [--samples S] [--rho RHO] [--c C]

Runs `SIM_BINARY --algorithm diffusion --estimator all` once per seed (1..R) and writes
OUT_PREFIX.jsonl (every run's metrics, with a "seed" field), OUT_PREFIX.md (the table of mean
accuracy and gap per estimator and sample count, and the command) and OUT_PREFIX.png (mean
accuracy against samples, log x axis, min-max band over the seeds). Needs matplotlib for the
PNG (Debian: /usr/bin/python3 with python3-matplotlib).
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sim")
    ap.add_argument("out")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--p", type=float, default=0.1)
    ap.add_argument("--observe", type=int, default=30)
    ap.add_argument("--samples", type=int, default=200000)
    ap.add_argument("--rho", type=float, default=0.75)
    ap.add_argument("--c", type=float, default=0.9)
    ap.add_argument("--clustering", default="2-means")
    a = ap.parse_args()

    rows = []
    commands = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(1, a.seeds + 1):
            metrics = os.path.join(tmp, "m%d.jsonl" % seed)
            cmd = [a.sim, "--algorithm", "diffusion", "--nodes", str(a.nodes), "--topology",
                   "er:%g" % a.p, "--observe", str(a.observe), "--samples", str(a.samples),
                   "--estimator", "all", "--rho", str(a.rho), "--c", str(a.c), "--seed",
                   str(seed), "--clustering", a.clustering, "--metrics", metrics, "--quiet"]
            commands.append(" ".join(cmd[1:]).replace(metrics, "FILE"))
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            with open(metrics) as f:
                for line in f:
                    r = json.loads(line)
                    r["seed"] = seed
                    rows.append(r)
    with open(a.out + ".jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")

    by = collections.defaultdict(list)
    for r in rows:
        by[(r["estimator"], r["samples"])].append(r)
    estimators = []
    for r in rows:
        if r["estimator"] not in estimators:
            estimators.append(r["estimator"])
    samples = sorted({r["samples"] for r in rows})

    def mean(xs):
        xs = [x for x in xs if x is not None]
        return sum(xs) / len(xs) if xs else float("nan")

    lines = ["Command (seeds 1..%d): `starling-sim %s`" % (a.seeds, commands[0].replace(
        "--seed 1", "--seed X")), "",
        "Mean accuracy over %d seeds (fraction of the %d observed pairs classified right), "
        "and in brackets the mean identifiability gap:" % (a.seeds, a.observe * (a.observe - 1) // 2),
        "",
        "| samples | " + " | ".join(estimators) + " |",
        "|---|" + "---|" * len(estimators)]
    for n in samples:
        cells = []
        for e in estimators:
            rs = by.get((e, n), [])
            if not rs:
                cells.append("-")
                continue
            cells.append("%.4f (%+.4f)" % (mean([r["accuracy"] for r in rs]),
                                           mean([r["gap"] for r in rs])))
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
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for e in estimators:
        xs = [n for n in samples if by.get((e, n))]
        acc = [[r["accuracy"] for r in by[(e, n)]] for n in xs]
        ax.plot(xs, [mean(v) for v in acc], marker="o", label=e)
        ax.fill_between(xs, [min(v) for v in acc], [max(v) for v in acc], alpha=0.15)
    ax.set_xscale("log")
    ax.set_xlabel("samples n")
    ax.set_ylabel("accuracy on observed pairs")
    ax.set_title("N=%d, ER p=%g, %d observed, rho=%g, c=%g, %s (%d seeds)" %
                 (a.nodes, a.p, a.observe, a.rho, a.c, a.clustering, a.seeds), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(a.out + ".png", dpi=110)
    print("wrote", a.out + ".png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
