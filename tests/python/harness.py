"""What the Python tests share: a port base from the same lock-file scheme as the C++ tests
(tests/subprocess.h PortBase: bases 20 apart in 20000..32700, /tmp/starling-test-ports-BASE.lock
held with flock for the life of this process), a loopback cluster file with fresh CURVE keys
(starlingd --keygen), and worker processes with their logs."""
import fcntl
import os
import subprocess
import sys
import tempfile
import time

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests

_port_lock = None


def port_base():
    global _port_lock
    slots = 635
    first = os.getpid() % slots
    for k in range(slots):
        base = 20000 + ((first + k) % slots) * 20
        fd = os.open("/tmp/starling-test-ports-%d.lock" % base, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        _port_lock = fd  # held until this process exits
        return base
    raise RuntimeError("no free port base in 20000..32700")


def build_dir():
    d = os.environ.get("STARLING_BUILD_DIR")
    if not d:
        sys.exit("set STARLING_BUILD_DIR to the build tree (ctest does)")
    return d


def write_cluster(folder, n, edges, port):
    """folder/cluster.conf with node i at tcp://127.0.0.(i+1):port and a key pair each."""
    starlingd = os.path.join(build_dir(), "node", "starlingd")
    lines = []
    for i in range(n):
        prefix = os.path.join(folder, "node-%d" % i)
        subprocess.run([starlingd, "--keygen", prefix], check=True, stdout=subprocess.DEVNULL)
        with open(prefix + ".pub") as f:  # a comment line, then the key
            key = [line.strip() for line in f if line.strip() and not line.startswith("#")][0]
        lines.append("node %d tcp://127.0.0.%d:%d %s" % (i, i + 1, port, key))
    lines += ["edge %d %d" % e for e in edges]
    path = os.path.join(folder, "cluster.conf")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def ring(n):
    return [(i, (i + 1) % n) for i in range(n)] if n > 2 else [(0, 1)]


def run_workers(folder, argvs, timeout_s):
    """Starts one process per argv (logs in folder/worker-i.log), waits for all with a deadline;
    returns the exit codes and the logs."""
    env = dict(os.environ)
    env.setdefault("STARLING_LIBRARY", os.path.join(build_dir(), "capi", "libstarling.so"))
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
    env["PYTHONPATH"] = source + os.pathsep + env.get("PYTHONPATH", "")
    procs, logs = [], []
    for i, argv in enumerate(argvs):
        log = open(os.path.join(folder, "worker-%d.log" % i), "w")
        logs.append(log.name)
        procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env))
    deadline = time.monotonic() + timeout_s
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(max(1.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            codes.append(None)
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    texts = []
    for name in logs:
        with open(name) as f:
            texts.append(f.read())
    return codes, texts


def scratch(name):
    return tempfile.mkdtemp(prefix="starling-%s-" % name)
