#!/usr/bin/python3
"""Local SGD with periodic averaging (LUPA-SGD, arXiv:1910.13598).

  bench/local_sgd_t10.py OUTDIR [T]

8 nodes, L2-logistic regression on a9a (lambda 1e-4, iid shards or PARTITION=label, batch 16), a fixed budget of T
local steps per node (default 1024). tau in {1, 4, 16, 64, 256, ceil(T^(2/3)/p^(1/3))} (the last is
the paper's rule: T/tau = (pT)^(1/3) rounds) and the growing schedule tau_j = ceil(4 sqrt(j+1))
[DERIVED], each averaged
  exact:    the complete graph, whose Metropolis weights are all 1/8: one round = the exact mean;
  tree:     a ring, exact mean over its BFS spanning tree (--local-exact 1): 2 x height = 8 rounds;
  gossip:K  a ring with K = 4 gossip rounds per averaging.
Prints a markdown table of f(x_bar) - f* at the end of the budget against communication rounds,
writes OUTDIR/local_sgd_t10.md and OUTDIR/local_sgd_t10.png. Needs a build (STARLING_BUILD).
"""
import json
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIM = os.path.join(os.environ.get("STARLING_BUILD", os.path.join(ROOT, "build")), "node",
                   "starling-sim")
DATA = os.environ.get("STARLING_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data"))
P = 8
# iid shards make the local models drift little; label-sorted shards (each node one class) are
# the heterogeneous case where large tau should cost accuracy.
PARTITION = os.environ.get("PARTITION", "iid")


def periods_for(taus, budget):
    """Periods whose local steps fit the budget (the last may not fill it)."""
    n, total = 0, 0
    for t in taus:
        if total + t > budget:
            break
        total += t
        n += 1
    return n, total


def run(out, label, tau, adaptive, topology, gossip, exact, per_average, budget):
    if adaptive:
        sched = [math.ceil(tau * math.sqrt(j + 1)) for j in range(budget)]
    else:
        sched = [tau] * budget
    periods, steps = periods_for(sched, budget)
    # The constructor takes period 0's local steps; every K rounds end a period and start the
    # next one's, so m periods of local steps are behind (m - 1) averagings of per_average rounds.
    rounds = (periods - 1) * per_average
    path = os.path.join(out, "raw", label + ".jsonl")
    args = [SIM, "-q", "--algorithm", "local-sgd", "--problem", "logistic", "--l2", "1e-4",
            "--data", os.path.join(DATA, "a9a"), "--format", "libsvm", "--nodes", str(P),
            "--topology", topology, "--batch", "16", "--partition", PARTITION, "--seed", "1", "--local-tau", str(tau),
            "--local-gossip", str(gossip), "--local-exact", str(exact),
            "--local-adaptive", "1" if adaptive else "0",
            "--iterations", str(max(rounds, 0)), "--reference-optimum", "auto",
            "--log-every", str(per_average), "--metrics", path]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pts = []
    with open(path) as f:
        for line in f:
            m = json.loads(line)
            if "rel_gap" in m:
                fstar = m["objective"] / (1 + m["rel_gap"])
                pts.append((m["comm_rounds"], m["objective"] - fstar))
    return {"label": label, "rounds": rounds, "steps": steps, "gap": pts[-1][1], "curve": pts,
            "cmd": " ".join(args[1:])}


def main():
    out = sys.argv[1]
    budget = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
    os.makedirs(os.path.join(out, "raw"), exist_ok=True)
    rule = math.ceil(budget ** (2 / 3) / P ** (1 / 3))
    cases = ([(f"tau={t}", t, False) for t in (1, 4, 16, 64, 256)] +
             [(f"tau={rule} (rule: (pT)^1/3 rounds)", rule, False),
              ("adaptive 4*sqrt(j+1)", 4, True)])
    # (label, topology, K, --local-exact, rounds per averaging); a ring of 8 has BFS height 4.
    modes = (("exact (complete)", "complete", 1, 0, 1), ("exact (tree, ring)", "ring", 1, 1, 8),
             ("gossip:4 (ring)", "ring", 4, 0, 4))
    results = {}
    for avg, topo, k, exact, per_average in modes:
        tag = avg.split()[0].replace(":", "")
        results[avg] = [run(out, f"{tag}-{label.split()[0]}".replace("*", "x"), tau, ad, topo, k,
                            exact, per_average, budget) for label, tau, ad in cases]
    lines = [f"T = {budget} local steps per node, p = {P}, a9a ({PARTITION} shards), lambda 1e-4, batch 16, "
             "default step 0.5/L, seed 1.", "",
             "| schedule | averaging | comm rounds | local steps | f(x_bar) - f* |",
             "|---|---|---:|---:|---:|"]
    for avg, rs in results.items():
        for (label, _, _), r in zip(cases, rs):
            lines.append(f"| {label} | {avg} | {r['rounds']} | {r['steps']} | {r['gap']:.3e} |")
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(out, "local_sgd_t10.md"), "w") as f:
        f.write(table + "\n\nOne command of each run:\n\n" + results["exact (tree, ring)"][0]["cmd"] +
                "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, len(results), figsize=(16, 4), sharey=True)
        for ax, (avg, rs) in zip(axes, results.items()):
            for r in rs:
                xs = [max(c, 1) for c, _ in r["curve"]]
                ax.loglog(xs, [max(g, 1e-12) for _, g in r["curve"]], label=r["label"])
            ax.set_title(f"local SGD, {avg} averaging")
            ax.set_xlabel("communication rounds")
            ax.legend(fontsize=7)
        axes[0].set_ylabel("f(x_bar) - f*")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "local_sgd_t10.png"), dpi=110)
    except ImportError:
        print("(no matplotlib: no plot)")


if __name__ == "__main__":
    main()
