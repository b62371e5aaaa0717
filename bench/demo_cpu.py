#!/usr/bin/env python3
"""CPU-seconds of a launch_local.py run's daemons, per local step and per merge.

Usage: bench/demo_cpu.py [--fit] RUN_DIR [RUN_DIR ...]

Reads each node's metrics file (RUN_DIR/node-K.jsonl: `cpu_s` is the process's user + system CPU,
all threads, ZeroMQ's I/O thread and CURVE included) and prints, per run: the daemons' CPU when
each finished its budget of local steps and at exit, their local steps and merges (started and
served, before the end phase), and the run's result line from RUN_DIR/launcher.out if present.
Wall time is not printed as a measure: on the shared 2-core machine it says more about the load
than about the run; the estimate for an idle 2-core machine is the daemons' CPU-seconds / 2
(docs/results/demo.md).

--fit: the first two runs are of the same binary and steps at different merge rates (e.g.
--merge-pace 0 and 2); prints the CPU per local step a and per merge b that solve
cpu = a x steps + b x merges for both (costs that grow with wall time, such as the periodic
local objective, are folded into a and b).
"""
import glob
import json
import os
import re
import sys


def read_run(run_dir):
    steps = merges = 0
    cpu_finish = cpu_exit = 0.0
    nodes = 0
    for path in glob.glob(os.path.join(run_dir, "node-*.jsonl")):
        lines = []
        with open(path) as f:
            for line in f:
                if line.startswith('{"node"'):
                    lines.append(json.loads(line))
        if not lines:
            continue
        # The first line with final = 1 is written when the node finishes its budget (before the
        # end phase's merges); the last line at exit.
        finished = next((l for l in lines if l.get("final") == 1), lines[-1])
        nodes += 1
        steps += finished["iter"]
        merges += finished["comm_rounds"]
        cpu_finish += finished["cpu_s"]
        cpu_exit += lines[-1]["cpu_s"]
    result = ""
    launcher = os.path.join(run_dir, "launcher.out")
    if os.path.exists(launcher):
        with open(launcher) as f:
            result = "; ".join(l.strip() for l in f if l.startswith("result") or "run finished" in l)
    return dict(nodes=nodes, steps=steps, merges=merges, cpu_finish=cpu_finish, cpu_exit=cpu_exit,
                result=result)


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    fit = "--fit" in argv
    argv = [a for a in argv if a != "--fit"]
    runs = []
    for run_dir in argv:
        r = read_run(run_dir)
        if r["nodes"] == 0:
            print("%s: no metrics files" % run_dir)
            continue
        runs.append(r)
        print("%s: %d daemons, %d local steps, %d merges (%.3f per step); CPU %.1f s at finish, "
              "%.1f s at exit (idle 2-core estimate %.0f s); %.0f us per local step in all%s" % (
                  run_dir, r["nodes"], r["steps"], r["merges"], r["merges"] / max(r["steps"], 1),
                  r["cpu_finish"], r["cpu_exit"], r["cpu_exit"] / 2,
                  1e6 * r["cpu_finish"] / max(r["steps"], 1),
                  ("\n  " + r["result"]) if r["result"] else ""))
    if fit and len(runs) >= 2 and runs[0]["steps"] == runs[1]["steps"] and runs[0]["merges"] != runs[1]["merges"]:
        a_run, b_run = runs[0], runs[1]
        b = (b_run["cpu_finish"] - a_run["cpu_finish"]) / (b_run["merges"] - a_run["merges"])
        a = (a_run["cpu_finish"] - b * a_run["merges"]) / a_run["steps"]
        print("first two runs: %.0f us per local step, %.0f us per merge (one side of an exchange)"
              % (1e6 * a, 1e6 * b))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
