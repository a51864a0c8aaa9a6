#!/usr/bin/env python3
"""progress.py — principal components by power iteration, reporting its
progress to rally-run as it goes: how many iterations in all, and the
eigenvalue estimate at each, for the status page, --progress and the
events (docs/status.md).

    rally-run -n 4 --progress python3 progress.py [--iterations 150]

Each rank holds its block of a generated data set; one allreduce of X^T X v
per iteration; the vectors are checkpointed.  Rank 0 prints "digest HEX"
of the final vectors.
"""
import argparse
import time

import numpy as np

import rally


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=150)
    ap.add_argument("--components", type=int, default=3)
    ap.add_argument("--pause", type=float, default=0.01, help="seconds of other work per iteration")
    args = ap.parse_args()

    with rally.init() as r:
        rng = np.random.default_rng(r.rank())
        x = rng.standard_normal((5000, 40)) @ np.diag(np.linspace(3, 0.1, 40))
        r.report_total(args.iterations)
        version, v = r.load_checkpoint()
        if v is None:
            v = np.linalg.qr(np.random.default_rng(0).standard_normal((40, args.components)))[0]
        for it in range(version, args.iterations):
            w = x.T @ (x @ v)
            r.allreduce(w, rally.SUM)
            eig = float(np.linalg.norm(w[:, 0]))
            v = np.linalg.qr(w)[0]
            v *= np.sign(v[0])  # a fixed sign: the same vectors on every rank and run
            time.sleep(args.pause)
            r.checkpoint(v)
            r.report("eigenvalue", eig)
        if r.rank() == 0:
            print("digest %016x" % rally.digest64(np.ascontiguousarray(v)), flush=True)


if __name__ == "__main__":
    main()
