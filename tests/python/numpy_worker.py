"""One node of test_numpy_node.py: least squares on its own shard (A_i, b_i from FOLDER/shard-i.npz)
with full-batch gradient steps of size LR0 / (1 + t / 50) (LR0 the same on every node) on a NumPy array that a
starling.Node exchanges. Writes the final model to FOLDER/model-i.npy and the counters."""
import json
import sys

import numpy as np

import starling

# --progress-window 4: nodes that step at different rates weigh their gradients differently in
# the fixed point of a decaying step (tests/capi_test.cc measured it); a small window keeps
# their rates equal.

folder, node_id, cluster, steps, dtype = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(
    sys.argv[4]), sys.argv[5]
lr0 = float(sys.argv[6])
shard = np.load("%s/shard-%d.npz" % (folder, node_id))
A, b = shard["A"], shard["b"]
x = np.zeros(A.shape[1], dtype=np.float32 if dtype == "32" else np.float64)
node = starling.Node(x, cluster=cluster, id=node_id, secret_key="%s/node-%d.key" % (folder, node_id),
                     iterations=steps, local_steps=2, seed=3, exchange_timeout_ms=500,
                     linger_s=5, progress_window=4, metrics="%s/node-%d.jsonl" % (folder, node_id))
t = 0
while True:
    grad = A.T @ (A @ x - b) / A.shape[0]
    x -= (lr0 / (1.0 + t / 50.0) * grad).astype(x.dtype)
    t += 1
    if not node.step():
        break
print("exit", node.finish())
print("counters", json.dumps(node.counters()))
np.save("%s/model-%d.npy" % (folder, node_id), x.astype(np.float64))
node.close()
