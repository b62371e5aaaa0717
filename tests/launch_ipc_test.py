#!/usr/bin/env python3
"""launch_local.py's --transport: local runs over ipc:// endpoints (Unix domain sockets) and tcp.

usage: launch_ipc_test.py BUILD_DIR

Real runs (3 daemons, SwarmSGD, CURVE on, on data this test writes), each within generous
deadlines:
- --transport ipc: cluster.conf lists ipc://RUN_DIR/ipc/node-K for every node, every daemon says
  it is up at that endpoint, every node does all its local steps and the run ends with a result
  line;
- a second run in the same folder over stale sockets (bound, then closed without unlinking, as a
  killed run leaves them) runs through;
- a socket there that still accepts connections (another run) is refused before anything starts
  (exit 2, the path named), and is left alone;
- a run folder too long for the sockets' 107-byte paths gets a temporary folder under /tmp,
  removed after the run;
- without --transport (the default, tcp): tcp://127.0.0.(i+1):PORT and no ipc folder.
And `starling-probe cluster --ipc-dir` refuses a folder whose longest socket path (node-K.telemetry)
would exceed 107 bytes.
Ports (tcp run only): a base taken as the C++ tests take theirs (tests/subprocess.h).
"""

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests"))
from launcher_test_support import port_base, write_libsvm  # noqa: E402
LAUNCHER = os.path.join(SOURCE_DIR, "examples", "launch_local.py")
BUILD_DIR = None
NODES = 3
ITERATIONS = 600
RUN_TIMEOUT_S = 300  # the launcher's own deadline; the test waits 2 minutes longer


def node_endpoints(run_dir):
    """{node id: endpoint} from RUN_DIR/cluster.conf."""
    return endpoints_of(os.path.join(run_dir, "cluster.conf"))


def endpoints_of(cluster_file):
    """{node id: endpoint} from the node lines of a cluster file."""
    found = {}
    with open(cluster_file) as f:
        for line in f:
            fields = line.split("#", 1)[0].split()
            if len(fields) >= 3 and fields[0] == "node":
                found[int(fields[1])] = fields[2]
    return found


class LaunchIpcTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="starling-ipc-")
        cls.train = os.path.join(cls.work, "train.svm")
        cls.test = os.path.join(cls.work, "test.svm")
        write_libsvm(cls.train, 600, 6, 1)
        write_libsvm(cls.test, 200, 6, 2)

    def launch(self, run_dir, extra):
        """Runs the launcher; returns (exit code, output)."""
        argv = ([sys.executable, LAUNCHER, "--nodes", str(NODES), "--topology", "ring",
                 "--out", run_dir, "--bin-dir", os.path.join(BUILD_DIR, "node"),
                 "--timeout-s", str(RUN_TIMEOUT_S), "--interval-ms", "200", "--no-plots",
                 "--no-snapshots", "--reference-optimum", "none", "--algorithm", "swarmsgd",
                 "--problem", "logistic", "--l2", "0.01", "--data", self.train,
                 "--test-data", self.test, "--format", "libsvm", "--batch", "8",
                 "--step", "0.05", "--iterations", str(ITERATIONS), "--give-up-s", "120"]
                + extra)
        result = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S + 120)
        return result.returncode, result.stdout.decode("utf-8", "replace")

    def check_complete_run(self, run_dir, code, output, endpoints):
        """Exit 0, the result line, each node up at its endpoint with all its local steps."""
        self.assertEqual(code, 0, output)
        self.assertRegex(output, r"result: test accuracy [0-9.]+", output)
        self.assertEqual(node_endpoints(run_dir), endpoints)
        for k in range(NODES):
            with open(os.path.join(run_dir, "node-%d.log" % k)) as f:
                log = f.read()
            self.assertIn("peers at %s," % endpoints[k], log)
            with open(os.path.join(run_dir, "node-%d.jsonl" % k)) as f:
                records = [json.loads(line) for line in f if line.startswith('{"node"')]
            self.assertEqual(records[-1]["iter"], ITERATIONS, "node %d" % k)

    def ipc_endpoints(self, folder):
        return {k: "ipc://%s/node-%d" % (folder, k) for k in range(NODES)}

    def test_ipc_run_then_a_rerun_over_stale_sockets(self):
        run_dir = os.path.join(self.work, "run")
        code, output = self.launch(run_dir, ["--transport", "ipc"])
        ipc_dir = os.path.join(run_dir, "ipc")
        self.check_complete_run(run_dir, code, output, self.ipc_endpoints(ipc_dir))
        # Stale sockets, as a killed run leaves them: bound, closed, not unlinked.
        for name in ("node-0", "node-2.telemetry"):
            path = os.path.join(ipc_dir, name)
            if os.path.exists(path):
                os.remove(path)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(path)
            s.close()
            self.assertTrue(os.path.exists(path))
        code, output = self.launch(run_dir, ["--transport", "ipc"])
        self.check_complete_run(run_dir, code, output, self.ipc_endpoints(ipc_dir))

    def test_a_socket_in_use_is_refused(self):
        run_dir = os.path.join(self.work, "busy")
        ipc_dir = os.path.join(run_dir, "ipc")
        os.makedirs(ipc_dir)
        path = os.path.join(ipc_dir, "node-1")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(path)
            listener.listen(4)
            code, output = self.launch(run_dir, ["--transport", "ipc"])
            self.assertEqual(code, 2, output)
            self.assertIn(path, output)
            self.assertIn("in use", output)
            self.assertTrue(os.path.exists(path))  # not removed under the other run
            self.assertFalse(os.path.exists(os.path.join(run_dir, "node-0.log")), output)
        finally:
            listener.close()

    def test_long_run_folder_gets_a_short_temporary_socket_folder(self):
        run_dir = os.path.join(self.work, "x" * 60, "y" * 60)
        code, output = self.launch(run_dir, ["--transport", "ipc"])
        endpoints = node_endpoints(run_dir)
        folders = {os.path.dirname(e[len("ipc://"):]) for e in endpoints.values()}
        self.assertEqual(len(folders), 1, endpoints)
        folder = folders.pop()
        self.assertLessEqual(len(folder + "/node-%d.telemetry" % (NODES - 1)), 107)
        self.assertTrue(re.match(r"^/.*/starling-[^/]+$", folder), folder)
        self.check_complete_run(run_dir, code, output, self.ipc_endpoints(folder))
        self.assertFalse(os.path.exists(folder), "the temporary socket folder was left")

    def test_probe_refuses_an_ipc_folder_too_long_for_the_telemetry_socket(self):
        probe = os.path.join(BUILD_DIR, "node", "starling-probe")
        out = os.path.join(self.work, "probe-cluster.conf")
        # "/node-9.telemetry" is 17 bytes: a 90-byte folder fits for 10 nodes, 91 does not.
        for length, fits in ((90, True), (91, False)):
            folder = "/" + "d" * (length - 1)
            result = subprocess.run([probe, "cluster", "--nodes", "10", "--out", out,
                                     "--ipc-dir", folder], stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, timeout=60)
            text = result.stdout.decode("utf-8", "replace")
            if fits:
                self.assertEqual(result.returncode, 0, text)
                self.assertEqual(endpoints_of(out)[9], "ipc://%s/node-9" % folder)
            else:
                self.assertEqual(result.returncode, 2, text)
                self.assertIn("107", text)

    def test_tcp_by_default(self):
        run_dir = os.path.join(self.work, "tcp")
        base = port_base()
        code, output = self.launch(run_dir, ["--port", str(base)])
        self.check_complete_run(run_dir, code, output, {
            k: "tcp://127.0.0.%d:%d" % (k + 1, base) for k in range(NODES)})
        self.assertFalse(os.path.exists(os.path.join(run_dir, "ipc")))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    BUILD_DIR = os.path.abspath(sys.argv.pop(1))
    unittest.main()
