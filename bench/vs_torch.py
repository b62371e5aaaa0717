#!/usr/bin/env python3
"""Starling against torch.distributed on the same task: `bench/run.sh vs-torch`.

Fashion-MNIST, 8 workers, mini-batch 32, the same number of local steps per worker, the same
shards, model, loss and starting point, four systems, alternating (every repetition runs each
system once, in a rotated order):
  swarmsgd   Starling's SwarmSGD daemons (starlingd via examples/launch_local.py, CURVE on)
  dpsgd      Starling's D-PSGD daemons (the same)
  ddp        PyTorch DistributedDataParallel over gloo: gradients all-reduced every step
  localsgd   PyTorch local SGD over gloo: H local steps, then the models averaged (all_reduce)
Torch runs as Debian's python3-torch under /usr/bin/python3, one thread per process
(torch.set_num_threads(1)), torch.distributed on 127.0.0.1.

Same task, exactly:
  - Shards: `starling-bench-shards` (bench/shard_export.cc) writes the row indices that
    starlingd's own set-up cuts (algorithms::Partition on the file's labels, --partition
    dirichlet:0.5 --seed 1 by default); torch worker K trains on row set K.
  - Model: multinomial = Linear(784, 10) without bias (Starling's d = 7840); mlp = 784-64-10
    with biases and ReLU (Starling's --problem mlp). Features = pixel / 255, as starlingd reads IDX.
  - Loss: node K's f_K = (N m_K / M) * mean cross-entropy of the batch + (l2/2) ||x||^2 (Starling's
    default loss scale s = N/M, MultinomialRegression::BatchGradient's m_K/|B| factor); in torch
    the factor multiplies the loss and l2 is SGD's weight_decay (on every parameter, as Starling's
    regulariser). Plain SGD, no momentum, the same step.
  - Mini-batches: 32 rows of the worker's shard drawn with replacement (as Starling's
    GradientOracle), from a generator seeded per worker.
  - Starting point: zeros (multinomial); for the MLP one small random point (U(-0.05, 0.05),
    numpy seed 1), written to a file that starlingd reads with --x0 and torch copies into its
    layers (Starling's column-major W1, b1, W2, b2 mapped to torch's).
  - Float64 in Starling, float32 in torch (each system's usual precision).

Measured, per run:
  - Test accuracy curve on the 10,000 test images, evaluated after the run (not during it):
    Starling: the average model of the nodes' snapshots (`starling-probe evaluate`, the
    launcher's curves.jsonl; time since the first node started stepping); DDP: worker 0's model
    (all are equal) every --eval-every steps; local SGD: the averaged model at the averaging
    steps (every H steps, sampled every --eval-every). Time 0 = the start of training (data
    loaded, processes connected), on each system's own clock.
  - train_s: the training's wall time (Starling: the first node's first step to the last node's
    finish; torch: the start barrier to the end barrier).
  - time to target: the first curve point at or above the target; target = DDP's final test
    accuracy in the same repetition unless --target is given.
  - bytes per worker: Starling, the nodes' bytes_sent (their metrics); torch, the bytes the
    process wrote (write/writev, /proc/self/io wchar) during training: gloo's TCP sends.
  - CPU seconds per worker during training (Starling: the daemons' cpu_s between the first and
    last metrics line of the training; torch: getrusage(RUSAGE_SELF) between the barriers).
Ratios are against DDP of the same repetition. JSON lines on stdout (one per run, then one
summary line per system and model with medians); a table on stderr.

Usage: bench/vs_torch.py [--models multinomial,mlp] [--systems swarmsgd,dpsgd,ddp,localsgd]
                         [--steps 1500] [--reps 1] [--quick] [--keep]
Worker mode (started by this script): bench/vs_torch.py worker --mode ddp|localsgd ...
"""

import argparse
import gzip
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
FMNIST = os.environ.get("STARLING_FMNIST_DIR", "/usr/share/datasets/fashion-mnist")
TORCH_PYTHON = "/usr/bin/python3"  # Debian's python3-torch
RUN_DEADLINE_S = 1800.0
STOP_GRACE_S = 5.0
SYSTEMS = ("swarmsgd", "dpsgd", "ddp", "localsgd")


def note(message):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), message), file=sys.stderr, flush=True)


class BenchError(Exception):
    pass


# ------------------------------------------------------------------------------------------
# data and model (shared by the worker and the evaluation)

def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    import numpy as np
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape[0], -1)


def load(split):
    prefix = "train" if split == "train" else "t10k"
    import numpy as np
    x = read_idx(os.path.join(FMNIST, "%s-images-idx3-ubyte.gz" % prefix)).astype(np.float32)
    x /= 255.0  # as starlingd's IDX reader
    y = read_idx(os.path.join(FMNIST, "%s-labels-idx1-ubyte.gz" % prefix)).reshape(-1)
    return x, y.astype(np.int64)


def make_model(torch, model, hidden=64):
    nn = torch.nn
    if model == "multinomial":
        return nn.Linear(784, 10, bias=False)
    return nn.Sequential(nn.Linear(784, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def load_starling_vector(torch, net, model, x, hidden=64):
    """Copies Starling's flat model x (numpy float64) into the torch module's parameters."""
    with torch.no_grad():
        if model == "multinomial":
            # x[c * 784 + f] = W(f, c); torch's weight is (10, 784).
            net.weight.copy_(torch.from_numpy(x.reshape(10, 784)))
            return
        d, k, h = 784, 10, hidden
        o = 0
        w1 = x[o:o + h * d].reshape(d, h).T; o += h * d      # H x d, column-major
        b1 = x[o:o + h]; o += h
        w2 = x[o:o + k * h].reshape(h, k).T; o += k * h      # K x H, column-major
        b2 = x[o:o + k]
        for p, v in zip(net.parameters(), (w1, b1, w2, b2)):
            p.copy_(torch.from_numpy(v.copy()))


def flat(torch, net):
    return torch.cat([p.detach().reshape(-1) for p in net.parameters()]).clone()


def accuracy(torch, net, params, x_test, y_test):
    with torch.no_grad():
        o = 0
        for p in net.parameters():
            p.copy_(params[o:o + p.numel()].view_as(p))
            o += p.numel()
        return (net(x_test).argmax(1) == y_test).double().mean().item()


# ------------------------------------------------------------------------------------------
# torch worker

def wchar():
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("wchar:"):
                return int(line.split()[1])
    return 0


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def worker(args):
    import numpy as np
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)  # N workers share this machine's cores
    torch.manual_seed(0)
    x, y = load("train")
    with open(args.shards) as f:
        shards = [np.array(line.split(), dtype=np.int64) for line in f]
    rank, world = args.rank, args.world
    rows = shards[rank]
    shard_x, shard_y = torch.from_numpy(x[rows]), torch.from_numpy(y[rows])
    del x, y
    scale = world * len(rows) / float(sum(len(s) for s in shards))  # N m_K / M
    net = make_model(torch, args.model)
    if args.x0:
        load_starling_vector(torch, net, args.model, np.loadtxt(args.x0, ndmin=1))
    else:
        with torch.no_grad():
            for p in net.parameters():
                p.zero_()
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = torch.nn.parallel.DistributedDataParallel(net) if args.mode == "ddp" else net
    sgd = torch.optim.SGD(model.parameters(), lr=args.step, weight_decay=args.l2)
    loss_fn = torch.nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(1000 + rank)
    params = list(net.parameters())
    snapshots = []
    dist.barrier()
    w0, c0, t0 = wchar(), cpu_s(), time.monotonic()
    for step in range(1, args.steps + 1):
        batch = torch.randint(len(rows), (args.batch,), generator=generator)
        sgd.zero_grad()
        (scale * loss_fn(model(shard_x[batch]), shard_y[batch])).backward()
        sgd.step()
        synced = args.mode == "ddp"
        if args.mode == "localsgd" and (step % args.local_steps == 0 or step == args.steps):
            vec = torch.cat([p.detach().reshape(-1) for p in params])
            dist.all_reduce(vec)
            vec /= world
            with torch.no_grad():
                o = 0
                for p in params:
                    p.copy_(vec[o:o + p.numel()].view_as(p))
                    o += p.numel()
            synced = True
        if rank == 0 and synced and (step % args.eval_every < (args.local_steps if
                                                              args.mode == "localsgd" else 1)
                                     or step == args.steps):
            snapshots.append((step, time.monotonic() - t0, flat(torch, net)))
    dist.barrier()
    train_s = time.monotonic() - t0
    stats = {"rank": rank, "train_s": train_s, "cpu_s": cpu_s() - c0, "bytes": wchar() - w0,
             "shard": len(rows)}
    if rank == 0:
        x_test, y_test = load("test")
        x_test, y_test = torch.from_numpy(x_test), torch.from_numpy(y_test)
        stats["curve"] = [{"step": s, "time": round(t, 3),
                           "test_accuracy": accuracy(torch, net, p, x_test, y_test)}
                          for s, t, p in snapshots]
    with open(args.out, "w") as f:
        json.dump(stats, f)
    dist.destroy_process_group()
    return 0


# ------------------------------------------------------------------------------------------
# orchestration

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def free_port_pair_base(count):
    """A port P such that P and P+1 are free on 127.0.0.1..127.0.0.count (launch_local's nodes)."""
    import random
    for _ in range(200):
        port = random.randrange(20000, 60000, 2)
        ok = True
        for i in range(count):
            for p in (port, port + 1):
                s = socket.socket()
                try:
                    s.bind(("127.0.0.%d" % (i + 1), p))
                except OSError:
                    ok = False
                finally:
                    s.close()
        if ok:
            return port
    raise BenchError("no free port pair on the loopback addresses")


def wait_all(procs, deadline_s, what):
    end = time.monotonic() + deadline_s
    try:
        while any(p.poll() is None for p in procs):
            if time.monotonic() > end:
                raise BenchError("%s still running after %.0f s" % (what, deadline_s))
            time.sleep(0.2)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            if p.poll() is None:
                try:
                    p.wait(timeout=STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=5)
    return [p.returncode for p in procs]


def run_torch(args, mode, model, run_dir, shards, x0):
    os.makedirs(run_dir, exist_ok=True)
    port = free_port()
    procs = []
    started = time.monotonic()
    for rank in range(args.nodes):
        cmd = [TORCH_PYTHON, os.path.abspath(__file__), "worker", "--mode", mode, "--model",
               model, "--rank", str(rank), "--world", str(args.nodes), "--port", str(port),
               "--shards", shards, "--steps", str(args.steps), "--batch", str(args.batch),
               "--step", str(args.step[model]), "--l2", str(args.l2),
               "--local-steps", str(args.torch_local_steps), "--eval-every",
               str(args.eval_every), "--out", os.path.join(run_dir, "rank-%d.json" % rank)]
        if x0:
            cmd += ["--x0", x0]
        with open(os.path.join(run_dir, "rank-%d.log" % rank), "w") as log:
            procs.append(subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                          stderr=subprocess.STDOUT))
    codes = wait_all(procs, RUN_DEADLINE_S, "torch %s" % mode)
    wall = time.monotonic() - started
    if any(codes):
        with open(os.path.join(run_dir, "rank-0.log"), errors="replace") as f:
            tail = f.read()[-2000:]
        raise BenchError("torch %s failed %s; rank 0's log:\n%s" % (mode, codes, tail))
    stats = []
    for rank in range(args.nodes):
        with open(os.path.join(run_dir, "rank-%d.json" % rank)) as f:
            stats.append(json.load(f))
    return {"curve": stats[0]["curve"], "train_s": max(s["train_s"] for s in stats),
            "wall_s": wall, "cpu_s": statistics.mean(s["cpu_s"] for s in stats),
            "bytes": statistics.mean(s["bytes"] for s in stats)}


def read_jsonl(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass
    return rows


def run_starling(args, algorithm, model, run_dir, x0):
    bins = os.path.join(args.build, "node")
    port = free_port_pair_base(args.nodes)
    cmd = [sys.executable, os.path.join(REPO, "examples", "launch_local.py"),
           "--nodes", str(args.nodes), "--topology", args.topology, "--out", run_dir,
           "--bin-dir", bins, "--port", str(port), "--no-plots", "--reference-optimum", "none",
           "--interval-ms", str(args.monitor_interval_ms), "--band-points", "0",
           "--timeout-s", str(int(RUN_DEADLINE_S)), "--telemetry-ms", "500",
           "--algorithm", algorithm, "--problem", model, "--l2", str(args.l2),
           "--format", "idx", "--data", os.path.join(FMNIST, "train-images-idx3-ubyte.gz"),
           "--test-data", os.path.join(FMNIST, "t10k-images-idx3-ubyte.gz"),
           "--partition", args.partition, "--seed", str(args.seed), "--batch", str(args.batch),
           "--iterations", str(args.steps), "--step", str(args.starling_step[model]),
           "--snapshot-every", str(args.eval_every)]
    if algorithm == "swarmsgd":
        cmd += ["--local-steps", str(args.swarm_local_steps),
                "--compression", args.swarm_compression]
    schedule = args.schedule.get(model)
    if schedule:
        cmd += ["--step-schedule", schedule]
    if x0:
        cmd += ["--x0", x0]
    started = time.monotonic()
    with open(os.path.join(run_dir + ".launcher.log"), "w") as log:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        code = wait_all([p], RUN_DEADLINE_S + 60, "launch_local.py")[0]
    wall = time.monotonic() - started
    if code != 0:
        with open(run_dir + ".launcher.log", errors="replace") as f:
            tail = f.read()[-3000:]
        raise BenchError("launch_local.py (%s, %s) exited %d:\n%s" % (algorithm, model, code, tail))
    # The torch side trains on the exporter's shards: each daemon's own count must match.
    for k in range(args.nodes):
        with open(os.path.join(run_dir, "node-%d.log" % k), errors="replace") as f:
            m = re.search(r"node %d up: .*?(\d+) samples\)" % k, f.read())
        if not m or int(m.group(1)) != args.shard_sizes[k]:
            raise BenchError("node %d's shard: %s samples in its log, %d exported"
                             % (k, m.group(1) if m else "no", args.shard_sizes[k]))
    curves = [r for r in read_jsonl(os.path.join(run_dir, "curves.jsonl")) if "iter" in r]
    cpu, sent, first_step, last_step = [], [], [], []
    for k in range(args.nodes):
        rows = [r for r in read_jsonl(os.path.join(run_dir, "node-%d.jsonl" % k)) if "iter" in r]
        stepping = [r for r in rows if r.get("iter", 0) > 0]
        before = [r for r in rows if r.get("iter", 0) == 0]
        start = before[-1] if before else stepping[0]
        done = next((r for r in rows if r["iter"] >= args.steps), rows[-1])
        # CPU and bytes up to the node's last line: the end phase's merges and the lingering
        # (serving neighbours still stepping) are counted too.
        cpu.append(rows[-1].get("cpu_s", 0.0) - start.get("cpu_s", 0.0))
        sent.append(rows[-1].get("bytes_sent", 0))
        first_step.append(rows[0]["unix_time"] - rows[0]["time"])  # the node's clock's zero
        last_step.append(done["unix_time"])
    # The curves' clock starts when the first node started (its data loaded), as train_s.
    t_first = min(first_step)
    curve = [{"step": r["iter"], "time": r["time"], "test_accuracy": r.get("test_accuracy")}
             for r in curves]
    return {"curve": curve, "train_s": max(last_step) - t_first, "wall_s": wall,
            "cpu_s": statistics.mean(cpu), "bytes": statistics.mean(sent)}


def time_to(curve, target):
    for point in curve:
        if point.get("test_accuracy") is not None and point["test_accuracy"] >= target:
            return point["time"]
    return None


def final_accuracy(curve):
    points = [p for p in curve if p.get("test_accuracy") is not None]
    return points[-1]["test_accuracy"] if points else None


def write_x0(path, dim, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    np.savetxt(path, rng.uniform(-0.05, 0.05, size=(1, dim)), fmt="%.17g")


def main_bench(args):
    args.build = os.path.abspath(os.environ.get("STARLING_BUILD_DIR", os.path.join(REPO, "build")))
    for tool in ("node/starlingd", "node/starling-probe", "bench/starling-bench-shards"):
        if not os.access(os.path.join(args.build, tool), os.X_OK):
            raise BenchError("%s missing: build it (cmake --build %s --target %s)"
                             % (tool, args.build, os.path.basename(tool)))
    r = subprocess.run([TORCH_PYTHON, "-c", "import torch, torch.distributed, numpy"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        print("vs-torch: skipped: %s cannot import torch (install Debian's python3-torch)"
              % TORCH_PYTHON, file=sys.stderr)
        return 77
    root = tempfile.mkdtemp(prefix="starling-vs-torch-")
    try:
        shards = os.path.join(root, "shards.txt")
        subprocess.run([os.path.join(args.build, "bench", "starling-bench-shards"), "--data",
                        os.path.join(FMNIST, "train-images-idx3-ubyte.gz"), "--nodes",
                        str(args.nodes), "--partition", args.partition, "--seed",
                        str(args.seed), "--out", shards], check=True)
        with open(shards) as f:
            rows = [[int(v) for v in line.split()] for line in f]
        sizes = [len(r) for r in rows]
        every = sorted(v for r in rows for v in r)
        if len(rows) != args.nodes or every != list(range(len(every))):
            raise BenchError("%s: not %d shards covering every row once" % (shards, args.nodes))
        args.shard_sizes = sizes
        note("shards (%s, seed %d): %s rows" % (args.partition, args.seed, sizes))
        x0s = {}
        for model in args.models:
            if model == "mlp":
                x0s[model] = os.path.join(root, "x0-mlp.txt")
                write_x0(x0s[model], 64 * 785 + 10 * 65, args.seed)
            else:
                x0s[model] = None
        results = []
        for rep in range(args.reps):
            order = args.systems[rep % len(args.systems):] + args.systems[:rep % len(args.systems)]
            for model in args.models:
                rep_rows = {}
                for system in order:
                    run_dir = os.path.join(root, "rep%d-%s-%s" % (rep, model, system))
                    note("rep %d, %s, %s (load %s)" % (rep, model, system,
                                                       " ".join("%.1f" % v for v in os.getloadavg())))
                    if system in ("ddp", "localsgd"):
                        res = run_torch(args, system, model, run_dir, shards, x0s[model])
                    else:
                        res = run_starling(args, system, model, run_dir, x0s[model])
                    res.update({"rep": rep, "model": model, "system": system,
                                "final_test_accuracy": final_accuracy(res["curve"]),
                                "load": round(os.getloadavg()[0], 1)})
                    rep_rows[system] = res
                    note("  train %.1f s, final accuracy %s, cpu %.1f s/worker, %.3g bytes/worker"
                         % (res["train_s"], res["final_test_accuracy"], res["cpu_s"],
                            res["bytes"]))
                ref = rep_rows.get("ddp")
                target = args.target or (ref["final_test_accuracy"] if ref else None)
                for system in args.systems:
                    res = rep_rows[system]
                    res["target"] = target
                    res["time_to_target_s"] = time_to(res["curve"], target) if target else None
                    if ref:
                        res["ratio_time_to_target"] = (
                            round(res["time_to_target_s"] / ref["train_s"], 4)
                            if res["time_to_target_s"] is not None else None)
                        res["ratio_train_s"] = round(res["train_s"] / ref["train_s"], 4)
                        res["ratio_cpu"] = round(res["cpu_s"] / ref["cpu_s"], 4)
                        res["ratio_bytes"] = round(res["bytes"] / ref["bytes"], 4) \
                            if ref["bytes"] else None
                    out = {k: v for k, v in res.items() if k != "curve"}
                    if system == "swarmsgd":
                        out["compression"] = args.swarm_compression
                    out["curve"] = [(p["step"], round(p["time"], 2), p["test_accuracy"])
                                    for p in res["curve"]]
                    for k in ("train_s", "wall_s", "cpu_s", "time_to_target_s"):
                        if out.get(k) is not None:
                            out[k] = round(out[k], 2)
                    print(json.dumps(out), flush=True)
                    results.append(res)
        table(args, results)
    finally:
        if args.keep:
            note("run folders kept in %s" % root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


def table(args, results):
    """Medians over repetitions, per model and system; ratios against DDP."""
    print("\n%-12s %-9s %8s %9s %9s %8s %10s %10s %9s %9s" % (
        "model", "system", "target", "to_tgt_s", "train_s", "final", "cpu_s/wkr", "MB/wkr",
        "t/DDP", "cpu/DDP"), file=sys.stderr)
    for model in args.models:
        for system in args.systems:
            rows = [r for r in results if r["model"] == model and r["system"] == system]
            if not rows:
                continue

            def med(key):
                v = [r[key] for r in rows if r.get(key) is not None]
                return statistics.median(v) if v else None

            summary = {"summary": True, "model": model, "system": system, "runs": len(rows)}
            for key in ("target", "time_to_target_s", "train_s", "final_test_accuracy", "cpu_s",
                        "bytes", "ratio_time_to_target", "ratio_cpu", "ratio_bytes"):
                summary[key] = med(key)
            summary["reached"] = sum(1 for r in rows if r.get("time_to_target_s") is not None)
            print(json.dumps(summary), flush=True)

            def fmt(v, f):
                return f % v if v is not None else "-"

            print("%-12s %-9s %8s %9s %9s %8s %10s %10s %9s %9s" % (
                model, system, fmt(summary["target"], "%.4f"),
                fmt(summary["time_to_target_s"], "%.1f"), fmt(summary["train_s"], "%.1f"),
                fmt(summary["final_test_accuracy"], "%.4f"), fmt(summary["cpu_s"], "%.1f"),
                fmt(summary["bytes"] and summary["bytes"] / 1e6, "%.1f"),
                fmt(summary["ratio_time_to_target"], "%.3f"), fmt(summary["ratio_cpu"], "%.3f")),
                file=sys.stderr)


def parse_per_model(text, convert):
    """'0.1' (every model) or 'multinomial=0.1,mlp=0.05'."""
    out = {}
    for part in text.split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k] = convert(v)
        else:
            out["multinomial"] = out["mlp"] = convert(part)
    return out


def main(argv):
    if argv and argv[0] == "worker":
        p = argparse.ArgumentParser(prog="vs_torch.py worker")
        p.add_argument("--mode", choices=["ddp", "localsgd"], required=True)
        p.add_argument("--model", choices=["multinomial", "mlp"], required=True)
        p.add_argument("--rank", type=int, required=True)
        p.add_argument("--world", type=int, required=True)
        p.add_argument("--port", type=int, required=True)
        p.add_argument("--shards", required=True)
        p.add_argument("--steps", type=int, required=True)
        p.add_argument("--batch", type=int, default=32)
        p.add_argument("--step", type=float, required=True)
        p.add_argument("--l2", type=float, default=1e-4)
        p.add_argument("--local-steps", type=int, default=4)
        p.add_argument("--eval-every", type=int, default=50)
        p.add_argument("--x0")
        p.add_argument("--out", required=True)
        return worker(p.parse_args(argv[1:]))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="multinomial,mlp")
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--nodes", type=int, default=8)
    p.add_argument("--topology", default="torus", help="Starling's graph (default torus, 2x4)")
    p.add_argument("--partition", default="dirichlet:0.5")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=1500, help="local steps per worker")
    p.add_argument("--step", default="multinomial=0.1,mlp=0.05",
                   help="SGD step, one value or per model (default multinomial=0.1,mlp=0.05)")
    p.add_argument("--starling-step", default="multinomial=0.4,mlp=0.2",
                   help="Starling's first step, one or per model (default multinomial=0.4,"
                        "mlp=0.2; '' = --step)")
    p.add_argument("--schedule", default="cosine",
                   help="Starling's --step-schedule, one or per model (default cosine, to 0 at "
                        "the last step; '' = constant)")
    p.add_argument("--l2", type=float, default=1e-4)
    p.add_argument("--swarm-local-steps", type=int, default=1, help="SwarmSGD's H")
    p.add_argument("--swarm-compression", default="none",
                   help="SwarmSGD's --compression (default none: float64 exchanges; f32 sends "
                        "float32 models, torch's precision)")
    p.add_argument("--torch-local-steps", type=int, default=4, help="local SGD's H")
    p.add_argument("--eval-every", type=int, default=50,
                   help="steps between curve points (Starling: --snapshot-every)")
    p.add_argument("--monitor-interval-ms", type=int, default=20000,
                   help="the launcher's monitor (its evaluations share the cores; the curves "
                        "come from the snapshots)")
    p.add_argument("--target", type=float, help="test accuracy (default: DDP's final)")
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--quick", action="store_true",
                   help="a smoke test: 4 workers, 60 steps, multinomial")
    p.add_argument("--keep", action="store_true", help="keep the run folders")
    args = p.parse_args(argv)
    if args.quick:
        args.nodes, args.steps, args.eval_every = 4, 60, 20
        if args.models == "multinomial,mlp":
            args.models = "multinomial"
    args.models = args.models.split(",")
    args.systems = args.systems.split(",")
    for s in args.systems:
        if s not in SYSTEMS:
            p.error("unknown system %s" % s)
    args.step = parse_per_model(args.step, float)
    starling_step = parse_per_model(args.starling_step, float) if args.starling_step else {}
    args.starling_step = dict(args.step)
    args.starling_step.update(starling_step)
    args.schedule = parse_per_model(args.schedule, str) if args.schedule else {}
    try:
        return main_bench(args)
    except (BenchError, subprocess.CalledProcessError) as e:
        print("vs-torch: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
