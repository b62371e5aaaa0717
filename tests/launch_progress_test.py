#!/usr/bin/env python3
"""The launcher's progress output and dense curves.

usage: launch_progress_test.py BUILD_DIR

- The console as a unit: progress lines parsed, plain lines when not a terminal, one line
  redrawn in place (with other text above it) when it is.
- A real run (4 daemons, SwarmSGD, on data this test writes) with the launcher's stdout a pipe:
  its progress lines are plain, parseable, their share of steps done never falls and ends at
  100% with every step done; after it, starling-probe evaluate's curves.jsonl has >= 50 points
  and plot_run.py has drawn objective.png and consensus.png from it.
Ports: a base taken as the C++ tests take theirs (a lock file per base, tests/subprocess.h).
"""

import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests"))
from launcher_test_support import port_base, write_libsvm  # noqa: E402
sys.path.insert(0, os.path.join(SOURCE_DIR, "examples"))
import launch_progress  # noqa: E402

BUILD_DIR = None


class ConsoleTest(unittest.TestCase):
    LINE = "progress  45.2%  7236/16000 steps  850 steps/s  10s left  test_acc 0.8123  rel_gap 0.0432"

    def test_parses_the_monitors_line(self):
        fields = launch_progress.parse_progress(self.LINE)
        self.assertEqual(fields, {"share": 45.2, "done": 7236, "total": 16000, "rate": "850",
                                  "left": "10s", "test_acc": "0.8123", "rel_gap": "0.0432"})
        self.assertIsNone(launch_progress.parse_progress("t=3.0s  iter 12  objective 0.5"))
        self.assertEqual(launch_progress.parse_progress(
            "progress 100.0%  16000/16000 steps  0 steps/s  0s left")["share"], 100.0)

    def test_plain_lines_when_not_a_terminal(self):
        out = io.StringIO()
        console = launch_progress.Console(out, redraw=False)
        console.monitor_line("[monitor] ", self.LINE)
        console.monitor_line("[monitor] ", "t=3.0s  iter 12  objective 0.5")
        console.say("note")
        console.end()
        self.assertEqual(out.getvalue(), "[monitor] %s\n[monitor] t=3.0s  iter 12  objective "
                                         "0.5\nnote\n" % self.LINE)

    def test_one_redrawn_line_in_a_terminal(self):
        out = io.StringIO()
        console = launch_progress.Console(out, redraw=True)
        console.progress("progress  10.0%  1/10 steps")
        console.monitor_line("", "t=3.0s  iter 12  objective 0.5")  # left to monitor.log
        console.say("warning: x")
        console.progress("progress  20.0%  2/10 steps")
        console.end()
        self.assertEqual(out.getvalue(),
                         "\r\033[Kprogress  10.0%  1/10 steps"
                         "\r\033[Kwarning: x\nprogress  10.0%  1/10 steps"
                         "\r\033[Kprogress  20.0%  2/10 steps\n")


class LaunchTest(unittest.TestCase):
    def launch(self, method_options, iterations):
        """Runs the launcher (stdout a pipe) on data written here; checks its progress lines and
        curves; returns its output."""
        work = tempfile.mkdtemp(prefix="starling-launch-progress-")
        train, test = os.path.join(work, "train.svm"), os.path.join(work, "test.svm")
        write_libsvm(train, 2000, 8, 1)
        write_libsvm(test, 500, 8, 2)
        run_dir = os.path.join(work, "run")
        argv = ([sys.executable, os.path.join(SOURCE_DIR, "examples", "launch_local.py"),
                 "--nodes", "4", "--out", run_dir, "--port", str(port_base()),
                 "--bin-dir", os.path.join(BUILD_DIR, "node"), "--timeout-s", "300",
                 "--interval-ms", "200", "--reference-optimum", "0.3",
                 "--problem", "logistic", "--l2", "0.01", "--data", train, "--test-data", test,
                 "--format", "libsvm", "--iterations", str(iterations)] + method_options)
        result = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, timeout=600)
        output = result.stdout.decode("utf-8", "replace")
        self.assertEqual(result.returncode, 0, output)
        self.assertNotIn("\r", output)  # not a terminal: nothing redrawn
        progress = [launch_progress.parse_progress(line.split("[monitor] ", 1)[1])
                    for line in output.splitlines() if line.startswith("[monitor] progress")]
        self.assertNotIn(None, progress, output)  # every progress line parses
        self.assertGreaterEqual(len(progress), 2, output)
        shares = [p["share"] for p in progress]
        self.assertEqual(shares, sorted(shares), output)
        self.assertEqual(progress[-1]["share"], 100.0, output)
        self.assertEqual(progress[-1]["done"], 4 * iterations)
        self.assertEqual(progress[-1]["total"], 4 * iterations)
        self.assertTrue(all(p["share"] < 100.0 for p in progress if p["done"] < 4 * iterations))
        self.assertIn("test_acc", progress[-1])
        self.assertIn("rel_gap", progress[-1])
        with open(os.path.join(run_dir, "curves.jsonl")) as f:
            points = [r for r in map(json.loads, f) if "iter" in r]
        self.assertGreaterEqual(len(points), 50, output)
        self.assertEqual(points[-1]["final"], 1)
        self.assertEqual(points[-1]["iter"], iterations)
        self.assertIn("rel_gap", points[-1])
        if os.path.isfile("/usr/bin/python3"):
            for name in ("objective.png", "consensus.png"):
                self.assertGreater(os.path.getsize(os.path.join(run_dir, name)), 10000, output)
        return output

    def test_swarmsgd_plain_progress_to_100_percent_and_dense_curves(self):
        output = self.launch(["--algorithm", "swarmsgd", "--batch", "8", "--step", "0.05"], 3000)
        # Long enough to show progress under way, not only its end.
        self.assertIn("steps/s", output)

    def test_extra_round_based_run_too(self):
        self.launch(["--algorithm", "extra"], 1500)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    BUILD_DIR = os.path.abspath(sys.argv.pop(1))
    unittest.main()
