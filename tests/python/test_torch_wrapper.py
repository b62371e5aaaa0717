"""starling.torch.DecentralizedOptimizer across 4 processes (CURVE, loopback, a ring): a tiny
model, nn.Linear(4, 1), trained with torch.optim.SGD on 4 shards this test writes; the
optimum of the whole problem (least squares with an intercept) is computed here with
numpy.linalg.lstsq. Every node's final weights must be close to it, while each shard's own
optimum is far. Skipped (exit 77) if torch is not installed."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import harness  # noqa: E402


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIP: torch is not installed (Debian: apt-get install python3-torch)")
        return harness.SKIP
    n, d, m = 4, 4, 200
    folder = harness.scratch("pytorch")
    rng = np.random.default_rng(7)
    truth = rng.normal(size=d)
    As, bs = [], []
    for i in range(n):
        A = rng.normal(loc=0.3 * i, scale=1.0, size=(m, d))
        b = A @ (truth + 0.8 * rng.normal(size=d)) + 0.5 * i + rng.normal(scale=0.1, size=m)
        np.savez("%s/shard-%d.npz" % (folder, i), A=A, b=b)
        As.append(A)
        bs.append(b)
    A_all = np.hstack([np.vstack(As), np.ones((n * m, 1))])  # weight, then bias
    w_star = np.linalg.lstsq(A_all, np.concatenate(bs), rcond=None)[0]
    cluster = harness.write_cluster(folder, n, harness.ring(n), harness.port_base())
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_worker.py")
    argvs = [[sys.executable, worker, folder, str(i), cluster, "3000"] for i in range(n)]
    codes, logs = harness.run_workers(folder, argvs, 400)
    failed = False
    models = []
    for i in range(n):
        if codes[i] != 0:
            print("worker %d exit %s:\n%s" % (i, codes[i], logs[i]))
            failed = True
            continue
        w = np.load("%s/model-%d.npy" % (folder, i))
        models.append(w)
        A_i = np.hstack([As[i], np.ones((m, 1))])
        alone = np.linalg.lstsq(A_i, bs[i], rcond=None)[0]
        err = np.linalg.norm(w - w_star) / np.linalg.norm(w_star)
        far = np.linalg.norm(alone - w_star) / np.linalg.norm(w_star)
        print("node %d: |w - w*| / |w*| = %.2e (its shard's own optimum: %.2e)" % (i, err, far))
        if not (err < 3e-2 and far > 0.2):
            print(logs[i])
            failed = True
    if len(models) == n:
        err = np.linalg.norm(np.mean(models, axis=0) - w_star) / np.linalg.norm(w_star)
        print("average model: |w - w*| / |w*| = %.2e" % err)
        failed = failed or not err < 2e-2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
