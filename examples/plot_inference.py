#!/usr/bin/env python3
"""Draw the result of `starling-probe infer` (or any folder with its edges.tsv).

usage: plot_inference.py OUT_DIR

Reads OUT_DIR/edges.tsv (estimator, node_i, node_j, score, inferred, true) and writes
OUT_DIR/inference.png: the observed nodes on a circle, the true edges among them on the left and
the first estimator's inferred edges on the right (green: correct, red: inferred but absent,
grey dashed: missed), with the accuracy in the title. Needs matplotlib (Debian:
/usr/bin/python3 with python3-matplotlib); without it, prints a note and exits 0.
"""

import csv
import math
import os
import sys

DPI = 110
PANEL_IN = 4.6


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    folder = sys.argv[1]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_inference.py: matplotlib is not installed; no PNG drawn")
        return 0
    rows = []
    with open(os.path.join(folder, "edges.tsv"), newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            rows.append(row)
    if not rows:
        print("plot_inference.py: edges.tsv is empty", file=sys.stderr)
        return 1
    estimator = rows[0]["estimator"]
    rows = [r for r in rows if r["estimator"] == estimator]
    nodes = sorted({int(r["node_i"]) for r in rows} | {int(r["node_j"]) for r in rows})
    pos = {}
    for k, node in enumerate(nodes):
        angle = 2 * math.pi * k / len(nodes) + math.pi / 2
        pos[node] = (math.cos(angle), math.sin(angle))
    correct = sum(int(r["inferred"]) == int(r["true"]) for r in rows)

    fig, axes = plt.subplots(1, 2, figsize=(2 * PANEL_IN, PANEL_IN + 0.4))
    panels = (("true edges among the observed nodes", "true"),
              ("inferred (%s): accuracy %.3f" % (estimator, correct / len(rows)), "inferred"))
    for ax, (title, which) in zip(axes, panels):
        for r in rows:
            i, j = int(r["node_i"]), int(r["node_j"])
            inferred, true = int(r["inferred"]), int(r["true"])
            xs, ys = (pos[i][0], pos[j][0]), (pos[i][1], pos[j][1])
            if which == "true":
                if true:
                    ax.plot(xs, ys, color="black", lw=1.6, zorder=1)
            elif inferred and true:
                ax.plot(xs, ys, color="tab:green", lw=1.6, zorder=1)
            elif inferred:
                ax.plot(xs, ys, color="tab:red", lw=1.6, zorder=1)
            elif true:
                ax.plot(xs, ys, color="grey", lw=1.2, ls="--", zorder=1)
        for node, (x, y) in pos.items():
            ax.scatter([x], [y], s=340, color="white", edgecolors="black", zorder=2)
            ax.annotate(str(node), (x, y), ha="center", va="center", fontsize=9, zorder=3)
        ax.set_title(title, fontsize=10)
        ax.set_aspect("equal")
        ax.set_xlim(-1.25, 1.25)
        ax.set_ylim(-1.25, 1.25)
        ax.axis("off")
    fig.text(0.5, 0.02, "green: inferred and true   red: inferred, not true   "
             "grey dashed: true, missed", ha="center", fontsize=8)
    out = os.path.join(folder, "inference.png")
    fig.savefig(out, dpi=DPI)
    print("wrote", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
