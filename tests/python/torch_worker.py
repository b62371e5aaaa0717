"""One node of test_torch_wrapper.py: a tiny PyTorch model (nn.Linear(d, 1), so that the
optimum is known) trained on its shard with torch.optim.SGD (momentum 0.5) through
starling.torch.DecentralizedOptimizer. Writes its final parameters to FOLDER/model-i.npy."""
import sys

import numpy as np
import torch

import starling.torch

folder, node_id, cluster, steps = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
torch.manual_seed(0)
shard = np.load("%s/shard-%d.npz" % (folder, node_id))
X = torch.tensor(shard["A"], dtype=torch.float32)
y = torch.tensor(shard["b"], dtype=torch.float32).reshape(-1, 1)
model = torch.nn.Linear(X.shape[1], 1)
sgd = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
opt = starling.torch.DecentralizedOptimizer(
    sgd, cluster=cluster, id=node_id, secret_key="%s/node-%d.key" % (folder, node_id),
    local_steps=2, iterations=steps, seed=3, exchange_timeout_ms=500, linger_s=5,
    progress_window=4)
scheduler = torch.optim.lr_scheduler.LambdaLR(sgd, lambda t: 1.0 / (1.0 + t / 50.0))
generator = torch.Generator().manual_seed(node_id)
while True:
    batch = torch.randint(0, X.shape[0], (64,), generator=generator)
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(X[batch]), y[batch]) / 2
    loss.backward()
    running = opt.step()
    scheduler.step()
    if not running:
        break
print("exit", opt.finish())
print("counters", opt.counters())
w = torch.cat([model.weight.detach().reshape(-1), model.bias.detach().reshape(-1)]).numpy()
# The parameters are views into the node's buffer: the same values.
assert np.array_equal(w, opt.flat.numpy()), "parameters are not views of the shared buffer"
np.save("%s/model-%d.npy" % (folder, node_id), w.astype(np.float64))
opt.close()
