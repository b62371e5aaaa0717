"""One node of test_torch_frozen.py: a small MLP whose first layer is frozen
(requires_grad=False) trained through DecentralizedOptimizer(model=model) on random data.
SEED seeds the model's weights (the frozen layer's among them). Writes FOLDER/state-i.pt."""
import sys

import torch

import starling.torch

folder, node_id, cluster, seed = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
torch.set_num_threads(1)
torch.manual_seed(seed)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
model[0].weight.requires_grad_(False)
sgd = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05)
opt = starling.torch.DecentralizedOptimizer(
    sgd, cluster=cluster, id=node_id, secret_key="%s/node-%d.key" % (folder, node_id),
    local_steps=2, iterations=60, model=model, exchange_timeout_ms=500, linger_s=5)
generator = torch.Generator().manual_seed(100 + node_id)
while True:
    x = torch.randn(16, 8, generator=generator)
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), (x[:, 0] > 0).long()).backward()
    if not opt.step():
        break
opt.finish()
torch.save(model.state_dict(), "%s/state-%d.pt" % (folder, node_id))
opt.close()
