"""starling.torch: decentralized training for a PyTorch loop that keeps its model, its data
loader and its torch.optim optimizer.

    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    opt = starling.torch.DecentralizedOptimizer(opt, model=model, cluster="cluster.conf",
                                                id=rank, secret_key=key, local_steps=4,
                                                iterations=steps)
    for x, y in loader:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        if not opt.step():      # the optimizer's step, then Starling's step boundary
            break               # the budget of local steps is done
    opt.finish()                # every node done: this worker's final model is in `model`

The wrapper flattens the optimizer's parameters ONCE into one contiguous CPU tensor and makes
every parameter a view into it (param.data = flat[a:b].view_as(param)): the optimizer, the
model and autograd keep working on the same Parameter objects, and the node exchanges the one
buffer without any copy on the caller's side. Parameters must be CPU tensors of one dtype
(float32 or float64). Load weights before wrapping, or afterwards with load_state_dict (it
copies in place); a parameter replaced by a new tensor afterwards is no longer exchanged.

Given the model (model=model), the model's floating-point buffers are exchanged too, in the
same flat tensor after the parameters: BatchNorm's running_mean and running_var are averaged
with the weights, so that every worker's model normalizes as the averaged weights expect.
Integer buffers (num_batches_tracked) stay local: they count this worker's batches. With
buffers="local" the buffers are not exchanged. Parameters of the model that the optimizer does
not train (requires_grad=False, frozen) are not exchanged either: they do not change, so every
worker that loaded the same weights holds the same values. The wrapper prints one line saying
what it exchanges. Without model=, only the optimizer's parameters are exchanged.

Each worker ends with its own model, close to the others' but not identical (gossip averages
pairs, not everyone at once): average_state_dicts() averages the workers' final state dicts
into one model.

The optimizer's own state (momentum, Adam's moments) stays local: it is not averaged (SwarmSGD
averages the parameters only, as its paper's training does; averaging the state too would
double every exchange's bytes for a quantity that is a running average of this node's own
gradients). With checkpoint=FILE it is checkpointed beside the node's FILE, in FILE.optim
(torch.save of optimizer.state_dict() and the step, written atomically every
checkpoint_every local steps and/or checkpoint_every_s seconds, as the node writes FILE, and at
stop()); with resume=True it is loaded back, so a killed and restarted worker resumes with its
momentum. The two files are written at the same cadence but not at the same instant (the node
writes its own checkpoint on its thread, a step later at most, or a period apart if killed
between the two writes): the resumed momentum is the one of the latest FILE.optim, at most one
checkpoint period away from the model's step, which for a running average of gradients is far
closer than starting it from zero. resumed_optimizer_step says which step it was saved at.
"""
import hashlib
import os
import sys
import time

import torch

from .node import Node


def flatten_parameters(params):
    """Moves `params` (tensors of one dtype, CPU: parameters and buffers alike) into one new
    contiguous tensor and makes each a view into it; returns the flat tensor."""
    params = list(params)
    if not params:
        raise ValueError("starling.torch: no parameters to train")
    dtype = params[0].dtype
    for p in params:
        if p.dtype not in (torch.float32, torch.float64) or p.dtype != dtype:
            raise TypeError("starling.torch: every parameter must be float32, or every one "
                            "float64 (found %s and %s)" % (dtype, p.dtype))
        if p.device.type != "cpu":
            raise TypeError("starling.torch: parameters must be on the CPU (found %s)" % p.device)
    flat = torch.empty(sum(p.numel() for p in params), dtype=dtype)
    offset = 0
    with torch.no_grad():
        for p in params:
            n = p.numel()
            flat[offset:offset + n].copy_(p.data.reshape(-1))
            p.data = flat[offset:offset + n].view_as(p)
            offset += n
    return flat


def average_state_dicts(state_dicts):
    """The element-wise mean of the workers' state dicts (model.state_dict() of each, after
    finish()): floating-point entries averaged, the others (num_batches_tracked) taken from the
    first. The result loads into the model with load_state_dict."""
    state_dicts = list(state_dicts)
    if not state_dicts:
        raise ValueError("starling.torch.average_state_dicts: no state dicts")
    keys = list(state_dicts[0].keys())
    for i, sd in enumerate(state_dicts[1:], 1):
        if list(sd.keys()) != keys:
            raise ValueError("starling.torch.average_state_dicts: state dict %d has other entries "
                             "than state dict 0" % i)
    averaged = {}
    for key in keys:
        first = state_dicts[0][key]
        if torch.is_tensor(first) and first.is_floating_point():
            averaged[key] = torch.stack([sd[key].to(first.dtype) for sd in state_dicts]).mean(0)
        else:
            averaged[key] = first.clone() if torch.is_tensor(first) else first
    return averaged


def model_digest(model, exchanged):
    """A digest of what every worker's `model` must share without exchanging it: the names,
    dtypes, shapes and values of its parameters not in `exchanged` (frozen ones), and the names
    and shapes of those in it (the same architecture). 16 hex digits."""
    h = hashlib.sha256()
    for name, p in model.named_parameters():
        shared = any(p is q for q in exchanged)
        h.update(("%s %s %s %s\n" % ("exchanged" if shared else "frozen", name, p.dtype,
                                      tuple(p.shape))).encode())
        if not shared:
            h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def _exchanged_tensors(optimizer, model, buffers):
    """The tensors to exchange (the optimizer's parameters, then with a model and
    buffers="average" its floating-point buffers) and a line saying what is exchanged."""
    if buffers not in ("average", "local"):
        raise ValueError("starling.torch.DecentralizedOptimizer: buffers=%r: \"average\" (the "
                         "default) or \"local\"" % (buffers,))
    params = []
    for p in (p for group in optimizer.param_groups for p in group["params"]):
        if not any(p is q for q in params):
            params.append(p)
    if model is None:
        return params, "exchanging the optimizer's %d parameters (%d values); without model= " \
            "the model's buffers are not exchanged" % (len(params), sum(p.numel() for p in params))
    tensors = list(params)
    frozen = [name for name, p in model.named_parameters() if not any(p is q for q in params)]
    averaged, local = [], []
    for name, b in model.named_buffers():
        if b is None or any(b is q for q in tensors):
            continue
        if buffers == "average" and b.is_floating_point():
            tensors.append(b)
            averaged.append(name)
        else:
            local.append(name)
    line = "exchanging %d parameters" % len(params)
    line += (" and buffers %s" % ", ".join(averaged)) if averaged else " and no buffers"
    line += " (%d values)" % sum(t.numel() for t in tensors)
    if local:
        line += "; kept local: %s" % ", ".join(local)
    if frozen:
        line += ("; not trained by the optimizer, not exchanged (equal on every worker, or the "
                 "workers refuse each other naming --model-digest): %s" % ", ".join(frozen))
    return tensors, line


class DecentralizedOptimizer:
    """Wraps `optimizer` (any torch.optim.Optimizer): step() runs its step, then the node's step
    boundary (merges from neighbours land in the parameters there, and only there).
    `local_steps` is SwarmSGD's H (--local-steps), `iterations` the budget of local steps
    (--iterations); `model`, if given, has its floating-point buffers exchanged with the
    parameters (buffers="average", the default) or not (buffers="local"); the other keyword
    arguments are starlingd's options (starling.Node)."""

    def __init__(self, optimizer, cluster=None, id=None, secret_key=None, local_steps=1,
                 iterations=None, model=None, buffers="average", **options):
        if iterations is None:
            raise ValueError("starling.torch.DecentralizedOptimizer: iterations (the budget of "
                             "local steps) is required: every node must do the same number")
        self.optimizer = optimizer
        tensors, self.exchanged = _exchanged_tensors(optimizer, model, buffers)
        self.flat = flatten_parameters(tensors)
        if model is not None:
            # Frozen parameters never meet: workers that start them differently (another seed,
            # other weights loaded) would average trained layers on top of unlike frozen ones.
            # The digest enters the run id, so that such workers are refused, naming it.
            options.setdefault("model_digest", model_digest(model, tensors))
            self.exchanged += "; model digest %s" % options["model_digest"]
        print("starling.torch: node %s: %s" % (id, self.exchanged), file=sys.stderr, flush=True)
        self.node = Node(self.flat.numpy(), cluster=cluster, id=id, secret_key=secret_key,
                         local_steps=local_steps, iterations=iterations, **options)
        checkpoint = options.get("checkpoint")
        self._optim_file = str(checkpoint) + ".optim" if checkpoint else None
        self._every = int(options.get("checkpoint_every") or 0)
        self._every_s = float(options.get("checkpoint_every_s") or 0)
        self._steps = self.node.counters()["local_steps"]  # a resumed node's go on
        self._saved_at = time.monotonic()
        self.resumed_optimizer_step = None
        if self._optim_file and options.get("resume") and os.path.exists(self._optim_file):
            self._load_optimizer()

    def _load_optimizer(self):
        try:
            saved = torch.load(self._optim_file)
            self.optimizer.load_state_dict(saved["optimizer"])
        except Exception as e:
            raise RuntimeError("starling.torch: %s: cannot restore the optimizer's state: %s"
                               % (self._optim_file, e)) from e
        self.resumed_optimizer_step = int(saved["local_steps"])

    def save_optimizer(self):
        """Writes the optimizer's state to CHECKPOINT.optim now (atomically: a kill leaves the
        previous one). Done by step() at the checkpoint cadence and by stop()."""
        if not self._optim_file:
            return
        tmp = self._optim_file + ".tmp"
        torch.save({"local_steps": self._steps, "optimizer": self.optimizer.state_dict()}, tmp)
        os.replace(tmp, self._optim_file)
        self._saved_at = time.monotonic()

    def step(self, closure=None):
        """The optimizer's step, then the step boundary. Returns True while the node takes
        steps, False once its budget is done (the parameters still got the merges)."""
        self.optimizer.step(closure)
        with torch.no_grad():
            running = self.node.step()
        if running:
            self._steps += 1
            if self._optim_file and (
                    (self._every > 0 and self._steps % self._every == 0) or
                    (self._every_s > 0 and time.monotonic() - self._saved_at >= self._every_s)):
                self.save_optimizer()
        return running

    def zero_grad(self, set_to_none=False):
        self.optimizer.zero_grad(set_to_none=set_to_none)

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    def counters(self):
        return self.node.counters()

    def finish(self, timeout=None):
        """Waits until every node has done its budget (or --linger-s), then the parameters hold
        the final model; returns starlingd's exit code."""
        return self.node.finish(timeout)

    def stop(self):
        self.node.stop()
        self.save_optimizer()

    def close(self):
        self.node.close()
