"""The Python package with NumPy, on a convex problem whose optimum is known,
gives the daemon's result for the same data, seed and options, with deterministic round-based
methods (DGD and gradient tracking: full gradients, no randomness).

The test writes least-squares data itself: 4 nodes of different sizes (23, 31, 40, 58 rows, so
that the loss scale s = N/M is not 1/m_i), rows from different distributions, labels of
scales 0.5 to 4 (not more: a node whose labels are 1000x smaller than another's has, at the
network's optimum, a local objective 1000x its value at x0, which starlingd's divergence guard
takes for divergence), as one CSV with a node column (--partition column:0, so that the shards are
the ones written). Then, on one loopback cluster with CURVE:
  1. starlingd x 4 with the built-in problem (--problem least-squares --data the CSV);
  2. round_worker.py x 4: starling.Node over the same cluster file and options, with NumPy's
     gradient s A_i^T (A_i x - b_i) + l2 x of the same rows.
Both final models of every node must agree to 1e-10 relative (see EQUAL_RTOL), and gradient
tracking's must be the optimum of sum_i f_i, computed here with numpy.linalg.lstsq on the
stacked system [sqrt(s) A; sqrt(N l2) I] x = [sqrt(s) b; 0], to 1e-8 relative."""
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
os.environ.setdefault("STARLING_LIBRARY", os.path.join(os.environ.get("STARLING_BUILD_DIR", ""),
                                                       "capi", "libstarling.so"))
import harness  # noqa: E402

# Not bitwise: the daemon's gradient is Eigen's a^T (a x - b) (its own blocking and summation
# order), this one NumPy's BLAS. Each gradient differs by a few ulps of its terms (~1e-16
# relative); DGD and gradient tracking are contractions here (step below 1/L), so the
# difference does not grow across rounds: measured 0.6e-16 to 3.6e-16 relative. 1e-10 leaves
# six orders of magnitude of margin, and is still tight: a loss scale off by 1e-6 in the
# workers' gradients (tried) moved gradient tracking's result by 2.3e-9 and DGD's by 3.4e-8.
EQUAL_RTOL = 1e-10
OPTIMUM_RTOL = 1e-8
N, D, L2 = 4, 5, 0.01
ROWS = [23, 31, 40, 58]


def write_data(folder):
    rng = np.random.default_rng(18)
    truth = rng.normal(size=D)
    rows, shards = [], []
    for i, m in enumerate(ROWS):
        A = rng.normal(loc=0.3 * i, scale=1.0 + 0.5 * i, size=(m, D))
        b = 2.0 ** (i - 1) * (A @ (truth + rng.normal(size=D)) + rng.normal(scale=0.1, size=m))
        shards.append((A, b))
        rows += [[i, b[k]] + list(A[k]) for k in range(m)]
    order = rng.permutation(len(rows))  # the node column, not the order, decides the shards
    path = os.path.join(folder, "data.csv")
    with open(path, "w") as f:
        f.write("node,label," + ",".join("f%d" % k for k in range(D)) + "\n")
        for r in order:
            f.write(",".join(repr(float(v)) if k else str(int(v)) for k, v in enumerate(rows[r]))
                    + "\n")
    s = N / float(sum(ROWS))  # starlingd's default loss scale N/M
    for i, (A, b) in enumerate(shards):
        np.savez(os.path.join(folder, "shard-%d.npz" % i), A=A, b=b, s=s, l2=L2)
    return path, shards, s


def optimum(shards, s):
    A = np.vstack([a for a, _ in shards])
    b = np.concatenate([b for _, b in shards])
    big = np.vstack([np.sqrt(s) * A, np.sqrt(N * L2) * np.eye(D)])
    rhs = np.concatenate([np.sqrt(s) * b, np.zeros(D)])
    return np.linalg.lstsq(big, rhs, rcond=None)[0]


def step_for(shards, s):
    # 0.5 / L, L = max_i lambda_max(s A_i^T A_i) + l2: inside both methods' stability range.
    return 0.5 / max(s * np.linalg.norm(A, 2) ** 2 + L2 for A, _ in shards)


def main():
    folder = harness.scratch("pyround")
    data, shards, s = write_data(folder)
    x_star = optimum(shards, s)
    step = repr(step_for(shards, s))
    base = harness.port_base()
    starlingd = os.path.join(harness.build_dir(), "node", "starlingd")
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "round_worker.py")
    failed = False
    keyed = harness.write_cluster(folder, N, harness.ring(N), base)
    with open(keyed) as f:
        text = f.read()
    port = base

    def on_port(p):
        # The same nodes and keys on another port of our base (offsets 1..4): a run's sockets
        # may linger after it.
        path = os.path.join(folder, "cluster-%d.conf" % p)
        with open(path, "w") as f:
            f.write(text.replace(":%d " % base, ":%d " % p))
        return path

    for algorithm, iterations in (("gradient-tracking", 600), ("dgd", 300)):
        port += 1
        cluster = on_port(port)
        common = ["--algorithm", algorithm, "--step", step, "--iterations", str(iterations)]
        daemon_dir = os.path.join(folder, "daemon-" + algorithm)
        os.makedirs(daemon_dir)
        argvs = [[starlingd, "--cluster", cluster, "--id", str(i), "--secret-key",
                  os.path.join(folder, "node-%d.key" % i), "--problem", "least-squares",
                  "--data", data, "--partition", "column:0", "--label-column", "1", "--l2",
                  repr(L2), "--linger-s", "10", "--final-model",
                  os.path.join(daemon_dir, "model-%d.txt" % i)] + common for i in range(N)]
        t0 = time.monotonic()
        codes, logs = harness.run_workers(daemon_dir, argvs, 300)
        print("%s: starlingd x %d: exit codes %s in %.1f s" % (algorithm, N, codes,
                                                                time.monotonic() - t0))
        if codes != [0] * N:
            print("\n".join(logs))
            return 1
        port += 1
        cluster = on_port(port)
        abi_dir = os.path.join(folder, "abi-" + algorithm)
        os.makedirs(abi_dir)
        argvs = [[sys.executable, worker, folder, str(i), cluster, algorithm, step,
                  str(iterations)] for i in range(N)]
        t0 = time.monotonic()
        codes, logs = harness.run_workers(abi_dir, argvs, 300)
        print("%s: starling.Node x %d: exit codes %s in %.1f s" % (algorithm, N, codes,
                                                                    time.monotonic() - t0))
        if codes != [0] * N:
            print("\n".join(logs))
            return 1
        for i in range(N):
            daemon = np.loadtxt(os.path.join(daemon_dir, "model-%d.txt" % i))
            abi = np.load(os.path.join(abi_dir, "model-%d.npy" % i))
            diff = np.linalg.norm(abi - daemon) / np.linalg.norm(daemon)
            gap_d = np.linalg.norm(daemon - x_star) / np.linalg.norm(x_star)
            gap_a = np.linalg.norm(abi - x_star) / np.linalg.norm(x_star)
            print("  node %d: |abi - daemon| / |daemon| = %.2e; |x - x*| / |x*|: daemon %.2e, "
                  "abi %.2e" % (i, diff, gap_d, gap_a))
            if not diff < EQUAL_RTOL:
                failed = True
            # Gradient tracking is exact; DGD with a constant step stops O(step) away from x*.
            if algorithm == "gradient-tracking" and not (gap_d < OPTIMUM_RTOL and
                                                         gap_a < OPTIMUM_RTOL):
                failed = True
        expected = iterations + (1 if algorithm == "gradient-tracking" else 0)
        for i, log in enumerate(logs):
            if ("gradients %d " % expected) not in log:
                print("worker %d did not give %d gradients:\n%s" % (i, expected, log))
                failed = True
    print("FAILED" if failed else "OK")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
