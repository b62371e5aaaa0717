"""One node of test_torch_batchnorm.py: a small CNN with BatchNorm trained on this worker's
label-sorted Fashion-MNIST shard (FOLDER/shard-i.npz) through DecentralizedOptimizer, with
MODE "average" (model=model, the default buffers="average"), "local" (buffers="local") or
"params" (no model: the optimizer's parameters only). Writes FOLDER/state-MODE-i.pt."""
import sys

import numpy as np
import torch

import starling.torch

folder, node_id, cluster, steps, mode = (sys.argv[1], int(sys.argv[2]), sys.argv[3],
                                         int(sys.argv[4]), sys.argv[5])
torch.set_num_threads(1)
torch.manual_seed(0)  # every worker starts from the same weights
shard = np.load("%s/shard-%d.npz" % (folder, node_id))
X = torch.tensor(shard["X"], dtype=torch.float32)
y = torch.tensor(shard["y"], dtype=torch.int64)
model = torch.nn.Sequential(
    torch.nn.Conv2d(1, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(8, 16, 3), torch.nn.BatchNorm2d(16), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Flatten(), torch.nn.Linear(16 * 5 * 5, 10))
sgd = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
extra = {"params": {}, "average": {"model": model}, "local": {"model": model, "buffers": "local"}}
opt = starling.torch.DecentralizedOptimizer(
    sgd, cluster=cluster, id=node_id, secret_key="%s/node-%d.key" % (folder, node_id),
    local_steps=2, iterations=steps, seed=3, exchange_timeout_ms=500, linger_s=5,
    progress_window=4, **extra[mode])
generator = torch.Generator().manual_seed(node_id)
model.train()
while True:
    batch = torch.randint(0, X.shape[0], (32,), generator=generator)
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(X[batch]), y[batch]).backward()
    if not opt.step():
        break
print("exit", opt.finish())
if mode == "average":
    # The buffers are views of the exchanged tensor, as the parameters are.
    for name, b in model.named_buffers():
        if b.is_floating_point():
            assert b.data_ptr() >= opt.flat.data_ptr() and \
                b.data_ptr() < opt.flat.data_ptr() + opt.flat.numel() * opt.flat.element_size(), name
torch.save(model.state_dict(), "%s/state-%s-%d.pt" % (folder, mode, node_id))
opt.close()
