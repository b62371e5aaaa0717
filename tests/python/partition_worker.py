"""A worker for test_worker_partition.py, started by launch_local.py --worker ... --partition:
takes its rows of the LIBSVM file given as its argument with starling.shard (id, node count,
partition and seed from the launcher's environment), writes them to STARLING_RUN_DIR/rows-K.txt,
then trains an L2-regularized logistic regression on them alone with SwarmSGD (starling.Node,
mini-batch SGD steps of its own) and writes its final model to STARLING_RUN_DIR/model-K.txt."""
import os
import sys

import numpy as np

import starling


def read_libsvm(path, features):
    labels, x = [], []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            labels.append(float(parts[0]))
            row = np.zeros(features)
            for item in parts[1:]:
                k, v = item.split(":")
                row[int(k) - 1] = float(v)
            x.append(row)
    return np.array(x), np.array(labels)


def main():
    data = sys.argv[1]
    steps = int(sys.argv[2])
    starling.stop_on_signals()
    where = starling.launch_options()
    run_dir = os.environ["STARLING_RUN_DIR"]
    rows = starling.shard(data, format="libsvm", features=123)
    np.savetxt(os.path.join(run_dir, "rows-%d.txt" % where["id"]), rows, fmt="%d")
    x_all, y_all = read_libsvm(data, 123)
    x, y = x_all[rows], y_all[rows]
    print("node %d: %d rows, labels %s" % (where["id"], len(rows),
                                          dict(zip(*np.unique(y, return_counts=True)))),
          flush=True)
    model = np.zeros(123)
    rng = np.random.default_rng(100 + where["id"])
    node = starling.Node(model, iterations=steps, local_steps=2, **where)
    while True:
        batch = rng.integers(0, len(y), 32)
        margin = y[batch] * (x[batch] @ model)
        grad = -(x[batch].T @ (y[batch] / (1.0 + np.exp(margin)))) / len(batch) + 1e-4 * model
        model -= 0.1 * grad
        if not node.step():
            break
    node.finish()
    np.savetxt(os.path.join(run_dir, "model-%d.txt" % where["id"]), model)
    print("node %d: finished %d steps" % (where["id"], node.counters()["local_steps"]),
          flush=True)


if __name__ == "__main__":
    main()
