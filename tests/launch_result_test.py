#!/usr/bin/env python3
"""The launcher's last line after a failure names the failure.

usage: launch_result_test.py

A node killed by SIGKILL (or a monitor that failed) leaves the monitor's summary of a run cut
short: its numbers are printed as what they are ("at the average model when the run stopped"),
never as a "result:" line, and the launcher's last line is "result: FAILED: ..." naming the
node and how it ended. A run that succeeded keeps its "result:" line and no FAILED line.
"""

import contextlib
import io
import os
import signal
import sys
import unittest

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE_DIR, "examples"))
import launch_local  # noqa: E402


class FakeOutput(object):
    """The monitor's output reader, with a summary block as the monitor prints it."""

    def __init__(self, lines):
        self.lines = lines
        self.subscribed = True

    def summary(self):
        return self.lines


def make_run(failure):
    run = launch_local.Run("/tmp/run", [], [])
    run.monitor_output = FakeOutput(["rel_gap 6.885e-16", "test_accuracy 0.85"])
    run.failure = failure
    return run


class LastLineTest(unittest.TestCase):
    def printed(self, run, code):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            launch_local.print_summary(run)
            last = launch_local.failure_line(run, code)
            if last:
                print(last)
        return out.getvalue().splitlines()

    def test_a_killed_node_is_the_last_line(self):
        failure = "node 2: %s (see /tmp/run/node-2.log)" % launch_local.describe_exit(
            -signal.SIGKILL, launch_local.DAEMON_EXIT_MEANINGS)
        lines = self.printed(make_run(failure), launch_local.EXIT_FAILED)
        self.assertEqual(lines[-1],
                         "result: FAILED: node 2: killed by signal SIGKILL (see /tmp/run/node-2.log)")
        self.assertEqual([l for l in lines if l.startswith("result:")], [lines[-1]], lines)
        self.assertIn("at the average model when the run stopped: test accuracy 0.85, relative "
                      "gap to f* 6.885e-16", lines)

    def test_a_timeout_without_a_recorded_failure_still_says_failed(self):
        lines = self.printed(make_run(None), launch_local.EXIT_TIMEOUT)
        self.assertEqual(lines[-1], "result: FAILED: launcher exit code %d"
                         % launch_local.EXIT_TIMEOUT)

    def test_success_keeps_its_result_line(self):
        lines = self.printed(make_run(None), launch_local.EXIT_OK)
        self.assertEqual(lines[-1], "result: test accuracy 0.85, relative gap to f* 6.885e-16")
        self.assertFalse(any("FAILED" in l for l in lines), lines)


if __name__ == "__main__":
    unittest.main()
