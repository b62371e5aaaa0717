#!/usr/bin/env python3
"""Smoke test of `bench/run.sh vs-torch --quick` (bench/vs_torch.py): 4 workers, a few dozen steps
of the multinomial model, every system once. Checks that every system trained (test accuracy well
above chance after its steps), that bytes and CPU were measured, that DDP is its own reference
(ratios 1), and that the daemons' shards had the exported sizes (vs_torch.py fails otherwise).
Exit 77 (skipped) with a message when Debian's python3-torch is missing or Fashion-MNIST is absent.

    tests/vs_torch_smoke_test.py BUILD_DIR
"""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FMNIST = os.environ.get("STARLING_FMNIST_DIR", "/usr/share/datasets/fashion-mnist")
SYSTEMS = ("swarmsgd", "dpsgd", "ddp", "localsgd")


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "build"))
    if not os.path.exists(os.path.join(FMNIST, "train-images-idx3-ubyte.gz")):
        print("skipped: Fashion-MNIST not found in %s" % FMNIST)
        return 77
    env = dict(os.environ, STARLING_BUILD_DIR=build)
    r = subprocess.run(["bash", os.path.join(REPO, "bench", "run.sh"), "vs-torch", "--quick"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env, timeout=900)
    err = r.stderr.decode(errors="replace")
    if r.returncode == 77:
        print("skipped: %s" % err.strip().splitlines()[-1])
        return 77
    if r.returncode != 0:
        print("vs-torch --quick exited %d:\n%s" % (r.returncode, err[-4000:]))
        return 1
    runs = [json.loads(l) for l in r.stdout.decode().splitlines() if l.startswith("{")]
    runs = [x for x in runs if not x.get("summary")]
    failures = []
    for system in SYSTEMS:
        rows = [x for x in runs if x["system"] == system]
        if len(rows) != 1:
            failures.append("%s: %d result lines, expected 1" % (system, len(rows)))
            continue
        x = rows[0]
        print("%-9s final accuracy %.4f, train %.1f s, cpu %.2f s, %.0f bytes per worker"
              % (system, x["final_test_accuracy"] or -1, x["train_s"], x["cpu_s"], x["bytes"]))
        # 60 steps of 4 workers reach 0.6-0.7; chance is 0.1, the zero model's argmax 0.1.
        if not (x["final_test_accuracy"] or 0) > 0.5:
            failures.append("%s: final test accuracy %s" % (system, x["final_test_accuracy"]))
        if not x["bytes"] > 7840 * 4 * 10:  # at least ten model-sized messages per worker
            failures.append("%s: %s bytes per worker" % (system, x["bytes"]))
        if not x["cpu_s"] > 0:
            failures.append("%s: cpu %s" % (system, x["cpu_s"]))
        if len(x["curve"]) < 2:
            failures.append("%s: %d curve points" % (system, len(x["curve"])))
        if system == "ddp" and (x["ratio_cpu"] != 1.0 or x["ratio_bytes"] != 1.0):
            failures.append("ddp: ratios against itself %s, %s" % (x["ratio_cpu"],
                                                                   x["ratio_bytes"]))
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
