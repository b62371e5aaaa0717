"""One node of test_round_equality.py: a round-based method (DGD or gradient tracking) run by
starling.Node over this process's NumPy gradients of least squares on its shard,
f_i(x) = s * sum_rows (a.x - b)^2 / 2 + (l2/2) ||x||^2 (s, l2 and the rows from
FOLDER/shard-i.npz: the objective starlingd builds from the same rows). Writes the final model to
FOLDER/abi-ALGORITHM/model-i.npy (float64) and the counters.
Usage: round_worker.py FOLDER I CLUSTER ALGORITHM STEP ITERATIONS"""
import json
import os
import sys

import numpy as np

import starling

folder, node_id, cluster, algorithm = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
step, iterations = sys.argv[5], int(sys.argv[6])
shard = np.load(os.path.join(folder, "shard-%d.npz" % node_id))
A, b, s, l2 = shard["A"], shard["b"], float(shard["s"]), float(shard["l2"])
x = np.zeros(A.shape[1])
out = os.path.join(folder, "abi-" + algorithm)
node = starling.Node(x, cluster=cluster, id=node_id,
                     secret_key=os.path.join(folder, "node-%d.key" % node_id),
                     algorithm=algorithm, step=step, iterations=iterations, linger_s=10,
                     metrics=os.path.join(out, "node-%d.jsonl" % node_id))
gradients = 0
while node.iterate():
    node.gradient(s * (A.T @ (A @ x - b)) + l2 * x)
    gradients += 1
print("exit", node.finish())
print("gradients", gradients, "counters", json.dumps(node.counters()))
np.save(os.path.join(out, "model-%d.npy" % node_id), x)
node.close()
