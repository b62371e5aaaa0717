"""starling.Node with NumPy across 4 processes (CURVE, loopback, a ring): least squares on
shards this test writes (each node alone would end far from the network's optimum); every
node's final model must be close to the centralised least-squares solution, computed here
with numpy.linalg.lstsq on all the rows. Then: a bad option comes back as a StarlingError
naming it."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
os.environ.setdefault("STARLING_LIBRARY", os.path.join(os.environ.get("STARLING_BUILD_DIR", ""),
                                                       "capi", "libstarling.so"))
import harness  # noqa: E402


def main():
    n, d, m = 4, 5, 60
    folder = harness.scratch("pynumpy")
    rng = np.random.default_rng(2026)
    truth = rng.normal(size=d)
    As, bs = [], []
    for i in range(n):
        # Shards from different distributions and different local optima.
        A = rng.normal(scale=1.0 + 0.2 * i, size=(m, d))
        b = A @ (truth + rng.normal(scale=1.0, size=d)) + rng.normal(scale=0.1, size=m)
        np.savez("%s/shard-%d.npz" % (folder, i), A=A, b=b)
        As.append(A)
        bs.append(b)
    # Sum of f_i with f_i = ||A_i x - b_i||^2 / (2m): all shards have m rows, so this is the
    # least-squares solution over all rows.
    x_star = np.linalg.lstsq(np.vstack(As), np.concatenate(bs), rcond=None)[0]
    # One step size for every node (0.5 / max_i L_i): with a step of its own, node i's gradient
    # would weigh more or less in the network's fixed point than the others'.
    lr0 = 0.5 / max(np.linalg.norm(A, 2) ** 2 / m for A in As)
    cluster = harness.write_cluster(folder, n, harness.ring(n), harness.port_base())
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "numpy_worker.py")
    argvs = [[sys.executable, worker, folder, str(i), cluster, "3000", "32" if i % 2 else "64", repr(lr0)]
             for i in range(n)]
    codes, logs = harness.run_workers(folder, argvs, 300)
    failed = False
    models = []
    for i in range(n):
        if codes[i] != 0:
            print("worker %d exit %s:\n%s" % (i, codes[i], logs[i]))
            failed = True
            continue
        # The start line names the caller's model as such (the node has no data of its own).
        if "(external model, d = %d)" % d not in logs[i] or " samples)" in logs[i]:
            print("worker %d: the start line should say 'external model, d = %d':\n%s"
                  % (i, d, logs[i]))
            failed = True
        x = np.load("%s/model-%d.npy" % (folder, i))
        models.append(x)
        alone = np.linalg.lstsq(As[i], bs[i], rcond=None)[0]
        err = np.linalg.norm(x - x_star) / np.linalg.norm(x_star)
        print("node %d: |x - x*| / |x*| = %.2e (alone it would be %.2e)" %
              (i, err, np.linalg.norm(alone - x_star) / np.linalg.norm(x_star)))
        if not err < 3e-2 or not np.linalg.norm(alone - x_star) / np.linalg.norm(x_star) > 0.1:
            print(logs[i])
            failed = True
    if len(models) == n:
        err = np.linalg.norm(np.mean(models, axis=0) - x_star) / np.linalg.norm(x_star)
        print("average model: |x - x*| / |x*| = %.2e" % err)
        failed = failed or not err < 1e-2
    # An option the node refuses: the exception carries the node's message.
    import starling
    try:
        starling.Node(np.zeros(3), cluster=cluster, id=0, secret_key="%s/node-0.key" % folder,
                      algorithm="dgd", iterations=10)
        print("a node with --algorithm dgd and no --step was created")
        failed = True
    except starling.StarlingError as e:
        print("refused as expected:", e)
        if "--step: required for --algorithm dgd" not in str(e):
            failed = True
    try:
        starling.Node(np.zeros(3), cluster=cluster, id=9, secret_key="%s/node-0.key" % folder)
        failed = True
    except starling.StarlingError as e:
        print("refused as expected:", e)
        if "--id 9" not in str(e):
            failed = True
    # A keyword that is a prefix of an option is not guessed: local_step is not local_steps.
    try:
        starling.Node(np.zeros(3), cluster=cluster, id=0, secret_key="%s/node-0.key" % folder,
                      iterations=10, local_step=4)
        print("a node with local_step=4 was created (taken as --local-steps?)")
        failed = True
    except starling.StarlingError as e:
        print("refused as expected:", e)
        if "--local-step: unknown option; did you mean --local-steps?" not in str(e):
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
