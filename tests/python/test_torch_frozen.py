"""Frozen parameters through starling.torch.DecentralizedOptimizer(model=model): they are not
exchanged, so workers must start with equal ones. 3 processes (CURVE, loopback, a ring):
 - every worker seeded alike: the run ends (exit 0) and the frozen layer is bitwise equal on
   every worker at the end, as it was at the start;
 - worker 2 seeded otherwise (its frozen layer differs, as with torch.manual_seed(rank)): the
   workers refuse each other at the handshake, naming --model-digest with both values, and every
   worker exits with an error instead of training trained layers on unlike frozen ones.
Skipped (exit 77) without torch."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import harness  # noqa: E402


def run(folder, n, seeds):
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "frozen_worker.py")
    cluster = harness.write_cluster(folder, n, harness.ring(n), harness.port_base())
    argvs = [[sys.executable, worker, folder, str(i), cluster, str(seeds[i])] for i in range(n)]
    return harness.run_workers(folder, argvs, 300)


def main():
    try:
        import torch
        import starling.torch  # noqa: F401
    except ImportError:
        print("SKIP: torch is not installed (Debian: apt-get install python3-torch)")
        return harness.SKIP
    n, failed = 3, False
    folder = harness.scratch("frozen-same")
    codes, logs = run(folder, n, [0, 0, 0])
    if codes != [0] * n:
        print("FAIL: workers seeded alike: exit codes %s\n%s" % (codes, "\n".join(logs)))
        return 1
    torch.manual_seed(0)
    start = torch.nn.Linear(8, 16).weight.detach()  # the frozen layer as seed 0 makes it
    for i in range(n):
        state = torch.load("%s/state-%d.pt" % (folder, i))
        if not torch.equal(state["0.weight"], start):
            print("FAIL: worker %d's frozen layer changed" % i)
            failed = True
    if "not exchanged (equal on every worker, or the workers refuse each other naming " \
       "--model-digest): 0.weight" not in logs[0]:
        print("FAIL: the worker does not say that 0.weight is frozen and checked:\n" + logs[0])
        failed = True

    folder = harness.scratch("frozen-differ")
    codes, logs = run(folder, n, [0, 0, 5])
    print("worker 2 seeded otherwise: exit codes %s" % codes)
    if any(code == 0 or code is None for code in codes):
        print("FAIL: every worker must stop with an error:\n" + "\n".join(logs))
        failed = True
    named = [i for i in range(n) if "other run options: --model-digest " in logs[i]]
    if 2 not in named or len(named) < 2:
        print("FAIL: the refusal must name --model-digest on worker 2 and a neighbour; it does "
              "on %s:\n%s" % (named, "\n".join(logs)))
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
