#!/usr/bin/env python3
"""Write the report of a launch_local.py run folder: RUN_DIR/report.md and RUN_DIR/report.html.

usage: run_report.py RUN_DIR

The report says what was run and what came of it, from the files the run left and nothing else:
  command.txt     the launcher's command line and every process's command line (run options)
  cluster.conf    the nodes, their endpoints and the graph
  metrics.jsonl   the monitor's evaluations at the average model (the final table)
  monitor.log     the monitor's summary block (f*, the centralized solver's test accuracy)
  node-K.jsonl    daemon K's metrics lines (steps, exchanges, bytes, blocked time, rejects)
  node-K.log      daemon K's log (resumes from a checkpoint: "restarts")
  *.png           every plot in the folder
A figure that no file holds is written "not recorded", never guessed. Lines of the JSON-lines
files without an "iter" key (a header object) are not records and are skipped.

report.html is one self-contained page: the CSS is inline, the plots are embedded as data: URIs,
and its only links are to its own sections. Python 3 standard library only.
"""

import base64
import html
import json
import math
import os
import re
import shlex
import sys

NOT_RECORDED = "not recorded"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
NODE_JSONL = re.compile(r"^node-(\d+)\.jsonl$")
NODE_LOG = "node-%d.log"
# What a daemon logs when it resumes from a checkpoint (node/daemon/pairwise_node.cc and
# round_node.cc: "node K resumed from PATH ...").
RESUME_MARK = re.compile(r"\bnode \d+ resumed from\b")
SUMMARY_MARK = "summary"
MAX_JSONL_BYTES = 512 * 1024 * 1024  # a metrics file larger than this is not read whole

# (key in the metrics record, label) of the final table, in order.
FINAL_ROWS = (
    ("objective", "global objective F(mean model)"),
    ("f_star", "centralized optimum f*"),
    ("rel_gap", "relative gap (F - f*) / f*"),
    ("train_accuracy", "train accuracy (mean model)"),
    ("test_accuracy", "test accuracy (mean model)"),
    ("reference_test_accuracy", "test accuracy of the centralized solution"),
    ("consensus", "consensus distance"),
    ("iter", "steps (slowest node)"),
    ("comm_rounds", "exchanges per node (mean)"),
    ("bytes", "bytes sent by all nodes"),
    ("time", "time since the monitor started (s)"),
)
# (key in a node's last metrics line, column title) of the per-node table, in order; "restarts"
# comes from node-K.log.
NODE_COLUMNS = (
    ("iter", "steps"),
    ("comm_rounds", "exchanges"),
    ("bytes_sent", "bytes sent"),
    ("bytes_received", "bytes received"),
    ("compute_s", "compute s"),
    ("blocked_s", "blocked s"),
    ("wait_s", "wait s"),
    ("rejected", "rejects"),
    ("restarts", "restarts"),
    ("final", "finished"),
)
# Options of a command line that are not run options (paths the launcher chose per process).
NOT_RUN_OPTIONS = frozenset(["--cluster", "--id", "--metrics", "--final-model", "--secret-key",
                             "--out", "--keys"])


class RunFolder(object):
    """What a run folder holds, read once; every field is None when its file is missing."""

    def __init__(self, run_dir):
        self.run_dir = run_dir
        self.notes = []  # what could not be read, and why
        self.commands = self._read_commands()
        self.cluster = self._read_cluster()
        self.metrics_header, self.metrics = self._read_jsonl("metrics.jsonl")
        self.summary = self._read_summary()
        self.nodes = self._read_nodes()
        self.plots = sorted(name for name in os.listdir(run_dir)
                            if name.lower().endswith(".png")
                            and os.path.isfile(os.path.join(run_dir, name)))

    def path(self, name):
        return os.path.join(self.run_dir, name)

    def _read_commands(self):
        """Returns [(title, argv)] from command.txt ('# title' line, then the command), or None."""
        try:
            with open(self.path("command.txt"), errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            return None
        sections, title = [], None
        for line in lines:
            if line.startswith("#"):
                title = line[1:].strip()
            elif line.strip():
                try:
                    argv = shlex.split(line)
                except ValueError as e:
                    self.notes.append("command.txt: cannot split %r: %s" % (line[:80], e))
                    continue
                sections.append((title or "", argv))
                title = None
        return sections

    def _read_cluster(self):
        """Returns {"nodes": [(id, endpoint, has_key)], "edges": set, "probes": n}, or None."""
        try:
            with open(self.path("cluster.conf"), errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            return None
        nodes, edges, probes = [], set(), 0
        for number, line in enumerate(lines, 1):
            fields = re.split(r"\s+#", " " + line, 1)[0].split()
            if not fields:
                continue
            try:
                if fields[0] == "node" and len(fields) >= 3:
                    nodes.append((int(fields[1]), fields[2], len(fields) >= 4))
                elif fields[0] == "edge" and len(fields) == 3:
                    u, v = int(fields[1]), int(fields[2])
                    edges.add((min(u, v), max(u, v)))
                elif fields[0] == "probe":
                    probes += 1
                else:
                    self.notes.append("cluster.conf:%d: line not understood" % number)
            except ValueError:
                self.notes.append("cluster.conf:%d: not an integer id" % number)
        return {"nodes": sorted(nodes), "edges": edges, "probes": probes}

    def _read_jsonl(self, name):
        """Returns (header object or None, [records with "iter"]), or (None, None) if missing."""
        path = self.path(name)
        try:
            size = os.path.getsize(path)
            f = open(path, errors="replace")
        except OSError:
            return None, None
        header, records, bad = None, [], 0
        with f:
            if size > MAX_JSONL_BYTES:
                self.notes.append("%s: %d bytes, only the first %d read"
                                  % (name, size, MAX_JSONL_BYTES))
            for line in iter(lambda: f.readline(), ""):
                if f.tell() > MAX_JSONL_BYTES:
                    break
                line = line.strip()
                if not line:
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    bad += 1
                    continue
                if not isinstance(record, dict):
                    bad += 1
                elif "iter" in record:
                    records.append(record)
                elif header is None and not records:
                    header = record
        if bad:
            self.notes.append("%s: %d line(s) that are not JSON objects were skipped" % (name, bad))
        return header, records

    def _read_summary(self):
        """Returns {key: value text} of the monitor's last summary block, or None."""
        try:
            with open(self.path("monitor.log"), errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            return None
        starts = [i for i, line in enumerate(lines) if line.strip() == SUMMARY_MARK]
        if not starts:
            return {}
        values = {}
        for line in lines[starts[-1] + 1:]:
            parts = line.split(None, 1)
            if len(parts) == 2:
                values.setdefault(parts[0].rstrip(":"), []).append(parts[1].strip())
        return values

    def _read_nodes(self):
        """Returns {node id: {"last": last record or None, "lines": n, "restarts": n or None}}."""
        ids = set()
        for name in os.listdir(self.run_dir):
            match = NODE_JSONL.match(name)
            if match:
                ids.add(int(match.group(1)))
        if self.cluster:
            ids.update(node for node, _, _ in self.cluster["nodes"])
        nodes = {}
        for node in sorted(ids):
            header, records = self._read_jsonl("node-%d.jsonl" % node)
            nodes[node] = {
                "header": header,
                "last": records[-1] if records else None,
                "lines": None if records is None else len(records),
                "restarts": self._count_restarts(node),
            }
        return nodes

    def _count_restarts(self, node):
        """Resumes from a checkpoint that daemon `node` logged, or None without its log."""
        try:
            with open(self.path(NODE_LOG % node), errors="replace") as f:
                return sum(1 for line in f if RESUME_MARK.search(line))
        except OSError:
            return None

    # --- what the report shows ---------------------------------------------------------------

    def launcher_command(self):
        """The launcher's argv, or None."""
        for title, argv in self.commands or []:
            if title.startswith("launcher"):
                return argv
        return None

    def process_options(self, prefix, skip):
        """[(option, value)] of the first command.txt section whose title starts with prefix."""
        for title, argv in self.commands or []:
            if title.startswith(prefix):
                return [(name, value) for name, value in option_pairs(argv[skip:])
                        if name not in NOT_RUN_OPTIONS]
        return None

    def run_options(self):
        """[(option, value or None for a switch, given to)]: the monitor's and node 0's options.

        "given to" is "monitor and daemons" when both lines have the option with that value, else
        "monitor only" or "daemons only"; None when command.txt has neither line.
        """
        monitor = self.process_options("monitor", 2)  # starling-probe monitor ...
        daemon = self.process_options("node 0", 1)    # starlingd ...
        if monitor is None and daemon is None:
            return None
        if monitor is None or daemon is None:
            only = "monitor" if daemon is None else "node 0"
            return [(n, v, "%s (the other line is %s)" % (only, NOT_RECORDED))
                    for n, v in (monitor or daemon)]
        rows = []
        for name, value in monitor:
            rows.append((name, value, "monitor and daemons" if (name, value) in daemon
                         else "monitor only"))
        rows += [(name, value, "daemons only") for name, value in daemon
                 if (name, value) not in monitor]
        return rows

    def launcher_option(self, name):
        """The value of one of the launcher's own options (e.g. --topology), or None."""
        for option, value in option_pairs((self.launcher_command() or [])[2:]):
            if option == name:
                return value
        return None

    def final_record(self):
        """(the metrics record of the final models, or the last one, and whether it is final)."""
        if not self.metrics:
            return None, False
        finals = [r for r in self.metrics if r.get("final")]
        return (finals[-1], True) if finals else (self.metrics[-1], False)

    def final_values(self):
        """{key of FINAL_ROWS: number or None}."""
        record, _ = self.final_record()
        values = {key: number(record.get(key)) if record else None for key, _ in FINAL_ROWS}
        summary = self.summary or {}
        for key in ("f_star", "reference_test_accuracy", "train_accuracy"):
            if values.get(key) is None and summary.get(key):
                values[key] = number(summary[key][-1])
        return values


def option_pairs(argv):
    """[(--name, value or None)] of a command line's options, in order."""
    pairs = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if not token.startswith("--"):
            i += 1
            continue
        if "=" in token:
            name, value = token.split("=", 1)
            pairs.append((name, value))
            i += 1
        elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            pairs.append((token, argv[i + 1]))
            i += 2
        else:
            pairs.append((token, None))
            i += 1
    return pairs


def number(value):
    """A finite int or float from a JSON value or a text, else None."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            parsed = float(value)
        except ValueError:
            return None
        return parsed if math.isfinite(parsed) else None
    return None


def fmt(value, integer=False):
    """The text of a figure: integers exactly, others with 10 significant digits."""
    if value is None:
        return NOT_RECORDED
    if integer or (isinstance(value, int) and not isinstance(value, bool)):
        return "%d" % value
    return "%.10g" % value


INTEGER_KEYS = frozenset(["iter", "comm_rounds", "bytes", "bytes_sent", "bytes_received",
                          "rejected", "restarts"])


def node_row(info, key):
    """The text of one per-node figure."""
    if key == "restarts":
        return fmt(info["restarts"], integer=True)
    last = info["last"]
    if last is None:
        return NOT_RECORDED
    if key == "final":
        return NOT_RECORDED if "final" not in last else ("yes" if last["final"] else "no")
    return fmt(number(last.get(key)), integer=key in INTEGER_KEYS)


def headline(run):
    """One line: what the run reached, or why there is nothing to say."""
    values = run.final_values()
    record, final = run.final_record()
    if record is None:
        return "No evaluation was recorded (metrics.jsonl is missing or has no records)."
    parts = []
    if values["test_accuracy"] is not None:
        text = "test accuracy %.4f" % values["test_accuracy"]
        if values["reference_test_accuracy"] is not None:
            text += " (centralized solver: %.4f)" % values["reference_test_accuracy"]
        parts.append(text)
    if values["rel_gap"] is not None:
        parts.append("relative gap to f* %.4g" % values["rel_gap"])
    parts.append("objective %s" % fmt(values["objective"]))
    text = ", ".join(parts)
    if not final:
        text += " (last evaluation, not the final models: the run stopped before every node " \
                "finished)"
    return text


def title_of(run):
    """algorithm | problem | nodes, topology."""
    options = {name: value for name, value, _ in run.run_options() or []}
    parts = [options.get("--algorithm") or "algorithm " + NOT_RECORDED,
             options.get("--problem") or "problem " + NOT_RECORDED]
    nodes = len(run.cluster["nodes"]) if run.cluster else None
    topology = run.launcher_option("--topology")
    parts.append("%s nodes%s" % (nodes if nodes is not None else "?",
                                 ", " + topology if topology else ""))
    return " | ".join(parts)


# --- the document, as a list of blocks both writers render ----------------------------------
# ("h", level, text, anchor) | ("p", text) | ("code", text) | ("table", header, rows)
# | ("img", file name) | ("list", [text])

def blocks(run):
    """The report as blocks."""
    out = [("h", 1, "Starling run report: " + title_of(run), "top"),
           ("p", "**Result:** " + headline(run)),
           ("p", "Run folder: `%s`" % run.run_dir)]
    out += command_blocks(run)
    out += options_blocks(run)
    out += cluster_blocks(run)
    out += final_blocks(run)
    out += node_blocks(run)
    out += plot_blocks(run)
    if run.notes:
        out += [("h", 2, "Notes on the files", "notes"), ("list", run.notes)]
    return out


def command_blocks(run):
    out = [("h", 2, "Command", "command")]
    argv = run.launcher_command()
    if argv is None:
        out.append(("p", "The launcher's command line: " + NOT_RECORDED + " (no command.txt)."))
    else:
        out.append(("code", " ".join(shlex.quote(a) for a in argv)))
    return out


def options_blocks(run):
    out = [("h", 2, "Run options", "options")]
    options = run.run_options()
    if options is None:
        out.append(("p", "Run options: " + NOT_RECORDED + "."))
    else:
        out.append(("p", "From command.txt: the monitor's command line and node 0's (the "
                    "launcher gives every daemon the same run options)."))
        out.append(("table", ["option", "value", "given to"],
                    [[name, "(switch)" if value is None else value, given]
                     for name, value, given in options]))
    header = run.metrics_header or next(
        (n["header"] for n in run.nodes.values() if n["header"]), None)
    if header:
        out.append(("p", "Header of the metrics files:"))
        out.append(("table", ["field", "value"],
                    [[str(k), json.dumps(v) if not isinstance(v, str) else v]
                     for k, v in header.items()]))
    return out


def cluster_blocks(run):
    out = [("h", 2, "Cluster", "cluster")]
    if run.cluster is None:
        out.append(("p", "The cluster: " + NOT_RECORDED + " (no cluster.conf)."))
        return out
    nodes, edges = run.cluster["nodes"], run.cluster["edges"]
    topology = run.launcher_option("--topology")
    keyed = sum(1 for _, _, has_key in nodes if has_key)
    out.append(("p", "%d nodes, %d edges, topology %s; %d of %d nodes with a CURVE public key, "
                "%d probe key(s)." % (len(nodes), len(edges), topology or NOT_RECORDED, keyed,
                                      len(nodes), run.cluster["probes"])))
    neighbours = {node: [] for node, _, _ in nodes}
    for u, v in sorted(edges):
        neighbours.setdefault(u, []).append(v)
        neighbours.setdefault(v, []).append(u)
    out.append(("table", ["node", "endpoint", "degree", "neighbours"],
                [[str(node), endpoint, str(len(neighbours[node])),
                  " ".join(str(m) for m in sorted(neighbours[node]))]
                 for node, endpoint, _ in nodes]))
    return out


def final_blocks(run):
    out = [("h", 2, "Final result", "final")]
    record, final = run.final_record()
    if record is None:
        out.append(("p", "The monitor's evaluations: " + NOT_RECORDED + " (metrics.jsonl is "
                    "missing or empty)."))
    else:
        out.append(("p", "At the average of %s (metrics.jsonl, %d evaluation%s in all); f* "
                    "and the centralized solution's accuracy from the monitor's summary."
                    % ("every node's final model" if final else
                       "the models of the last evaluation (no final record: the run stopped "
                       "before every node finished)", len(run.metrics),
                       "" if len(run.metrics) == 1 else "s")))
    values = run.final_values()
    out.append(("table", ["figure", "value"],
                [[label, fmt(values[key], integer=key in INTEGER_KEYS)]
                 for key, label in FINAL_ROWS]))
    rejected = (run.summary or {}).get("rejected")
    if rejected:
        out.append(("p", "Telemetry the monitor rejected: %s" % rejected[-1]))
    incomplete = (run.summary or {}).get("incomplete")
    if incomplete:
        out.append(("list", ["incomplete: " + line for line in incomplete]))
    return out


def node_blocks(run):
    out = [("h", 2, "Nodes", "nodes"),
           ("p", "From each daemon's last metrics line (node-K.jsonl); steps are local steps for "
            "SwarmSGD and iterations for round-based methods, exchanges its comm_rounds, blocked "
            "s the time not computing nor reporting; restarts counts the resumes from a "
            "checkpoint in node-K.log.")]
    if not run.nodes:
        out.append(("p", "Per-node figures: " + NOT_RECORDED + " (no node-K.jsonl)."))
        return out
    rows = [[str(node)] + [node_row(info, key) for key, _ in NODE_COLUMNS]
            for node, info in sorted(run.nodes.items())]
    out.append(("table", ["node"] + [title for _, title in NODE_COLUMNS], rows))
    return out


def plot_blocks(run):
    out = [("h", 2, "Plots", "plots")]
    if not run.plots:
        out.append(("p", "Plots: none in the run folder."))
    for name in run.plots:
        out += [("h", 3, name, "plot-" + re.sub(r"[^A-Za-z0-9_-]", "-", name)), ("img", name)]
    return out


# --- writers -------------------------------------------------------------------------------

def md_cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def render_md(doc):
    lines = []
    for block in doc:
        kind = block[0]
        if kind == "h":
            lines += ["#" * block[1] + " " + block[2], ""]
        elif kind == "p":
            lines += [block[1], ""]
        elif kind == "code":
            lines += ["```", block[1], "```", ""]
        elif kind == "table":
            header, rows = block[1], block[2]
            lines.append("| " + " | ".join(md_cell(h) for h in header) + " |")
            lines.append("|" + "|".join("---" for _ in header) + "|")
            lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
            lines.append("")
        elif kind == "img":
            lines += ["![%s](%s)" % (block[1], block[1]), ""]
        elif kind == "list":
            lines += ["- " + item for item in block[1]] + [""]
    return "\n".join(lines)


CSS = """
body { font-family: sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.6em; text-align: left; }
td { font-variant-numeric: tabular-nums; }
th { background: #eee; }
pre { background: #f4f4f4; padding: 0.6em; white-space: pre-wrap; word-break: break-all; }
img { max-width: 100%; border: 1px solid #ddd; }
nav a { margin-right: 1em; }
"""


def inline_html(text):
    """Escapes text; `code` and **bold** become <code> and <strong>."""
    out = html.escape(text)
    out = re.sub(r"`([^`]*)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]*)\*\*", r"<strong>\1</strong>", out)


def render_html(doc, run_dir):
    title = next(block[2] for block in doc if block[0] == "h")
    sections = [(block[3], block[2]) for block in doc if block[0] == "h" and block[1] == 2]
    parts = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
             "<title>%s</title>" % html.escape(title), "<style>%s</style>" % CSS, "</head>",
             "<body>"]
    for block in doc:
        kind = block[0]
        if kind == "h":
            parts.append('<h%d id="%s">%s</h%d>' % (block[1], block[3], inline_html(block[2]),
                                                  block[1]))
            if block[1] == 1:
                parts.append("<nav>" + "".join('<a href="#%s">%s</a>' % (a, html.escape(t))
                                               for a, t in sections) + "</nav>")
        elif kind == "p":
            parts.append("<p>%s</p>" % inline_html(block[1]))
        elif kind == "code":
            parts.append("<pre>%s</pre>" % html.escape(block[1]))
        elif kind == "table":
            parts.append("<table><tr>%s</tr>" % "".join("<th>%s</th>" % html.escape(h)
                                                         for h in block[1]))
            for row in block[2]:
                parts.append("<tr>%s</tr>" % "".join("<td>%s</td>" % html.escape(c) for c in row))
            parts.append("</table>")
        elif kind == "img":
            with open(os.path.join(run_dir, block[1]), "rb") as f:
                data = base64.b64encode(f.read()).decode("ascii")
            parts.append('<p><img src="data:image/png;base64,%s" alt="%s"></p>'
                         % (data, html.escape(block[1])))
        elif kind == "list":
            parts.append("<ul>%s</ul>" % "".join("<li>%s</li>" % inline_html(item)
                                                 for item in block[1]))
    parts += ['<p><a href="#top">top</a></p>', "</body>", "</html>", ""]
    return "\n".join(parts)


def write_atomically(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def write_report(run_dir):
    """Writes report.md and report.html into run_dir; returns their paths."""
    run = RunFolder(run_dir)
    doc = blocks(run)
    md_path, html_path = os.path.join(run_dir, REPORT_MD), os.path.join(run_dir, REPORT_HTML)
    write_atomically(md_path, render_md(doc))
    write_atomically(html_path, render_html(doc, run_dir))
    return md_path, html_path


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    run_dir = os.path.abspath(argv[1])
    if not os.path.isdir(run_dir):
        print("run_report.py: error: %s: not a folder" % run_dir, file=sys.stderr)
        return 1
    try:
        paths = write_report(run_dir)
    except OSError as e:
        print("run_report.py: error: %s: %s" % (e.filename or run_dir, e.strerror),
              file=sys.stderr)
        return 1
    print("wrote %s and %s" % paths)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
