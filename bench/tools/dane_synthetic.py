#!/usr/bin/python3
"""Writes the Network-DANE paper's synthetic linear-regression instance
(docs/results/dane-synthetic.md) as a
pre-partitioned CSV for starling-sim (--partition column:0 --label-column 1):

  X ~ N(0,1)^{nm x d}, column j scaled by (j+1)^(-log(kappa)/(2 log d)), then X divided by
  max_i ||X_i^T X_i||_2 / m (so that L = 1 and sigma ~ 1/kappa); w0 ~ U[0,1]^d; y = X w0 + N(0,1).
  f_i(w) = (1/2m) ||y_i - X_i w||^2, i.e. --loss-scale 1/m with starling's (a.x - b)^2/2 loss.

Usage: dane_synthetic.py OUT.csv [--nodes 20] [--rows 1000] [--dim 40] [--kappa 10] [--seed 1]
Run with Debian's /usr/bin/python3 (numpy)."""
import argparse
import sys

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--nodes", type=int, default=20)
    p.add_argument("--rows", type=int, default=1000, help="samples per node (m)")
    p.add_argument("--dim", type=int, default=40)
    p.add_argument("--kappa", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    if a.nodes < 1 or a.rows < 1 or a.dim < 2 or a.kappa < 1:
        sys.exit("dane_synthetic.py: need --nodes >= 1, --rows >= 1, --dim >= 2, --kappa >= 1")
    rng = np.random.default_rng(a.seed)
    n, m, d = a.nodes, a.rows, a.dim
    x = rng.standard_normal((n * m, d))
    x *= np.power(np.arange(1, d + 1, dtype=float), -np.log(a.kappa) / (2 * np.log(d)))
    scale = max(np.linalg.norm(x[i * m:(i + 1) * m].T @ x[i * m:(i + 1) * m], 2) / m for i in range(n))
    x /= scale
    w0 = rng.uniform(0, 1, d)
    y = x @ w0 + rng.standard_normal(n * m)
    node = np.repeat(np.arange(n), m)
    table = np.column_stack([node, y, x])
    with open(a.out, "w") as f:
        f.write("# node,y,x_1..x_%d  (Network-DANE synthetic: n=%d m=%d d=%d kappa=%g seed=%d)\n"
                % (d, n, m, d, a.kappa, a.seed))
        np.savetxt(f, table, delimiter=",", fmt=["%d"] + ["%.17g"] * (d + 1))


if __name__ == "__main__":
    main()
