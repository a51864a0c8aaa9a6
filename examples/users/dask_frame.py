#!/usr/bin/env python3
"""dask_frame.py — linear regression by gradient descent over a Dask
dataframe: each Dask worker runs one rank on its partitions (pandas frames),
the gradient summed by rally, the coefficients checkpointed every
iteration.

    python3 dask_frame.py [--workers 4] [--iterations 300]

Starts its own LocalCluster.  When a Dask worker process dies mid-job, its
nanny starts a new one, rally.dask runs the rank there and it recovers from
the survivors: the coefficients are those of a run without failures.
Prints "iteration I mse M" every 10 iterations (rank 0, through the
tracker's output on stderr) and "digest HEX" of the coefficients.
"""
import argparse

import numpy as np
import pandas as pd

import rally

FEATURES = ["x%d" % i for i in range(8)]


def frame(rows=100000, seed=5):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(rng.standard_normal((rows, len(FEATURES))), columns=FEATURES)
    df["y"] = df.to_numpy() @ np.linspace(-2, 2, len(FEATURES)) + 0.1 * rng.standard_normal(rows)
    return df


def train(r, parts, iterations, lr):
    df = pd.concat(parts) if parts else frame(0)
    x, y = df[FEATURES].to_numpy(), df["y"].to_numpy()
    n = r.allreduce(np.array([len(y)], dtype=np.int64), rally.SUM)[0]
    version, model = r.load_checkpoint()
    if model is None:
        model = {"coef": np.zeros(len(FEATURES)), "iteration": 0}
    while model["iteration"] < iterations:
        resid = x @ model["coef"] - y
        g = np.append(x.T @ resid, resid @ resid)
        r.allreduce(g, rally.SUM)
        model = {"coef": model["coef"] - lr * g[:-1] / n, "iteration": model["iteration"] + 1}
        r.checkpoint(model)
        if r.rank() == 0 and model["iteration"] % 10 == 0:
            r.tracker_print("iteration %d mse %.6f" % (model["iteration"], g[-1] / n))
    return "%016x" % rally.digest64(model["coef"])


def main():
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import rally.dask

    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--lr", type=float, default=0.5)
    args = ap.parse_args()
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        df = dd.from_pandas(frame(), npartitions=2 * args.workers, sort=False)
        digest = rally.dask.run(client, train, args.iterations, args.lr, data=df,
                                n_workers=args.workers, echo=True)
    print("digest %s" % digest, flush=True)


if __name__ == "__main__":
    main()
