#!/usr/bin/env python3
"""Summary table of the T12 figures (README, issue 17 item 5) from pairwise_inference_curve.py's
JSON lines.

usage: t12_summary.py PREFIX [PREFIX ...]

For each PREFIX.jsonl (one setting), prints markdown rows: per method and estimator, the first
sample count whose mean accuracy over the seeds is >= 0.99 (and stays >= 0.99 at every larger
count; "-" if never), the mean accuracy at 1e3, 1e4, 1e5 and the last count, and at the last
count the mean identifiability gap, sensitivity and specificity, how many seeds are at 1.0 and
how many are separable (gap > 0: some threshold classifies every pair right).
"""

import collections
import json
import os
import sys


def mean(xs):
    return sum(xs) / len(xs)


def main():
    print("| setting | method, estimator | n for mean acc >= 0.99 | acc 1e3 | acc 1e4 | acc 1e5 "
          "| acc last | gap last | sens last | spec last | seeds at 1.0 | seeds gap > 0 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for prefix in sys.argv[1:]:
        by = collections.defaultdict(lambda: collections.defaultdict(list))
        order = []
        with open(prefix + ".jsonl") as f:
            for line in f:
                r = json.loads(line)
                name = ("synchronous " if r["method"] == "sync" else "pairwise ") + r["estimator"]
                if r["method"] != "sync":
                    name += ", D %g" % r["period"]
                if name not in order:
                    order.append(name)
                by[name][r["samples"]].append(r)
        setting = os.path.basename(prefix)
        for name in order:
            counts = sorted(by[name])
            acc = {n: mean([r["accuracy"] for r in by[name][n]]) for n in counts}
            reach = "-"
            for i, n in enumerate(counts):
                if all(acc[m] >= 0.99 for m in counts[i:]):
                    reach = "%g" % n
                    break
            last = counts[-1]
            rs = by[name][last]

            def at(n):
                return "%.3f" % acc[n] if n in acc else "-"

            print("| %s | %s | %s | %s | %s | %s | %s | %+.4f | %.3f | %.3f | %d/%d | %d |" % (
                setting, name, reach, at(1000), at(10000), at(100000), at(last),
                mean([r["gap"] for r in rs]), mean([r["sensitivity"] for r in rs]),
                mean([r["specificity"] for r in rs]),
                sum(1 for r in rs if r["accuracy"] == 1.0), len(rs),
                sum(1 for r in rs if r["gap"] > 0)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
