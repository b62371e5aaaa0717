"""Ctrl-C stops every worker: launch_local.py --worker starts 3 looping workers (each a
starling.Node that never reaches its budget); once every node is training, SIGINT goes to the
launcher alone (its own session). The launcher must exit 130 within the deadline, every
worker must have stopped its node through the clean path (the node's "stopping on signal" and
the worker's "stopped at step"), and no worker process may be left."""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for this purpose (its parent, the launcher, may not have reaped it yet).
    return "State:\tZ" not in read("/proc/%d/status" % pid)


def main():
    n = 3
    run_dir = harness.scratch("interrupt")
    env = dict(os.environ)
    env.setdefault("STARLING_LIBRARY", os.path.join(harness.build_dir(), "capi",
                                                    "libstarling.so"))
    launcher = subprocess.Popen(
        [sys.executable, os.path.join(REPO, "examples", "launch_local.py"), "--nodes", str(n),
         "--out", run_dir, "--port", str(harness.port_base()), "--bin-dir",
         os.path.join(harness.build_dir(), "node"), "--timeout-s", "300",
         "--worker", "%s %s" % (sys.executable, os.path.join(HERE, "looping_worker.py"))],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    logs = [os.path.join(run_dir, "worker-%d.log" % k) for k in range(n)]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not all("training" in read(p) for p in logs):
        if launcher.poll() is not None:
            break
        time.sleep(0.2)
    if not all("training" in read(p) for p in logs):
        launcher.kill()
        print("the workers did not all start training:\n" + launcher.communicate()[0].decode())
        for p in logs:
            print(p, read(p))
        return 1
    pids = [int(read(os.path.join(run_dir, "pid-%d" % k))) for k in range(n)]
    launcher.send_signal(signal.SIGINT)
    try:
        out = launcher.communicate(timeout=60)[0].decode()
    except subprocess.TimeoutExpired:
        launcher.kill()
        print("the launcher did not exit within 60 s of SIGINT")
        return 1
    print(out)
    failed = launcher.returncode != 130
    if failed:
        print("launcher exit %d, expected 130" % launcher.returncode)
    for k, (p, pid) in enumerate(zip(logs, pids)):
        text = read(p)
        ok = "stopping on signal" in text and "stopped at step" in text and not alive(pid)
        print("worker %d (pid %d): %s" % (k, pid, "stopped cleanly" if ok else "NOT stopped"))
        if not ok:
            print(text)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
