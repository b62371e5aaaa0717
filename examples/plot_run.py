#!/usr/bin/env python3
"""Draw the plots of a launch_local.py run folder.

usage: plot_run.py RUN_DIR

Writes RUN_DIR/objective.png (global objective at the average model, with the band of the nodes'
own objectives where computed, and the relative gap and test accuracy when known) and
RUN_DIR/consensus.png (consensus distance). The dense curves of RUN_DIR/curves.jsonl
(`starling-probe evaluate` over the nodes' model snapshots) are drawn against wall time, steps
per node and bytes sent; without them, the monitor's RUN_DIR/metrics.jsonl against wall time and
bytes. Lines without "iter" (headers) are skipped. Needs matplotlib (Debian: /usr/bin/python3
with python3-matplotlib); without it, prints a note and exits 0.
"""

import json
import math
import os
import shlex
import sys

BYTES_PER_MB = 1e6
PANEL_WIDTH_IN = 5.5
PANEL_HEIGHT_IN = 3.2
DPI = 110
# (metrics field, axis label, log scale) of the rows of objective.png, when present.
OBJECTIVE_ROWS = (
    ("objective", "global objective F(mean model)", False),
    ("rel_gap", "relative gap (F - F*) / F*", True),
    ("test_accuracy", "test accuracy (mean model)", False),
)
CONSENSUS_ROW = ("consensus", "consensus distance", True)
X_AXES = (("time", "wall time since the monitor started (s)", 1.0),
          ("bytes", "bytes sent by all nodes (MB)", BYTES_PER_MB))
CURVE_X_AXES = (("time", "wall time since the first node started (s)", 1.0),
                ("iter", "steps per node", 1.0),
                ("bytes", "bytes sent by all nodes (MB)", BYTES_PER_MB))
BAND_FIELDS = ("node_objective_min", "node_objective_max")


def read_metrics(path):
    """Returns the JSON records of a metrics file with an "iter" (not headers), skipping lines
    that do not parse."""
    records = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and "iter" in record:
                records.append(record)
    return records


def command_options(run_dir):
    """Returns {option: value} from the command lines in command.txt (first occurrence wins)."""
    options = {}
    try:
        with open(os.path.join(run_dir, "command.txt")) as f:
            lines = [line for line in f if line.strip() and not line.startswith("#")]
    except OSError:
        return options
    for line in lines:
        tokens = shlex.split(line)
        for i, token in enumerate(tokens):
            if not token.startswith("--"):
                continue
            if "=" in token:
                name, value = token.split("=", 1)
            elif i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
                name, value = token, tokens[i + 1]
            else:
                continue
            options.setdefault(name, value)
    return options


def cluster_size(run_dir):
    """Returns (nodes, edges) counted in cluster.conf, or None if it cannot be read."""
    nodes = edges = 0
    try:
        with open(os.path.join(run_dir, "cluster.conf")) as f:
            for line in f:
                fields = line.split("#", 1)[0].split()
                nodes += bool(fields) and fields[0] == "node"
                edges += bool(fields) and fields[0] == "edge"
    except OSError:
        return None
    return nodes, edges


def run_title(run_dir):
    """Returns a one-line description of the run: algorithm, problem, data, nodes, topology."""
    options = command_options(run_dir)
    parts = [options.get("--algorithm", "extra"), options.get("--problem", "logistic")]
    if "--data" in options:
        data = os.path.normpath(options["--data"])
        parts.append(os.path.join(os.path.basename(os.path.dirname(data)),
                                  os.path.basename(data)))
    size = cluster_size(run_dir)
    nodes = size[0] if size else options.get("--nodes", "?")
    topology = options.get("--topology", "ring")
    graph = "%s nodes, %s" % (nodes, topology)
    if size:
        graph += " (%d edges)" % size[1]
    parts.append(graph)
    return " | ".join(str(p) for p in parts)


def series(records, x_field, x_scale, y_field, log_y):
    """Returns (xs, ys) of the records that have finite values (positive ones for log_y)."""
    xs, ys = [], []
    for r in records:
        x, y = r.get(x_field), r.get(y_field)
        if not isinstance(x, (int, float)) or not isinstance(y, (int, float)):
            continue
        if not (math.isfinite(x) and math.isfinite(y)) or (log_y and y <= 0):
            continue
        xs.append(x / x_scale)
        ys.append(y)
    return xs, ys


def final_record(records):
    """Returns the record marked "final" (computed from every node's final model), or None."""
    finals = [r for r in records if r.get("final")]
    return finals[-1] if finals else None


def draw_band(ax, records, x_field, x_scale):
    """Shades min..max of the nodes' own objectives where the records have them."""
    xs, lo, hi = [], [], []
    for r in records:
        x, a, b = r.get(x_field), r.get(BAND_FIELDS[0]), r.get(BAND_FIELDS[1])
        if all(isinstance(v, (int, float)) and math.isfinite(v) for v in (x, a, b)):
            xs.append(x / x_scale)
            lo.append(a)
            hi.append(b)
    if len(xs) >= 2:
        ax.fill_between(xs, lo, hi, color="tab:blue", alpha=0.18, linewidth=0,
                        label="nodes' own models (min..max)")


def draw_panel(ax, records, x_axis, row):
    """Draws one metric against one x axis, marking the final point."""
    x_field, x_label, x_scale = x_axis
    y_field, y_label, log_y = row
    if y_field == "objective":
        draw_band(ax, records, x_field, x_scale)
    xs, ys = series(records, x_field, x_scale, y_field, log_y)
    ax.plot(xs, ys, "-", color="tab:blue", linewidth=1.5, marker="." if len(xs) < 60 else None)
    final = final_record(records)
    if final is not None:
        fx, fy = series([final], x_field, x_scale, y_field, log_y)
        if fx:
            ax.plot(fx, fy, "*", color="tab:red", markersize=11, label="final models")
            ax.legend(loc="best", fontsize=8)
    if log_y and ys:
        ax.set_yscale("log")
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.grid(True, which="major", alpha=0.35)
    if not xs:
        ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", va="center")


def draw_figure(plt, records, rows, title, path, x_axes=X_AXES):
    """Writes a figure with one row per metric and one column per x axis."""
    fig, axes = plt.subplots(len(rows), len(x_axes), squeeze=False,
                             figsize=(PANEL_WIDTH_IN * len(x_axes), PANEL_HEIGHT_IN * len(rows)))
    for r, row in enumerate(rows):
        for c, x_axis in enumerate(x_axes):
            draw_panel(axes[r][c], records, x_axis, row)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    print("wrote %s" % path)


def present_rows(records, rows):
    """Returns the rows whose field appears in at least one record."""
    return [row for row in rows if any(row[0] in r for r in records)]


def load_pyplot():
    """Returns matplotlib.pyplot with the Agg backend, or None if matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def main(argv):
    """Entry point; returns the exit code."""
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    run_dir = argv[1]
    metrics_path = os.path.join(run_dir, "metrics.jsonl")
    curves_path = os.path.join(run_dir, "curves.jsonl")
    plt = load_pyplot()
    if plt is None:
        print("note: no plots: matplotlib is not available to %s (on Debian: apt-get install "
              "python3-matplotlib, and run plot_run.py with /usr/bin/python3)" % sys.executable)
        return 0
    records = read_metrics(curves_path) if os.path.isfile(curves_path) else []
    x_axes, source = CURVE_X_AXES, "curves.jsonl: %d points from the nodes' snapshots"
    if not records:
        x_axes, source = X_AXES, "metrics.jsonl: %d monitor evaluations"
        if not os.path.isfile(metrics_path):
            print("plot_run.py: error: %s: not found" % metrics_path, file=sys.stderr)
            return 1
        records = read_metrics(metrics_path)
        if not records:
            print("plot_run.py: error: %s: no metrics records" % metrics_path, file=sys.stderr)
            return 1
    title = run_title(run_dir) + "\n" + source % len(records)
    if final_record(records) is None:
        title += " (no final record: the run was stopped before every node finished)"
    draw_figure(plt, records, present_rows(records, OBJECTIVE_ROWS) or [OBJECTIVE_ROWS[0]], title,
                os.path.join(run_dir, "objective.png"), x_axes)
    draw_figure(plt, records, [CONSENSUS_ROW], title, os.path.join(run_dir, "consensus.png"),
                x_axes)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
