#!/usr/bin/env python3
"""Memory and loading time of starlingd's training data, A/B in one run.

Starts the demo's 8 daemons (scripts/demo.sh: SwarmSGD, multinomial, Fashion-MNIST idx.gz,
Dirichlet(0.5), 2x4 torus, CURVE on) for a hundred steps, once per binary folder given,
alternating, and for every daemon records:
  - peak RSS (VmHWM, from /usr/bin/time -v's "Maximum resident set size");
  - load time: from the process start to its "node K up" log line, which follows the set-up
    (data, shard, problem) and the transport's start;
  - its shard: the "N samples" of that line, as doubles (N x 784 x 8 bytes);
  - its CPU time (user + system), of which the data's share is the CPU time over the base's.
The base is the same daemons' peak RSS on a 64-image IDX file of the same dimension (written
here, split i.i.d.): everything but the training data. Prints one table row per binary and repetition, and
the ratio (peak - base) / shard (target: at most 2).

Usage: bench/shard_load.py --bin NAME=DIR [--bin NAME=DIR ...] [--reps 2] [--steps 100]

With --solo, --data/--format/--problem/--partition load another file (e.g. a9a, LIBSVM, logistic);
its base is then its own first 64 data lines.
"""

import argparse
import datetime
import gzip
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time

FMNIST = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
UP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) .*node (\d+) up: .*, (\d+) samples\)")
RSS = re.compile(r"Maximum resident set size \(kbytes\): (\d+)")
CPU = re.compile(r"(User|System) time \(seconds\): ([\d.]+)")
DEADLINE_S = 600


def write_tiny_idx(folder, count=64):
    """The first `count` images of Fashion-MNIST as their own IDX files; returns the images path."""
    with gzip.open(FMNIST, "rb") as f:
        header = f.read(16)
        pixels = f.read(count * 784)
    with gzip.open(FMNIST.replace("images-idx3", "labels-idx1"), "rb") as f:
        f.read(8)
        labels = f.read(count)
    images = os.path.join(folder, "tiny-images-idx3-ubyte")
    with open(images, "wb") as out:
        out.write(header[:4] + struct.pack(">I", count) + header[8:] + pixels)
    with open(os.path.join(folder, "tiny-labels-idx1-ubyte"), "wb") as out:
        out.write(struct.pack(">II", 0x801, count) + labels)
    return images


def write_tiny_text(folder, path, count=64):
    """The first `count` data lines of a text file (gzipped or not) as their own file."""
    opener = gzip.open if path.endswith(".gz") else open
    lines = []
    with opener(path, "rt") as f:
        for line in f:
            if line.strip() and not line.lstrip().startswith("#"):
                lines.append(line)
            if len(lines) == count:
                break
    tiny = os.path.join(folder, "tiny-" + os.path.basename(path).replace(".gz", ""))
    with open(tiny, "w") as out:
        out.writelines(lines)
    return tiny


def solo(bin_dir, data, partition, run_dir, port, data_format="idx", problem="multinomial"):
    """Node 0 of the cluster alone: it loads, waits 1 s for a neighbour and gives up. Returns
    (cpu_s, load_s) from /usr/bin/time and its log."""
    os.makedirs(run_dir, exist_ok=True)
    cluster = os.path.join(run_dir, "cluster.conf")
    subprocess.run([os.path.join(bin_dir, "starling-probe"), "cluster", "--nodes", "8",
                    "--topology", "torus", "--seed", "1", "--port", str(port), "--out", cluster,
                    "--keys", os.path.join(run_dir, "keys")],
                   check=True, stdout=subprocess.DEVNULL)
    timing = os.path.join(run_dir, "time.txt")
    argv = ["/usr/bin/time", "-v", "-o", timing, os.path.join(bin_dir, "starlingd"),
            "--cluster", cluster, "--id", "0",
            "--secret-key", os.path.join(run_dir, "keys", "node-0.key"),
            "--algorithm", "swarmsgd", "--problem", problem, "--l2", "1e-4",
            "--data", data, "--format", data_format, "--partition", partition,
            "--iterations", "100", "--batch", "16", "--step", "0.4", "--seed", "1",
            "--give-up-s", "1"]
    start = datetime.datetime.now()
    result = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, timeout=DEADLINE_S)
    up = None
    for line in result.stdout.decode("utf-8", "replace").splitlines():
        m = UP.match(line)
        if m:
            up = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f")
    if up is None:
        raise RuntimeError("no 'up' line: %s" % result.stdout[-2000:])
    with open(timing) as f:
        cpu = sum(float(m.group(2)) for m in CPU.finditer(f.read()))
    return cpu, (up - start).total_seconds()


def run_daemons(bin_dir, data, partition, run_dir, nodes, steps, port):
    """Starts `nodes` daemons under /usr/bin/time -v; returns [(rss_mb, load_s, samples, cpu_s)]."""
    os.makedirs(run_dir, exist_ok=True)
    cluster = os.path.join(run_dir, "cluster.conf")
    subprocess.run([os.path.join(bin_dir, "starling-probe"), "cluster", "--nodes", str(nodes),
                    "--topology", "torus", "--seed", "1", "--port", str(port), "--out", cluster,
                    "--keys", os.path.join(run_dir, "keys")],
                   check=True, stdout=subprocess.DEVNULL)
    procs, starts = [], []
    for k in range(nodes):
        argv = ["/usr/bin/time", "-v", "-o", os.path.join(run_dir, "time-%d.txt" % k),
                os.path.join(bin_dir, "starlingd"), "--cluster", cluster, "--id", str(k),
                "--secret-key", os.path.join(run_dir, "keys", "node-%d.key" % k),
                "--algorithm", "swarmsgd", "--problem", "multinomial", "--l2", "1e-4",
                "--data", data, "--format", "idx", "--partition", partition,
                "--iterations", str(steps), "--batch", "16", "--local-steps", "1",
                "--step", "0.4", "--step-schedule", "cosine", "--seed", "1",
                "--metrics", os.path.join(run_dir, "node-%d.jsonl" % k)]
        log = open(os.path.join(run_dir, "node-%d.log" % k), "w")
        starts.append(datetime.datetime.now())
        procs.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                      stderr=subprocess.STDOUT))
    deadline = time.monotonic() + DEADLINE_S
    for p in procs:
        try:
            p.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise RuntimeError("daemons did not finish in %d s (%s)" % (DEADLINE_S, run_dir))
    out = []
    for k, p in enumerate(procs):
        if p.returncode != 0:
            raise RuntimeError("node %d exited %d; see %s/node-%d.log" % (k, p.returncode,
                                                                          run_dir, k))
        with open(os.path.join(run_dir, "time-%d.txt" % k)) as f:
            text = f.read()
        rss_kb = int(RSS.search(text).group(1))
        cpu_s = sum(float(m.group(2)) for m in CPU.finditer(text))
        up = None
        with open(os.path.join(run_dir, "node-%d.log" % k)) as f:
            for line in f:
                m = UP.match(line)
                if m and int(m.group(2)) == k:
                    up = (datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f"),
                          int(m.group(3)))
                    break
        if up is None:
            raise RuntimeError("node %d: no 'up' line in %s/node-%d.log" % (k, run_dir, k))
        out.append((rss_kb / 1024.0, (up[0] - starts[k]).total_seconds(), up[1], cpu_s))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", action="append", required=True, metavar="NAME=DIR",
                        help="a folder with starlingd and starling-probe (build/node)")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--port", type=int, default=7600)
    parser.add_argument("--solo", type=int, default=0, metavar="N",
                        help="instead: node 0 alone, N times per binary, alternating: its CPU "
                             "time and load time, over the base's (less noise than 8 at once)")
    parser.add_argument("--data", default=FMNIST, help="with --solo: the training file")
    parser.add_argument("--format", default="idx", help="with --solo: its format")
    parser.add_argument("--problem", default="multinomial", help="with --solo")
    parser.add_argument("--partition", default="dirichlet:0.5", help="with --solo")
    args = parser.parse_args()
    bins = [b.split("=", 1) for b in args.bin]
    if args.solo == 0 and (args.data != FMNIST or args.format != "idx"):
        parser.error("--data and --format go with --solo")
    work = tempfile.mkdtemp(prefix="starling-shard-load-")
    tiny = write_tiny_idx(work) if args.format == "idx" else write_tiny_text(work, args.data)
    if args.solo > 0:
        print("# %s, node 0 alone, %d times per binary, %s (%s, %s), load %s" % (
            datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"), args.solo, args.data,
            args.format, args.partition, open("/proc/loadavg").read().split()[:3]))
        cpu = {name: [] for name, _ in bins}
        load = {name: [] for name, _ in bins}
        for rep in range(args.solo):
            for name, bin_dir in bins:
                base = solo(bin_dir, tiny, "iid", os.path.join(work, "%s-sb-%d" % (name, rep)),
                            args.port, args.format, args.problem)
                full = solo(bin_dir, args.data, args.partition,
                            os.path.join(work, "%s-s-%d" % (name, rep)), args.port, args.format,
                            args.problem)
                print("# %s rep %d: CPU %.2f s (base %.2f), load %.2f s (base %.2f), loadavg %s" % (
                    name, rep + 1, full[0], base[0], full[1], base[1],
                    open("/proc/loadavg").read().split()[0]), flush=True)
                cpu[name].append(full[0] - base[0])
                load[name].append(full[1] - base[1])
        print("| binary | CPU s over the base, min / median | load s over the base, min / median |")
        print("|---|---|---|")
        for name, _ in bins:
            print("| %s | %.2f / %.2f | %.2f / %.2f |" % (
                name, min(cpu[name]), statistics.median(cpu[name]), min(load[name]),
                statistics.median(load[name])))
        print("# load at the end %s" % open("/proc/loadavg").read().split()[:3])
        return 0
    print("# %s, %d daemons, %d steps, load %.2f" % (
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"), args.nodes, args.steps,
        os.getloadavg()[0]))
    print("| binary | rep | base RSS MB | peak RSS MB per daemon, median (min-max) | "
          "sum of 8 MB | shard MB, median (min-max) | (peak - base) / shard, max | "
          "load s, median (max) | CPU s per daemon over the base, median (max) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rep in range(args.reps):
        for name, bin_dir in bins:
            base = run_daemons(bin_dir, tiny, "iid", os.path.join(work, "%s-base-%d" % (name, rep)),
                               args.nodes, args.steps, args.port)
            base_mb = statistics.median(r[0] for r in base)
            full = run_daemons(bin_dir, FMNIST, "dirichlet:0.5", os.path.join(work, "%s-%d" % (name, rep)),
                               args.nodes, args.steps, args.port)
            rss = [r[0] for r in full]
            shard = [r[2] * 784 * 8 / 2**20 for r in full]
            ratio = max((r - base_mb) / s for r, s in zip(rss, shard))
            loads = [r[1] for r in full]
            base_cpu = statistics.median(r[3] for r in base)
            cpu = [r[3] - base_cpu for r in full]
            print("| %s | %d | %.0f | %.0f (%.0f-%.0f) | %.0f | %.0f (%.0f-%.0f) | %.2f | "
                  "%.2f (%.2f) | %.2f (%.2f) |" % (
                      name, rep + 1, base_mb, statistics.median(rss), min(rss), max(rss),
                      sum(rss), statistics.median(shard), min(shard), max(shard), ratio,
                      statistics.median(loads), max(loads), statistics.median(cpu), max(cpu)),
                  flush=True)
    print("# run folders in %s" % work)


if __name__ == "__main__":
    sys.exit(main())
