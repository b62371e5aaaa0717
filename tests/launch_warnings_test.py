#!/usr/bin/env python3
"""The launcher relays the daemons' warnings to its console once per kind.

usage: launch_warnings_test.py

The logs are written here as starlingd writes them (time stamp, tag, level, the node's own
"node K: " prefix), in pieces that cut lines in the middle, as a log read while it grows.
"""

import os
import shutil
import sys
import tempfile
import unittest

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE_DIR, "examples"))
import daemon_warnings  # noqa: E402

UNSCALED = ("features look unscaled: the smoothness bound of the raw features is 3.33e+05, "
            "1.41e+05x the 2.35 after standard scaling, so default steps (which divide by it) "
            "are that much smaller; consider --scale standard (or maxabs)")


def line(node, level, text):
    return "2026-12-05 09:15:57.696 [node %d] %s: %s\n" % (node, level, text)


class RelayTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="launch-warnings-")
        self.paths = [os.path.join(self.dir, "node-%d.log" % k) for k in range(3)]
        for p in self.paths:
            open(p, "w").close()
        self.relay = daemon_warnings.DaemonWarnings(self.paths)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def append(self, node, text):
        with open(self.paths[node], "a") as log:
            log.write(text)

    def test_each_kind_once_with_the_node_that_said_it_first(self):
        waiting1 = ("waiting for node 2 (tcp://127.0.0.3:7100) at step 40: no progress for 5 s")
        waiting0 = ("waiting for node 1 (tcp://127.0.0.2:7100) at step 41: no progress for 10 s")
        self.append(0, line(0, "info", "node 0 up: swarmsgd") + line(0, "warning", "node 0: " + UNSCALED))
        whole = line(1, "warning", waiting1)
        self.append(1, whole[:30])  # a line being written: not read yet
        self.assertEqual(self.relay.new(), [(0, UNSCALED)])
        self.append(1, whole[30:])
        self.append(2, line(2, "warning", "node 2: " + UNSCALED))
        self.assertEqual(self.relay.new(), [(1, waiting1)])
        self.append(0, line(0, "warning", waiting0))  # the same kind: other numbers only
        self.assertEqual(self.relay.new(), [])
        self.assertEqual(self.relay.nodes_by_kind[daemon_warnings.warning_kind(waiting1)], {0, 1})
        self.assertEqual(self.relay.summary(),
                         "the daemons warned: 2 kinds shown above once each; every warning is in "
                         "the node-K.log files of the run folder")

    def test_what_the_monitor_printed_is_not_repeated(self):
        self.relay.note_shown(UNSCALED)
        self.append(0, line(0, "warning", "node 0: " + UNSCALED))
        self.assertEqual(self.relay.new(), [])
        self.assertIsNone(self.relay.summary())

    def test_kinds_beyond_the_cap_are_counted_and_lines_are_bounded(self):
        for k in range(daemon_warnings.MAX_KINDS + 3):
            self.append(0, line(0, "warning", "kind %s" % ("x" * (k + 1))))
        shown = self.relay.new()
        self.assertEqual(len(shown), daemon_warnings.MAX_KINDS)
        self.assertEqual(shown[0], (0, "kind x"))
        self.assertIn("and 3 of further kinds", self.relay.summary())
        self.append(1, "y" * (3 * daemon_warnings.MAX_LINE_BYTES))  # no newline, ever
        self.assertEqual(self.relay.new(), [])
        self.assertLessEqual(len(self.relay.partial[1]), daemon_warnings.MAX_LINE_BYTES)

    def test_a_missing_log_is_no_error(self):
        os.remove(self.paths[2])
        self.assertEqual(self.relay.new(), [])


if __name__ == "__main__":
    unittest.main()
