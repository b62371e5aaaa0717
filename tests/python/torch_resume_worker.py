"""One node of test_torch_checkpoint.py: nn.Linear(d, 1) trained with torch.optim.SGD
(momentum 0.9) through starling.torch.DecentralizedOptimizer, with --checkpoint FOLDER/node-i.ckpt
every 50 steps and --resume. Prints every save of the optimizer's state and what it resumed with
(step, norm of the momentum buffers). ROLE: kill:N (SIGKILL on itself after N steps), hold:N
(after N steps, wait until FOLDER/back exists: at most 300 s), back (a restarted worker: writes
FOLDER/back once resumed).
Usage: torch_resume_worker.py FOLDER I CLUSTER STEPS ROLE"""
import os
import signal
import sys
import time

import numpy as np
import torch

import starling.torch

folder, node_id, cluster, steps = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
role, _, at = sys.argv[5].partition(":")
kill_at = int(at) if role == "kill" else 0
hold_at = int(at) if role == "hold" else 0
torch.manual_seed(0)
shard = np.load("%s/shard-%d.npz" % (folder, node_id))
X = torch.tensor(shard["A"], dtype=torch.float32)
y = torch.tensor(shard["b"], dtype=torch.float32).reshape(-1, 1)
model = torch.nn.Linear(X.shape[1], 1)
sgd = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)


def momentum_norm():
    buffers = [s["momentum_buffer"] for s in sgd.state.values()
               if s.get("momentum_buffer") is not None]
    return float(torch.sqrt(sum((b.double() ** 2).sum() for b in buffers))) if buffers else 0.0


class Logged(starling.torch.DecentralizedOptimizer):
    def save_optimizer(self):
        super().save_optimizer()
        print("optimizer saved: step %d momentum %.17g" % (self._steps, momentum_norm()),
              flush=True)


opt = Logged(sgd, cluster=cluster, id=node_id, secret_key="%s/node-%d.key" % (folder, node_id),
             local_steps=2, iterations=steps, seed=3, exchange_timeout_ms=500, linger_s=60,
             progress_window=4, checkpoint="%s/node-%d.ckpt" % (folder, node_id),
             checkpoint_every=50, resume=True)
print("resumed: node steps %d optimizer step %s momentum %.17g" %
      (opt.counters()["local_steps"], opt.resumed_optimizer_step, momentum_norm()), flush=True)
if role == "back":
    open("%s/back" % folder, "w").close()
generator = torch.Generator().manual_seed(node_id)
t = opt.counters()["local_steps"]  # a resumed node goes on from its checkpoint's step
while True:
    if kill_at > 0 and t == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    if hold_at > 0 and t == hold_at:  # the node's thread serves its neighbours meanwhile
        deadline = time.monotonic() + 300
        while not os.path.exists("%s/back" % folder):
            if time.monotonic() > deadline:
                sys.exit("worker %d: no restarted worker after 300 s at step %d" % (node_id, t))
            time.sleep(0.05)
    for group in sgd.param_groups:  # a decaying step, by the node's step count
        group["lr"] = 0.02 / (1.0 + t / 50.0)
    batch = torch.randint(0, X.shape[0], (32,), generator=generator)
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(X[batch]), y[batch]) / 2
    loss.backward()
    t += 1
    if not opt.step():
        break
print("exit", opt.finish())
w = torch.cat([model.weight.detach().reshape(-1), model.bias.detach().reshape(-1)]).numpy()
np.save("%s/model-%d.npy" % (folder, node_id), w.astype(np.float64))
opt.close()
