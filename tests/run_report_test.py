#!/usr/bin/env python3
"""Tests of examples/run_report.py (the run report) and of the report page in a real browser.

usage: run_report_test.py MODE BUILD_DIR
  files             a run folder this test writes by hand (header lines, a missing node file, a
                    garbage line, resumes in a log, no final record): the report shows exactly
                    the numbers written, and "not recorded" where there are none
  launcher          a real launch_local.py run (3 daemons, SwarmSGD, data this test writes, ports
                    from the PortBase lock files): the launcher wrote report.md/.html, and their
                    tables equal the numbers in the files, read here independently; then the
                    page in headless Chromium: it loads, every image decodes, no broken link
  browser-negative  the browser check itself fails on a broken image, a dangling fragment and an
                    outside link (so that a clean verdict means something)
Exit 0 passed, 1 failed, 77 skipped (Chromium cannot start; the message says why).
"""

import base64
import fcntl
import json
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(TESTS_DIR)
REPORT_TOOL = os.path.join(REPO_DIR, "examples", "run_report.py")
LAUNCHER = os.path.join(REPO_DIR, "examples", "launch_local.py")
sys.path.insert(0, TESTS_DIR)
import browser_check  # noqa: E402

SKIP = 77
NOT_RECORDED = "not recorded"
LAUNCHER_TIMEOUT_S = 600


class TestFailure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise TestFailure(message)


def close(text, expected, what):
    """The report's text equals `expected` to the 10 significant digits it prints."""
    check(text != NOT_RECORDED, "%s: 'not recorded', expected %r" % (what, expected))
    value = float(text)
    check(math.isclose(value, expected, rel_tol=1e-9, abs_tol=1e-300),
          "%s: report says %s, the files say %r" % (what, text, expected))


# --- reading the report back ---------------------------------------------------------------

def md_tables(md):
    """{section title: [rows of cells]} of the tables in report.md (header row included)."""
    tables, section = {}, None
    for line in md.splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
        elif line.startswith("|") and not re.match(r"^\|(-+\|)+$", line):
            cells = [c.strip().replace("\\|", "|")
                     for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            tables.setdefault(section, []).append(cells)
    return tables


def final_table(tables):
    return {row[0]: row[1] for row in tables["Final result"][1:]}


def node_table(tables):
    rows = tables["Nodes"]
    header = rows[0]
    return {int(row[0]): dict(zip(header, row)) for row in rows[1:]}


def run_report(run_dir):
    result = subprocess.run([sys.executable, REPORT_TOOL, run_dir], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, timeout=120)
    output = result.stdout.decode("utf-8", "replace")
    check(result.returncode == 0, "run_report.py exit %d: %s" % (result.returncode, output))
    with open(os.path.join(run_dir, "report.md")) as f:
        return f.read()


# --- files this test writes ------------------------------------------------------------------

def png_bytes(width, height, rgb):
    """A valid RGB PNG, written here (no library)."""
    raw = b"".join(b"\0" + bytes(rgb) * width for _ in range(height))

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2,
                                                              0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def write_lines(path, objects, extra=()):
    with open(path, "w") as f:
        for o in objects:
            f.write(json.dumps(o) + "\n")
        for line in extra:
            f.write(line + "\n")


def write_synthetic_folder(run_dir, with_final):
    """A run folder as the launcher and the daemons leave it; returns what was written."""
    os.makedirs(run_dir)
    with open(os.path.join(run_dir, "command.txt"), "w") as f:
        f.write("# launch_local.py run, 2026-01-01 00:00:00, working directory /x\n"
                "# launcher\n/usr/bin/python3 launch_local.py --nodes 3 --topology ring "
                "--out /x/run --algorithm swarmsgd --step 0.05\n"
                "# monitor (output: monitor.log)\n/b/starling-probe monitor --cluster "
                "/x/run/cluster.conf --algorithm swarmsgd --step 0.05 --data '/d/a b.svm' "
                "--seed 1 --secret-key /x/run/keys/probe.key --metrics /x/run/metrics.jsonl\n")
    with open(os.path.join(run_dir, "cluster.conf"), "w") as f:
        f.write("# a comment\nnode 0 tcp://127.0.0.1:7100 KEY0\nnode 1 tcp://127.0.0.2:7100\n"
                "node 2 tcp://127.0.0.3:7100 KEY2  # trailing comment\n"
                "edge 0 1\nedge 1 2\nedge 2 0\nedge 1 0\nprobe PKEY\n")
    header = {"header": "starling-probe monitor", "labels": "3->-1 7->+1", "objective": 99.0}
    records = [{"iter": 10, "objective": 0.9, "consensus": 0.5, "comm_rounds": 4, "bytes": 1000,
                "time": 1.5},
               {"iter": 40, "objective": 0.61234567891234, "consensus": 0.012345678912,
                "comm_rounds": 17, "bytes": 123456789, "rel_gap": 0.224691357824,
                "test_accuracy": 0.8125, "time": 3.25, "final": 1 if with_final else 0}]
    if with_final:
        records.append({"iter": 40, "objective": 0.7, "consensus": 0.2, "comm_rounds": 17,
                        "bytes": 123456790, "time": 3.5})  # after the final one: not it
    write_lines(os.path.join(run_dir, "metrics.jsonl"), [header] + records,
                extra=["{not json", "[1, 2]"])
    nodes = {
        0: [{"node": 0, "iter": 5, "comm_rounds": 2, "bytes_sent": 10, "bytes_received": 11,
             "compute_s": 0.5, "blocked_s": 0.25, "wait_s": 0.125, "rejected": 0, "final": 0},
            {"node": 0, "iter": 40, "comm_rounds": 18, "bytes_sent": 41000000,
             "bytes_received": 40999999, "compute_s": 1.75, "blocked_s": 0.9876543210123,
             "wait_s": 0.5, "rejected": 3, "final": 1}],
        2: [{"node": 2, "iter": 38, "comm_rounds": 16, "bytes_sent": 39000000,
             "bytes_received": 38000000, "compute_s": 1.5, "rejected": 0, "final": 0}],
    }
    for node, lines in nodes.items():
        write_lines(os.path.join(run_dir, "node-%d.jsonl" % node),
                    [{"header": "starlingd", "node": node}] + lines)
    with open(os.path.join(run_dir, "node-0.log"), "w") as f:
        f.write("[info] node 0 started\n[info] node 0 done (exit 0)\n")
    with open(os.path.join(run_dir, "node-2.log"), "w") as f:
        f.write("[info] node 2 resumed from /x/ck2 after 10 local steps\n[warn] something\n"
                "[info] node 2 resumed from /x/ck2 after 30 local steps\n")
    with open(os.path.join(run_dir, "monitor.log"), "w") as f:
        f.write("monitor: watching 3 nodes\nt=1.5s ...\nsummary\nobjective 0.61234567891234\n"
                "f_star 0.5\nrel_gap 0.2247\nreference_test_accuracy 0.875\n"
                "consensus 0.01235\n")
    with open(os.path.join(run_dir, "objective.png"), "wb") as f:
        f.write(png_bytes(9, 4, (10, 120, 200)))
    return records[1], nodes


def test_files(work):
    run_dir = os.path.join(work, "run")
    final, nodes = write_synthetic_folder(run_dir, with_final=True)
    md = run_report(run_dir)
    tables = md_tables(md)
    table = final_table(tables)
    close(table["global objective F(mean model)"], final["objective"], "objective")
    close(table["relative gap (F - f*) / f*"], final["rel_gap"], "rel_gap")
    close(table["test accuracy (mean model)"], final["test_accuracy"], "test accuracy")
    close(table["consensus distance"], final["consensus"], "consensus")
    close(table["centralized optimum f*"], 0.5, "f* (monitor.log)")
    close(table["test accuracy of the centralized solution"], 0.875, "reference accuracy")
    check(table["bytes sent by all nodes"] == "123456789", "bytes: %r" % table)
    check(table["train accuracy (mean model)"] == NOT_RECORDED, "train accuracy was invented")
    rows = node_table(tables)
    check(sorted(rows) == [0, 1, 2], "node rows %s, expected 0 1 2 (1 from cluster.conf)"
          % sorted(rows))
    last0 = nodes[0][-1]
    for column, key in (("steps", "iter"), ("exchanges", "comm_rounds"),
                        ("bytes sent", "bytes_sent"), ("bytes received", "bytes_received"),
                        ("rejects", "rejected")):
        check(rows[0][column] == str(last0[key]), "node 0 %s: %r, wrote %r"
              % (column, rows[0][column], last0[key]))
    close(rows[0]["blocked s"], last0["blocked_s"], "node 0 blocked s")
    check(rows[0]["restarts"] == "0" and rows[0]["finished"] == "yes", "node 0: %r" % rows[0])
    check(all(v == NOT_RECORDED for k, v in rows[1].items() if k != "node"),
          "node 1 (no files) must be all 'not recorded': %r" % rows[1])
    check(rows[2]["restarts"] == "2", "node 2 restarts: %r" % rows[2]["restarts"])
    check(rows[2]["blocked s"] == NOT_RECORDED and rows[2]["wait s"] == NOT_RECORDED,
          "node 2 has no blocked_s/wait_s: %r" % rows[2])
    check(rows[2]["finished"] == "no", "node 2 finished: %r" % rows[2]["finished"])
    cluster = tables["Cluster"]
    check([r[:3] for r in cluster[1:]] == [["0", "tcp://127.0.0.1:7100", "2"],
                                           ["1", "tcp://127.0.0.2:7100", "2"],
                                           ["2", "tcp://127.0.0.3:7100", "2"]],
          "cluster table: %r" % cluster)
    check("3 nodes, 3 edges, topology ring; 2 of 3 nodes with a CURVE public key, 1 probe key"
          in md, "cluster line missing")
    options = {r[0]: r[1] for r in tables["Run options"][1:]}
    check(options.get("--data") == "/d/a b.svm" and options.get("--step") == "0.05"
          and "--secret-key" not in options and "--metrics" not in options,
          "run options: %r" % options)
    check("1 line(s) that are not JSON objects" not in md and
          "metrics.jsonl: 2 line(s) that are not JSON objects were skipped" in md,
          "the garbage lines of metrics.jsonl are not noted")
    check("![objective.png](objective.png)" in md, "plot missing from report.md")
    # The header lines (no "iter") are shown as the header, and counted as no evaluation.
    check("metrics.jsonl, 3 evaluations in all" in md, "the header line counted as a record")
    header = {r[0]: r[1] for r in tables["Run options"][1:]}
    check(header.get("labels") == "3->-1 7->+1", "the metrics header is not shown: %r" % header)
    with open(os.path.join(run_dir, "report.html")) as f:
        page = f.read()
    check(page.count("<img ") == 1 and 'src="data:image/png;base64,' in page,
          "report.html must embed the one plot as a data: URI")
    check(not re.search(r'(href|src)="(?!#|data:)', page), "report.html links outside itself")

    # Without a final record the report says so and uses the last evaluation.
    run_dir = os.path.join(work, "run-unfinished")
    last, _ = write_synthetic_folder(run_dir, with_final=False)
    md = run_report(run_dir)
    close(final_table(md_tables(md))["global objective F(mean model)"], last["objective"],
          "objective without a final record")
    check("not the final models" in md, "an unfinished run is not flagged")

    # A folder with nothing in it: every figure is 'not recorded', nothing crashes.
    empty = os.path.join(work, "empty")
    os.makedirs(empty)
    md = run_report(empty)
    check("No evaluation was recorded" in md and NOT_RECORDED in md, "empty folder: %s" % md)


# --- a real launcher run -------------------------------------------------------------------

def lock_port_base():
    """A base of the PortBase scheme (tests/subprocess.h), locked for this process's life."""
    slots = 635
    first = os.getpid() % slots
    for k in range(slots):
        base = 20000 + ((first + k) % slots) * 20
        fd = os.open("/tmp/starling-test-ports-%d.lock" % base, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return base, fd
        except OSError:
            os.close(fd)
    raise TestFailure("no free port base in 20000..32700")


def write_libsvm(path, rows, dim, rng, w):
    """Two classes labelled 3 and 7 (not +-1: the label map is exercised) from a linear rule."""
    with open(path, "w") as f:
        for _ in range(rows):
            x = [rng.gauss(0, 1) * (1 + j) for j in range(dim)]
            score = sum(a * b for a, b in zip(w, x)) + rng.gauss(0, 0.5)
            f.write("%d %s\n" % (7 if score > 0 else 3,
                                 " ".join("%d:%.6g" % (j + 1, v) for j, v in enumerate(x)
                                          if v != 0)))


def read_records(path):
    """Records of a JSON-lines file: objects with "iter" (a header line has none)."""
    records = []
    with open(path) as f:
        for line in f:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and "iter" in record:
                records.append(record)
    return records


def test_launcher(work, build_dir):
    bin_dir = os.path.join(build_dir, "node")
    for name in ("starlingd", "starling-probe"):
        check(os.access(os.path.join(bin_dir, name), os.X_OK),
              "%s/%s: not built" % (bin_dir, name))
    base, _lock = lock_port_base()
    rng = random.Random(19)
    w = [rng.uniform(-1, 1) for _ in range(6)]
    train, test = os.path.join(work, "train.svm"), os.path.join(work, "test.svm")
    write_libsvm(train, 360, 6, rng, w)
    write_libsvm(test, 120, 6, rng, w)
    run_dir = os.path.join(work, "run")
    argv = [sys.executable, LAUNCHER, "--nodes", "3", "--topology", "ring", "--out", run_dir,
            "--port", str(base), "--bin-dir", bin_dir, "--timeout-s", str(LAUNCHER_TIMEOUT_S),
            "--telemetry-ms", "100", "--interval-ms", "200",
            "--algorithm", "swarmsgd", "--problem", "logistic", "--data", train,
            "--test-data", test, "--format", "libsvm", "--iterations", "400", "--batch", "8",
            "--give-up-s", "120"]
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            timeout=LAUNCHER_TIMEOUT_S + 120)
    output = result.stdout.decode("utf-8", "replace")
    check(result.returncode == 0, "launcher exit %d:\n%s" % (result.returncode, output[-3000:]))
    for name in ("report.md", "report.html"):
        check(os.path.isfile(os.path.join(run_dir, name)),
              "the launcher did not write %s:\n%s" % (name, output[-2000:]))
    with open(os.path.join(run_dir, "report.md")) as f:
        md = f.read()
    tables = md_tables(md)

    # The final table against metrics.jsonl and monitor.log, read here.
    records = read_records(os.path.join(run_dir, "metrics.jsonl"))
    finals = [r for r in records if r.get("final")]
    check(finals, "metrics.jsonl has no final record")
    final = finals[-1]
    table = final_table(tables)
    for label, key in (("global objective F(mean model)", "objective"),
                       ("relative gap (F - f*) / f*", "rel_gap"),
                       ("test accuracy (mean model)", "test_accuracy"),
                       ("consensus distance", "consensus"),
                       ("time since the monitor started (s)", "time")):
        check(key in final, "the final record has no %s: %r" % (key, final))
        close(table[label], final[key], label)
    for label, key in (("steps (slowest node)", "iter"), ("bytes sent by all nodes", "bytes"),
                       ("exchanges per node (mean)", "comm_rounds")):
        check(table[label] == str(final[key]), "%s: %r, file %r" % (label, table[label],
                                                                     final[key]))
    with open(os.path.join(run_dir, "monitor.log")) as f:
        summary = f.read().split("\nsummary\n")[-1]
    f_star = float(re.search(r"^f_star (\S+)$", summary, re.M).group(1))
    close(table["centralized optimum f*"], f_star, "f*")
    # The gap the monitor wrote is the one from that f*.
    check(math.isclose(final["rel_gap"], (final["objective"] - f_star) / f_star, rel_tol=1e-9),
          "metrics rel_gap disagrees with f*")

    # The per-node table against each node-K.jsonl.
    rows = node_table(tables)
    check(sorted(rows) == [0, 1, 2], "node rows: %s" % sorted(rows))
    for node in range(3):
        last = read_records(os.path.join(run_dir, "node-%d.jsonl" % node))[-1]
        row = rows[node]
        for column, key in (("steps", "iter"), ("exchanges", "comm_rounds"),
                            ("bytes sent", "bytes_sent"), ("bytes received", "bytes_received"),
                            ("rejects", "rejected")):
            check(row[column] == str(last[key]), "node %d %s: %r, file %r"
                  % (node, column, row[column], last[key]))
        close(row["blocked s"], last["blocked_s"], "node %d blocked s" % node)
        close(row["compute s"], last["compute_s"], "node %d compute s" % node)
        check(row["restarts"] == "0", "node %d restarts: %r" % (node, row["restarts"]))
        check(row["finished"] == ("yes" if last["final"] else "no"), "node %d finished" % node)
        check(last["iter"] == 400, "node %d did %d of 400 steps" % (node, last["iter"]))
        check(last["comm_rounds"] > 0 and last["bytes_sent"] > 0, "node %d never exchanged"
              % node)

    # The command line and the cluster.
    with open(os.path.join(run_dir, "command.txt")) as f:
        launcher_line = f.read().split("# launcher\n", 1)[1].split("\n", 1)[0]
    check(launcher_line in md, "the launcher's command line is not in the report")
    cluster_rows = tables["Cluster"][1:]
    check([r[1] for r in cluster_rows] == ["tcp://127.0.0.%d:%d" % (k + 1, base)
                                           for k in range(3)], "cluster: %r" % cluster_rows)
    check("3 nodes, 3 edges, topology ring" in md, "cluster summary line")
    options = {r[0]: r[1:] for r in tables["Run options"][1:]}
    check(options.get("--iterations") == ["400", "monitor and daemons"]
          and options.get("--telemetry-ms") == ["100", "daemons only"],
          "run options: %r" % options)

    # Every plot, once.
    plots = sorted(n for n in os.listdir(run_dir) if n.endswith(".png"))
    check(len(plots) >= 2, "expected plot_run.py's two plots, found %r" % plots)
    for name in plots:
        check(md.count("![%s](%s)" % (name, name)) == 1, "%s not in report.md once" % name)
    print("report tables equal the files: objective %r, rel_gap %r, test accuracy %r, "
          "%d nodes, %d plots" % (final["objective"], final["rel_gap"], final["test_accuracy"],
                                  len(rows), len(plots)))

    # The page in a real browser.
    try:
        page = browser_check.check_html(os.path.join(run_dir, "report.html"))
    except browser_check.CannotStart as e:
        print("SKIPPED: the browser check: Chromium cannot start: %s (the table checks above "
              "passed)" % e)
        return SKIP
    check(not page["problems"], "report.html in Chromium: %s" % "; ".join(page["problems"]))
    check(len(page["images"]) == len(plots), "Chromium shows %d images, the folder has %d plots"
          % (len(page["images"]), len(plots)))
    check(len(page["links"]) >= 6, "expected the section links, got %r" % page["links"])
    print("Chromium: %d images (naturalWidth %s), %d links, no request outside the page"
          % (len(page["images"]), [i["naturalWidth"] for i in page["images"]],
             len(page["links"])))
    return 0


def test_browser_negative(work):
    good = os.path.join(work, "good.html")
    bad = os.path.join(work, "bad.html")
    image = "data:image/png;base64," + base64.b64encode(png_bytes(5, 3, (0, 0, 0))).decode()
    with open(good, "w") as f:
        f.write('<!DOCTYPE html><html><head><meta charset="utf-8"><title>g</title></head><body>'
                '<h1 id="a">a</h1><a href="#a">a</a><img src="%s"></body></html>' % image)
    with open(bad, "w") as f:
        f.write('<!DOCTYPE html><html><head><meta charset="utf-8"><title>b</title></head><body>'
                '<h1 id="a">a</h1><a href="#nowhere">x</a><a href="https://example.com/">y</a>'
                '<img src="%s"><img src="data:image/png;base64,iVBORw0KGgoAAAA"></body></html>'
                % image)
    try:
        clean = browser_check.check_html(good)
        dirty = browser_check.check_html(bad)
    except browser_check.CannotStart as e:
        print("SKIPPED: Chromium cannot start: %s" % e)
        return SKIP
    check(not clean["problems"] and clean["images"][0]["naturalWidth"] == 5,
          "a clean page was flagged: %r" % clean)
    problems = dirty["problems"]
    check(any("image 1" in p for p in problems), "a broken image was not flagged: %r" % problems)
    check(not any("image 0" in p for p in problems), "the good image was flagged: %r" % problems)
    check(any("#nowhere" in p for p in problems), "a dangling fragment passed: %r" % problems)
    check(any("example.com" in p for p in problems), "an outside link passed: %r" % problems)
    print("the browser check flags: %s" % "; ".join(problems))
    return 0


def main(argv):
    if len(argv) != 3 or argv[1] not in ("files", "launcher", "browser-negative"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="starling-report-test-")
    try:
        if argv[1] == "files":
            code = test_files(work) or 0
        elif argv[1] == "launcher":
            code = test_launcher(work, argv[2])
        else:
            code = test_browser_negative(work)
    except TestFailure as e:
        print("FAILED: %s (files kept in %s)" % (e, work))
        return 1
    print("PASSED" if code == 0 else "SKIPPED")
    shutil.rmtree(work, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
