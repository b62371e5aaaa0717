"""BatchNorm buffers through starling.torch.DecentralizedOptimizer: 4 processes (CURVE,
loopback, a ring) train a small CNN with BatchNorm on label-sorted Fashion-MNIST shards (each
worker sees 2-3 classes, so each worker's running statistics differ). With model=model the
running_mean/running_var are averaged with the weights: the workers' buffers end as close to
each other as their weights; with buffers="local" they stay far apart. average_state_dicts()
of the workers is checked against the mean computed here. Data: Debian's
dataset-fashion-mnist (skipped, exit 77, without it or without torch)."""
import gzip
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import harness  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist"


def idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * k:8 + 4 * k], "big") for k in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def spread(states, keys):
    """max over keys and workers of ||s_i - mean|| / ||mean||: how far apart the workers are."""
    import torch
    worst = 0.0
    for k in keys:
        stacked = torch.stack([s[k].double() for s in states])
        mean = stacked.mean(0)
        for s in stacked:
            worst = max(worst, float((s - mean).norm() / mean.norm()))
    return worst


def run(folder, cluster, n, steps, mode):
    import torch
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bn_worker.py")
    argvs = [[sys.executable, worker, folder, str(i), cluster, str(steps), mode]
             for i in range(n)]
    codes, logs = harness.run_workers(folder, argvs, 500)
    for i in range(n):
        if codes[i] != 0:
            print("%s: worker %d exit %s:\n%s" % (mode, i, codes[i], logs[i]))
            return None, logs
    return [torch.load("%s/state-%s-%d.pt" % (folder, mode, i)) for i in range(n)], logs


def main():
    try:
        import torch
        import starling.torch
    except ImportError:
        print("SKIP: torch is not installed (Debian: apt-get install python3-torch)")
        return harness.SKIP
    if not os.path.exists(DATA + "/train-images-idx3-ubyte.gz"):
        print("SKIP: %s missing (Debian: apt-get install dataset-fashion-mnist)" % DATA)
        return harness.SKIP
    n, rows, steps = 4, 600, 300
    images = idx(DATA + "/train-images-idx3-ubyte.gz")[:12000].astype(np.float32) / 255.0
    labels = idx(DATA + "/train-labels-idx1-ubyte.gz")[:12000].astype(np.int64)
    order = np.argsort(labels, kind="stable")  # label-sorted shards: non-i.i.d.
    folder = harness.scratch("batchnorm")
    for i in range(n):
        take = order[i * len(order) // n:(i + 1) * len(order) // n]
        take = take[np.linspace(0, len(take) - 1, rows).astype(int)]
        np.savez("%s/shard-%d.npz" % (folder, i), X=images[take][:, None], y=labels[take])
    cluster = harness.write_cluster(folder, n, harness.ring(n), harness.port_base())
    failed = False

    averaged, logs = run(folder, cluster, n, steps, "average")
    local, _ = run(folder, cluster, n, steps, "local")
    if averaged is None or local is None:
        return 1
    if "buffers 1.running_mean, 1.running_var, 5.running_mean, 5.running_var" not in logs[0]:
        print("the worker does not say which buffers it exchanges:\n" + logs[0])
        failed = True
    buffers = [k for k in averaged[0] if "running" in k]
    weights = [k for k in averaged[0] if k.endswith("weight") or k.endswith("bias")]
    for mode, states in (("average", averaged), ("local", local)):
        print("%s: relative spread across workers: weights %.3g, running stats %.3g" %
              (mode, spread(states, weights), spread(states, buffers)))
    if not spread(averaged, buffers) < 0.15:
        print("FAIL: with model=model the workers' running statistics are not averaged")
        failed = True
    if not (spread(local, buffers) > 0.2 and spread(local, buffers) > 3 * spread(averaged, buffers)):
        print("FAIL: buffers=\"local\" should leave the running statistics apart")
        failed = True
    # average_state_dicts: floats averaged, num_batches_tracked taken from the first.
    mean = starling.torch.average_state_dicts(local)
    for k in buffers + weights:
        expected = sum(s[k].double() for s in local) / n
        if not torch.allclose(mean[k].double(), expected, rtol=1e-6, atol=1e-7):
            print("FAIL: average_state_dicts %s" % k)
            failed = True
    if mean["1.num_batches_tracked"].dtype != torch.int64:
        print("FAIL: num_batches_tracked should stay an integer")
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
