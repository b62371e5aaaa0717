"""launch_local.py --worker --partition label: each worker's starling.shard rows are the rows a
starlingd of the same run trains on, on a non-i.i.d. split of a9a over 4 nodes.

Checked independently of the partition code where it can be:
  - the workers' rows are disjoint and cover every row of the file once;
  - each worker's label histogram is what the label rule says (the file's labels sorted and cut
    into 4 contiguous parts of sizes differing by at most one: node j gets sorted positions
    [M j / 4, M (j + 1) / 4)); with a9a's 37,155 negatives, nodes 0-2 hold negatives only and
    node 3 all 11,687 positives;
  - 4 real starlingd (launch_local.py, same --nodes, --seed, --partition) report, in their final
    metrics line, their local objective f_K at their final model; the test computes f_K of that
    model over the worker's rows with NumPy (logistic loss, loss scale N/M, l2) and the two agree
    to 1e-9 (one row more, less or another would move it by about 1e-5).
The workers themselves train (SwarmSGD over starling.Node) and must all exit 0.
Skipped (77) without a9a (STARLING_SHARED_DATA)."""
import json
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
NODES = 4
L2 = 1e-3


def read_libsvm(path, features=123):
    labels, x = [], []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            labels.append(float(parts[0]))
            row = np.zeros(features)
            for item in parts[1:]:
                k, v = item.split(":")
                row[int(k) - 1] = float(v)
            x.append(row)
    return np.array(x), np.array(labels)


def histogram(labels):
    values, counts = np.unique(labels, return_counts=True)
    return {float(v): int(c) for v, c in zip(values, counts)}


def launcher(run_dir, port, extra, env):
    argv = [sys.executable, os.path.join(REPO, "examples", "launch_local.py"), "--nodes",
            str(NODES), "--out", run_dir, "--port", str(port), "--bin-dir",
            os.path.join(harness.build_dir(), "node"), "--timeout-s", "600", "--seed", "5"]
    return subprocess.run(argv + extra, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env=env, timeout=900)


def main():
    data = os.path.join(os.environ.get("STARLING_SHARED_DATA", ""), "a9a")
    if not os.path.isfile(data):
        print("skipped: no a9a at %s (set STARLING_SHARED_DATA)" % data)
        return harness.SKIP
    x, y = read_libsvm(data)
    m = len(y)
    ordered = np.sort(y)
    expected = [histogram(ordered[m * j // NODES:m * (j + 1) // NODES]) for j in range(NODES)]

    env = dict(os.environ)
    env.setdefault("STARLING_LIBRARY", os.path.join(harness.build_dir(), "capi",
                                                    "libstarling.so"))
    base = harness.port_base()
    failed = False

    workers_dir = harness.scratch("partition-workers")
    worker = "%s %s %s 400" % (sys.executable, os.path.join(HERE, "partition_worker.py"), data)
    r = launcher(workers_dir, base, ["--worker", worker, "--partition", "label"], env)
    print(r.stdout.decode())
    if r.returncode != 0:
        print("the worker run failed: exit %d" % r.returncode)
        for k in range(NODES):
            with open(os.path.join(workers_dir, "worker-%d.log" % k)) as f:
                print(f.read())
        return 1
    rows = [np.loadtxt(os.path.join(workers_dir, "rows-%d.txt" % k), dtype=np.int64, ndmin=1)
            for k in range(NODES)]
    every = np.sort(np.concatenate(rows))
    if not np.array_equal(every, np.arange(m)):
        print("the shards do not cover the %d rows exactly once (%d rows in all)"
              % (m, len(every)))
        failed = True
    for k in range(NODES):
        got = histogram(y[rows[k]])
        ok = got == expected[k] and np.all(np.diff(rows[k]) > 0)
        print("worker %d: %d rows, labels %s; the label rule says %s: %s"
              % (k, len(rows[k]), got, expected[k], "ok" if ok else "DIFFERENT"))
        failed |= not ok

    daemons_dir = harness.scratch("partition-daemons")
    r = launcher(daemons_dir, base + 4,
                 ["--algorithm", "swarmsgd", "--problem", "logistic", "--l2", str(L2),
                  "--data", data, "--format", "libsvm", "--features", "123", "--partition",
                  "label", "--iterations", "200", "--batch", "16", "--reference-optimum",
                  "none", "--no-plots", "--no-snapshots"], env)
    if r.returncode != 0:
        print(r.stdout.decode())
        print("the daemon run failed: exit %d" % r.returncode)
        return 1
    for k in range(NODES):
        with open(os.path.join(daemons_dir, "node-%d.log" % k)) as f:
            log = f.read()
        samples = re.search(r"\(d = 123, (\d+) samples\)", log)
        finals = []
        with open(os.path.join(daemons_dir, "node-%d.jsonl" % k)) as f:
            for line in f:
                record = json.loads(line)
                if record.get("final") == 1 and "local_objective" in record:
                    finals.append(record["local_objective"])
        model = np.loadtxt(os.path.join(daemons_dir, "model-%d.txt" % k)).ravel()
        margins = y[rows[k]] * (x[rows[k]] @ model)
        mine = (NODES / m) * np.sum(np.logaddexp(0.0, -margins)) + 0.5 * L2 * model @ model
        theirs = finals[-1] if finals else float("nan")
        gap = abs(mine - theirs) / abs(theirs)
        ok = samples is not None and int(samples.group(1)) == len(rows[k]) and gap <= 1e-9
        print("node %d: starlingd has %s samples and f_%d(final model) = %.12g; over worker %d's "
              "rows %.12g (relative difference %.2g): %s"
              % (k, samples.group(1) if samples else "?", k, theirs, k, mine, gap,
                 "ok" if ok else "DIFFERENT"))
        failed |= not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
