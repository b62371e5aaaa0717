#!/usr/bin/python3
"""Merges the metrics of several starling-sim runs into one JSON-lines file, writes a Markdown
table of when each run first reached given thresholds, and plots the runs.

Usage:
  report.py --name NAME --outdir DIR --metric bregman|rel_gap --thresholds 1e-2,1e-4
            [--paper 'LABEL=v1,v2,...'] [--title TEXT] LABEL=FILE.jsonl ...

Writes DIR/NAME.jsonl (every input line plus "run": LABEL), DIR/NAME.md (the table) and
DIR/NAME.png or DIR/PLOT.png (the metric against iterations and against communication rounds,
log scale).
The --paper values (one per threshold, "-" for none) are printed next to the measured ones.
Run with Debian's /usr/bin/python3 (matplotlib)."""
import argparse
import json
import os
import sys


def first_crossing(rows, metric, threshold):
    for r in rows:
        v = r.get(metric)
        if v is not None and v <= threshold:
            return r
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--name", required=True)
    p.add_argument("--outdir", required=True)
    p.add_argument("--metric", required=True)
    p.add_argument("--thresholds", required=True)
    p.add_argument("--paper", action="append", default=[], help="LABEL=v1,v2,... (per threshold)")
    p.add_argument("--ref-label", default="paper", help="what the --paper numbers are called")
    p.add_argument("--title", default="")
    p.add_argument("--append", action="store_true",
                   help="append to NAME.jsonl and NAME.md instead of replacing them")
    p.add_argument("--plot", default="", help="plot file name without .png (default NAME)")
    p.add_argument("runs", nargs="+", help="LABEL=FILE.jsonl")
    a = p.parse_args()
    thresholds = [float(t) for t in a.thresholds.split(",")]
    paper = {}
    for spec in a.paper:
        label, _, values = spec.rpartition("=")
        paper[label] = values.split(",")

    runs = []
    for spec in a.runs:
        label, _, path = spec.rpartition("=")
        if not path:
            sys.exit("report.py: expected LABEL=FILE, got %r" % spec)
        try:
            with open(path) as f:
                rows = [json.loads(line) for line in f if line.strip()]
            rows = [r for r in rows if "iter" in r]  # not the simulator's header line
        except (OSError, ValueError) as e:
            sys.exit("report.py: %s: %s" % (path, e))
        if not rows:
            sys.exit("report.py: %s: no metrics lines" % path)
        runs.append((label, rows))

    os.makedirs(a.outdir, exist_ok=True)
    mode = "a" if a.append else "w"
    with open(os.path.join(a.outdir, a.name + ".jsonl"), mode) as out:
        for label, rows in runs:
            for r in rows:
                out.write(json.dumps(dict(r, run=label)) + "\n")

    header = ["run", "final " + a.metric, "iterations"]
    for t in thresholds:
        header.append("to %g: iterations / comm" % t)
    lines = []
    if a.title:
        lines.append("### " + a.title + "\n")
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for label, rows in runs:
        last = rows[-1]
        cells = [label, "%.3g" % last.get(a.metric, float("nan")), str(last["iter"])]
        for k, t in enumerate(thresholds):
            hit = first_crossing(rows, a.metric, t)
            cell = "%d / %d" % (hit["iter"], hit["comm_rounds"]) if hit else "not reached"
            if label in paper and k < len(paper[label]) and paper[label][k] != "-":
                cell += " (%s: %s)" % (a.ref_label, paper[label][k])
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    with open(os.path.join(a.outdir, a.name + ".md"), mode) as out:
        out.write("\n".join(lines) + "\n\n")
    print("\n".join(lines))

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report.py: matplotlib missing (python3-matplotlib): no plot", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for label, rows in runs:
        pts = [(r["iter"], r["comm_rounds"], r[a.metric]) for r in rows
               if r.get(a.metric) is not None and r[a.metric] > 0]
        if not pts:
            continue
        axes[0].semilogy([q[0] for q in pts], [q[2] for q in pts], label=label)
        axes[1].semilogy([q[1] for q in pts], [q[2] for q in pts], label=label)
    axes[0].set_xlabel("iterations")
    axes[1].set_xlabel("communication rounds")
    for ax in axes:
        ax.set_ylabel(a.metric)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    if a.title:
        fig.suptitle(a.title)
    fig.tight_layout()
    png = os.path.join(a.outdir, (a.plot or a.name) + ".png")
    fig.savefig(png, dpi=110)
    print("wrote " + png)


if __name__ == "__main__":
    main()
