#!/usr/bin/env python3
"""Summary table of the topology-inference figures (docs/results/topology-inference.md) from
pairwise_inference_curve.py's JSON lines.

usage: t12_summary.py [--compact] PREFIX [PREFIX ...]

For each PREFIX.jsonl (one setting), prints markdown rows: per method and estimator, the first
sample count whose mean accuracy over the seeds is >= 0.99 (and stays >= 0.99 at every larger
count; "-" if never), the mean accuracy at 1e3, 1e4, 1e5 and the last count, and at the last
count the mean identifiability gap, sensitivity and specificity, how many seeds are at 1.0 and
how many are separable (gap > 0: some threshold classifies every pair right).
--compact: one row per setting, one column per method and estimator, each cell "n (acc at 1e4;
last acc)".
"""

import collections
import json
import os
import sys


def mean(xs):
    return sum(xs) / len(xs)


def load(prefix):
    by = collections.defaultdict(lambda: collections.defaultdict(list))
    order = []
    with open(prefix + ".jsonl") as f:
        for line in f:
            r = json.loads(line)
            # Rows of live runs name their method; those written before there was more than
            # one live run do not, and were SwarmSGD's.
            live = {"swarmsgd": "SwarmSGD", "dpsgd": "D-PSGD", "dgd": "DGD"}.get(
                r.get("live_algorithm", "swarmsgd"), r.get("live_algorithm"))
            name = {"sync": "synchronous ", "pairwise": "pairwise ",
                    "live": "live %s " % live}[r["method"]] + r["estimator"]
            if r["method"] != "sync":
                name += ", D %g" % r["period"]
            if name not in order:
                order.append(name)
            by[name][r["samples"]].append(r)
    return by, order


def reach(acc):
    counts = sorted(acc)
    for i, n in enumerate(counts):
        if all(acc[m] >= 0.99 for m in counts[i:]):
            return "%g" % n
    return "-"


def compact(prefixes):
    loaded = [load(p) for p in prefixes]
    names = []
    for _, order in loaded:
        names += [n for n in order if n not in names]
    print("| setting | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for prefix, (by, _) in zip(prefixes, loaded):
        cells = []
        for name in names:
            if name not in by:
                cells.append("")
                continue
            acc = {n: mean([r["accuracy"] for r in by[name][n]]) for n in by[name]}
            last = max(acc)
            cells.append("%s (%s; %.3f)" % (reach(acc), "%.3f" % acc[10000] if 10000 in acc
                                             else "-", acc[last]))
        print("| %s | %s |" % (os.path.basename(prefix), " | ".join(cells)))


def main():
    if sys.argv[1] == "--compact":
        compact(sys.argv[2:])
        return 0
    print("| setting | method, estimator | n for mean acc >= 0.99 | acc 1e3 | acc 1e4 | acc 1e5 "
          "| acc last | gap last | sens last | spec last | seeds at 1.0 | seeds gap > 0 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for prefix in sys.argv[1:]:
        by, order = load(prefix)
        setting = os.path.basename(prefix)
        for name in order:
            counts = sorted(by[name])
            acc = {n: mean([r["accuracy"] for r in by[name][n]]) for n in counts}
            last = counts[-1]
            rs = by[name][last]

            def at(n):
                return "%.3f" % acc[n] if n in acc else "-"

            print("| %s | %s | %s | %s | %s | %s | %s | %+.3g | %.3f | %.3f | %d/%d | %d |" % (
                setting, name, reach(acc), at(1000), at(10000), at(100000), at(last),
                mean([r["gap"] for r in rs]), mean([r["sensitivity"] for r in rs]),
                mean([r["specificity"] for r in rs]),
                sum(1 for r in rs if r["accuracy"] == 1.0), len(rs),
                sum(1 for r in rs if r["gap"] > 0)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
