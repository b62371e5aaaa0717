"""starling.torch's checkpoint holds the optimizer's own state (with
momentum): 3 workers (CURVE, loopback, a triangle) train nn.Linear(4, 1) with SGD momentum 0.9;
worker 1 checkpoints every 50 steps and kills itself (SIGKILL) after 400, then is started
again with --resume. The restarted worker must resume with the momentum of the last state the
killed one saved (same step, same norm to the last bit, not zero and not a fresh start), its
node from its checkpoint, and the network must still end at the optimum of the whole problem
(numpy.linalg.lstsq). The other two hold at step 400 until the restarted worker is back: with a
fixed step budget, nodes that finish before it returns leave it training alone, and the network
then ends near its shard's optimum (0.39 from w* with a 3 s restart delay, 0.09 on a loaded
machine), so without the hold the end would depend on how long the restart takes.
Skipped (exit 77) without torch."""
import os
import re
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import harness  # noqa: E402


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIP: torch is not installed (Debian: apt-get install python3-torch)")
        return harness.SKIP
    n, d, m, steps = 3, 4, 200, 2000
    folder = harness.scratch("pytorchckpt")
    rng = np.random.default_rng(11)
    truth = rng.normal(size=d)
    As, bs = [], []
    for i in range(n):
        A = rng.normal(loc=0.3 * i, scale=1.0, size=(m, d))
        b = A @ (truth + 0.8 * rng.normal(size=d)) + 0.5 * i + rng.normal(scale=0.1, size=m)
        np.savez("%s/shard-%d.npz" % (folder, i), A=A, b=b)
        As.append(A)
        bs.append(b)
    w_star = np.linalg.lstsq(np.hstack([np.vstack(As), np.ones((n * m, 1))]),
                             np.concatenate(bs), rcond=None)[0]
    cluster = harness.write_cluster(folder, n, [(0, 1), (1, 2), (0, 2)], harness.port_base())
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_resume_worker.py")
    env = dict(os.environ)
    env.setdefault("STARLING_LIBRARY", os.path.join(harness.build_dir(), "capi", "libstarling.so"))
    env["PYTHONPATH"] = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                     "python") + os.pathsep + env.get("PYTHONPATH", "")

    def start(i, role, log):
        return subprocess.Popen([sys.executable, worker, folder, str(i), cluster, str(steps),
                                 role], stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env)

    logs = ["%s/worker-%d.log" % (folder, i) for i in range(n)]
    procs = [start(i, "kill:400" if i == 1 else "hold:400", logs[i]) for i in range(n)]
    code = procs[1].wait(300)
    killed = open(logs[1]).read()
    if code != -9:
        print("worker 1 was to kill itself, exit %s:\n%s" % (code, killed))
        return 1
    saves = re.findall(r"optimizer saved: step (\d+) momentum (\S+)", killed)
    relog = "%s/worker-1-again.log" % folder
    procs[1] = start(1, "back", relog)
    deadline = time.monotonic() + 400
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(max(1.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(None)
    texts = [open(logs[0]).read(), open(relog).read(), open(logs[2]).read()]
    failed = False
    for i, c in enumerate(codes):
        if c != 0:
            print("worker %d exit %s:\n%s" % (i, c, texts[i]))
            failed = True
    resumed = re.search(r"resumed: node steps (\d+) optimizer step (\S+) momentum (\S+)",
                        texts[1])
    print("killed worker's last save: %s; restarted: %s" %
          (saves[-1] if saves else None, resumed.groups() if resumed else None))
    if not saves or not resumed:
        print(killed, texts[1])
        return 1
    last_step, last_norm = saves[-1]
    node_steps, opt_step, norm = resumed.groups()
    if opt_step != last_step or norm != last_norm or not float(norm) > 0:
        print("the momentum resumed is not the last one saved")
        failed = True
    # Not a fresh start: the node resumed from its checkpoint (every 50 steps, killed at 400).
    if not (350 <= int(node_steps) <= 400 and 350 <= int(opt_step) <= 400):
        print("resumed from steps %s / %s, expected 350..400" % (node_steps, opt_step))
        failed = True
    for i in range(n):
        if codes[i] != 0:
            continue
        w = np.load("%s/model-%d.npy" % (folder, i))
        err = np.linalg.norm(w - w_star) / np.linalg.norm(w_star)
        print("node %d: |w - w*| / |w*| = %.2e" % (i, err))
        failed = failed or not err < 5e-2
    print("FAILED" if failed else "OK")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
