#!/usr/bin/env python3
"""A PyTorch training loop on Fashion-MNIST, decentralized with Starling (SwarmSGD), and the
same loop with torch.distributed (gloo, gradients all-reduced every step) for comparison.

The model, the data loader and the torch.optim optimizer are ordinary PyTorch; Starling only
wraps the optimizer (starling.torch.DecentralizedOptimizer). Data: Debian's
dataset-fashion-mnist (/usr/share/datasets/fashion-mnist); a Starling worker trains on its
starling.shard of the 60,000 training images, the rows a starlingd of the same run would take
(launch_local.py --partition label gives the workers a non-i.i.d. split; iid by default), a
gloo worker on every N-th image of a seeded permutation; worker 0 evaluates its own model
on the 10,000 test images every --eval-every steps and prints a JSON line per evaluation
({"mode", "step", "time_s", "test_accuracy"}; time from the start of training).

Starling (8 workers on this machine, CURVE, ring):
  /usr/bin/python3 examples/launch_local.py --nodes 8 --out runs/torch-fmnist \\
      --worker "/usr/bin/python3 examples/torch_fmnist.py"
torch.distributed (one process per worker; --mode gloo --rank K --world N):
  examples/torch_fmnist.py --bench 8 runs both, one after the other, and prints the
  comparison (time to --target accuracy and final accuracy for each).
Any other option (e.g. --exchange-timeout-ms 500) goes to the Starling node.
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import time

import numpy as np

FMNIST = "/usr/share/datasets/fashion-mnist"
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def load(split, folder):
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(os.path.join(folder, "%s-images-idx3-ubyte.gz" % prefix))
    labels = read_idx(os.path.join(folder, "%s-labels-idx1-ubyte.gz" % prefix))
    x = (images.astype(np.float32) / 255.0 - 0.2860) / 0.3530
    return x[:, None, :, :], labels.astype(np.int64)


def make_model(torch):
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 8, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),   # 8 x 14 x 14
        nn.Conv2d(8, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),  # 16 x 7 x 7
        nn.Flatten(), nn.Linear(16 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, 10))  # 54,314 weights


def accuracy(torch, model, x, y):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(y), 1000):
            correct += (model(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum().item()
    model.train()
    return correct / len(y)


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=["starling", "gloo"], default="starling")
    p.add_argument("--rank", type=int, help="gloo: this worker's rank")
    p.add_argument("--world", type=int, help="gloo: the number of workers")
    p.add_argument("--master-port", type=int, default=29512, help="gloo: rendezvous port")
    p.add_argument("--epochs", type=float, default=5.0, help="passes over each worker's shard")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--local-steps", type=int, default=4, help="SwarmSGD's H")
    p.add_argument("--eval-every", type=int, default=200, help="worker 0: steps between tests")
    p.add_argument("--target", type=float, default=0.88)
    p.add_argument("--data", default=FMNIST)
    p.add_argument("--save", help="write this worker's final parameters here (.npy)")
    p.add_argument("--bench", type=int, metavar="N",
                   help="run Starling and gloo with N workers each and compare them")
    p.add_argument("--out", default="runs/torch-fmnist", help="--bench: run folder")
    return p.parse_known_args(argv)


def train(args, node_args):
    import torch
    torch.set_num_threads(1)  # N workers share this machine's cores
    torch.manual_seed(0)      # every worker starts from the same model
    x, y = load("train", args.data)
    x_test, y_test = load("test", args.data)
    if args.mode == "gloo":
        import torch.distributed as dist
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.master_port))
        dist.init_process_group("gloo", rank=args.rank, world_size=args.world)
        rank, world = args.rank, args.world
    else:
        import starling
        import starling.torch
        starling.stop_on_signals()
        where = starling.launch_options()
        rank, world = where["id"], int(os.environ.get("STARLING_NODES", "0")) or None
        if world is None:
            sys.exit("torch_fmnist.py: STARLING_NODES is not set (launch_local.py --worker sets "
                     "it); the shard depends on the number of workers")
    if args.mode == "gloo":
        order = np.random.default_rng(1).permutation(len(y))[rank::world]
    else:  # the daemons' split of the same file (--partition, --seed: the launcher's)
        order = starling.shard(os.path.join(args.data, "train-images-idx3-ubyte.gz"),
                               format="idx", id=rank, nodes=world)
    shard_x, shard_y = torch.from_numpy(x[order]), torch.from_numpy(y[order])
    test_x, test_y = torch.from_numpy(x_test), torch.from_numpy(y_test)
    model = make_model(torch)
    sgd = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    # Every worker's budget from the smallest shard (the shards differ by one row when the data
    # does not divide evenly): the budget is a run option, and workers whose budgets differ are
    # refused by their neighbours (naming --iterations).
    steps = int(args.epochs * (len(y) // world) / args.batch)
    if args.mode == "starling":
        # The ten lines a PyTorch user changes (docs/how-to/pytorch-numpy.md).
        opt = starling.torch.DecentralizedOptimizer(sgd, model=model,
                                                    local_steps=args.local_steps,
                                                    iterations=steps, args=node_args, **where)
    else:
        opt = sgd
        params = [p for p in model.parameters()]
    generator = torch.Generator().manual_seed(1000 + rank)
    loss_fn = torch.nn.CrossEntropyLoss()
    start = time.monotonic()
    reached = None

    def evaluate(step):
        nonlocal reached
        acc = accuracy(torch, model, test_x, test_y)
        t = time.monotonic() - start
        if reached is None and acc >= args.target:
            reached = t
        print(json.dumps({"mode": args.mode, "step": step, "time_s": round(t, 2),
                          "test_accuracy": acc}), flush=True)

    step = 0
    try:
        while step < steps:
            perm = torch.randperm(len(shard_y), generator=generator)
            for i in range(0, len(perm) - args.batch + 1, args.batch):
                batch = perm[i:i + args.batch]
                opt.zero_grad()
                loss_fn(model(shard_x[batch]), shard_y[batch]).backward()
                if args.mode == "gloo":
                    flat = torch.cat([p.grad.reshape(-1) for p in params])
                    dist.all_reduce(flat)
                    flat /= world
                    offset = 0
                    for p in params:
                        p.grad.copy_(flat[offset:offset + p.numel()].view_as(p))
                        offset += p.numel()
                    opt.step()
                    running = True
                else:
                    running = opt.step()
                step += 1
                if rank == 0 and step % args.eval_every == 0:
                    evaluate(step)
                if step >= steps or not running:
                    break
        if args.mode == "starling":
            opt.finish()  # every node done: the merges of the end phase are in the model
            counters = opt.counters()
            print("counters", json.dumps(counters), flush=True)
        else:
            dist.barrier()
    except KeyboardInterrupt:
        print("interrupted at step %d" % step, file=sys.stderr, flush=True)
        if args.mode == "starling":
            opt.stop()  # a checkpoint if --checkpoint, a goodbye to the neighbours
        return 130
    if rank == 0:
        evaluate(step)
        print(json.dumps({"mode": args.mode, "done": True, "steps": step,
                          "time_s": round(time.monotonic() - start, 2),
                          "time_to_target_s": reached, "target": args.target}), flush=True)
    if args.save:
        np.save(args.save, torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy())
    return 0


def evaluations(path):
    lines = []
    with open(path) as f:
        for line in f:
            if line.startswith("{"):
                lines.append(json.loads(line))
    return lines


def bench(args, rest):
    """Starling, then gloo, with the same model, data, batch, optimizer and epochs."""
    common = ["--epochs", str(args.epochs), "--batch", str(args.batch), "--lr", str(args.lr),
              "--momentum", str(args.momentum), "--eval-every", str(args.eval_every),
              "--target", str(args.target), "--data", args.data]
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    results = {}
    t0 = time.monotonic()
    worker = "%s %s %s" % (sys.executable, os.path.abspath(__file__),
                           " ".join(common + ["--local-steps", str(args.local_steps)] + rest))
    code = subprocess.call([sys.executable, os.path.join(HERE, "launch_local.py"), "--nodes",
                            str(args.bench), "--out", os.path.join(out, "starling"), "--worker",
                            worker, "--no-plots", "--timeout-s", "3600"])
    results["starling"] = (code, time.monotonic() - t0,
                           evaluations(os.path.join(out, "starling", "worker-0.log")))
    t0 = time.monotonic()
    procs, logs = [], []
    for rank in range(args.bench):
        logs.append(os.path.join(out, "gloo-%d.log" % rank))
        with open(logs[-1], "w") as log:
            procs.append(subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--mode", "gloo", "--rank",
                 str(rank), "--world", str(args.bench)] + common, stdout=log,
                stderr=subprocess.STDOUT))
    codes = [p.wait() for p in procs]
    results["gloo"] = (max(codes), time.monotonic() - t0, evaluations(logs[0]))
    print("\n%-9s %5s %10s %15s %14s" % ("mode", "exit", "wall_s", "time_to_%.2f_s" % args.target,
                                         "final_accuracy"))
    for mode, (code, wall, evals) in results.items():
        done = [e for e in evals if e.get("done")]
        accs = [e for e in evals if "test_accuracy" in e]
        final = accs[-1]["test_accuracy"] if accs else float("nan")
        reach = done[0]["time_to_target_s"] if done else None
        print("%-9s %5d %10.1f %15s %14.4f" % (mode, code, wall,
                                              "%.1f" % reach if reach is not None else "not reached",
                                              final))
    return 0 if all(r[0] == 0 for r in results.values()) else 1


def main(argv=None):
    args, rest = parse(sys.argv[1:] if argv is None else argv)
    if args.bench:
        return bench(args, rest)
    return train(args, rest)


if __name__ == "__main__":
    sys.exit(main())
