#!/usr/bin/env python3
"""Target T12: topology inference from the pairwise diffusion against the synchronous diffusion.

usage: pairwise_inference_curve.py SIM_BINARY OUT_PREFIX [--seeds R] [--nodes N] [--p P]
           [--observe K] [--samples S] [--sync-samples S] [--periods 0.25,1]
           [--pairwise-estimators LIST] [--sync-estimators LIST] [-- EXTRA pairwise options]

Runs, for seeds 1..R, `SIM_BINARY --algorithm diffusion` (the synchronous diffusion, ALGORITHMS.md
§5.8, rho 0.75, c 0.9) and `SIM_BINARY --algorithm pairwise-diffusion --period D` for each D
(ASYNC.md A6, the simulator's defaults: decay 0.75, mix 0.5, exchange-prob 1), on the same
graphs (same --seed: same ER graph). Writes OUT_PREFIX.jsonl (every metrics line, with "seed",
"method" and "period"), OUT_PREFIX.md (mean accuracy [min-max over the seeds] per sample count,
and the commands) and OUT_PREFIX.png (accuracy against samples, one line per method, estimator
and period; needs matplotlib, Debian: /usr/bin/python3 with python3-matplotlib).
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile


def run(cmd, metrics):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(metrics) as f:
        return [json.loads(line) for line in f if '"samples"' in line]


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
    ap.add_argument("--observe", type=int, default=30)
    ap.add_argument("--samples", type=int, default=100000)
    ap.add_argument("--sync-samples", type=int, default=None)
    ap.add_argument("--periods", default="1")
    ap.add_argument("--pairwise-estimators", default="granger,residual,log-granger")
    ap.add_argument("--sync-estimators", default="granger,one-lag")
    a = ap.parse_args(argv)
    sync_samples = a.sync_samples or a.samples

    rows, commands = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(1, a.seeds + 1):
            base = ["--nodes", str(a.nodes), "--topology", "er:%g" % a.p, "--observe",
                    str(a.observe), "--seed", str(seed), "--quiet"]
            jobs = [("sync", None, [a.sim, "--algorithm", "diffusion", "--samples",
                                    str(sync_samples), "--estimator", a.sync_estimators] + base)]
            for d in a.periods.split(","):
                jobs.append(("pairwise", float(d),
                             [a.sim, "--algorithm", "pairwise-diffusion", "--samples",
                              str(a.samples), "--estimator", a.pairwise_estimators,
                              "--period", d] + base + extra))
            for method, period, cmd in jobs:
                metrics = os.path.join(tmp, "m.jsonl")
                cmd = cmd + ["--metrics", metrics]
                if seed == 1:
                    commands.append(" ".join(cmd[1:]).replace(metrics, "FILE").replace(
                        "--seed 1", "--seed X"))
                for r in run(cmd, metrics):
                    r.update(seed=seed, method=method, period=period)
                    rows.append(r)
                print("seed %d %s %s done" % (seed, method, period or ""), file=sys.stderr)
    with open(a.out + ".jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")

    def key(r):
        if r["method"] == "sync":
            return "synchronous %s" % r["estimator"]
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

    lines = ["Commands (seeds 1..%d):" % a.seeds, ""]
    lines += ["    starling-sim " + c for c in commands]
    lines += ["", "Mean accuracy over %d seeds (fraction of the %d observed pairs classified "
              "right), [min, max] over the seeds:" % (a.seeds, a.observe * (a.observe - 1) // 2),
              "", "| samples | " + " | ".join(series) + " |", "|---|" + "---|" * len(series)]
    for n in samples:
        cells = []
        for s in series:
            rs = by.get((s, n), [])
            acc = [r["accuracy"] for r in rs]
            cells.append("%.4f [%.3f, %.3f]" % (mean(acc), min(acc), max(acc)) if rs else "-")
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
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for s in series:
        xs = [n for n in samples if by.get((s, n))]
        acc = [[r["accuracy"] for r in by[(s, n)]] for n in xs]
        ax.plot(xs, [mean(v) for v in acc], marker="o", markersize=3, label=s,
                linestyle="--" if s.startswith("synchronous") else "-")
        ax.fill_between(xs, [min(v) for v in acc], [max(v) for v in acc], alpha=0.12)
    ax.axhline(0.99, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xscale("log")
    ax.set_xlabel("aligned samples n")
    ax.set_ylabel("accuracy on observed pairs")
    ax.set_title("T12: N=%d, ER p=%g, %d observed (%d seeds)" % (a.nodes, a.p, a.observe,
                                                                a.seeds), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(a.out + ".png", dpi=110)
    print("wrote", a.out + ".png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
