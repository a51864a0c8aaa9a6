#!/usr/bin/env python3
"""dask_kmeans.py — k-means on a dask.distributed cluster with rally.dask.

    python3 dask_kmeans.py [--workers 4] [--kill RANK]

Starts a LocalCluster of worker processes (one thread each), cuts 2,000
generated 2-D points into a dask.array of 8 chunks and runs Lloyd's
iterations as a rally job: one task per Dask worker, each with its block of
chunks, one SUM allreduce of the per-centroid sums and counts and a
checkpoint per iteration.  With --kill RANK, that rank's Dask worker process
SIGKILLs itself at iteration 5; its nanny starts a new one, rally.dask runs
the rank there, and it recovers from the survivors' checkpoint: the digest
printed is the failure-free run's.
"""
import argparse
import os
import signal

import numpy as np

import rally

K, ITERS, ROWS, CHUNK = 4, 12, 2000, 250


def points():
    rng = np.random.default_rng(7)
    centers = rng.uniform(-10, 10, size=(K, 2))
    x = np.concatenate([c + rng.standard_normal((ROWS // K, 2)) for c in centers])
    return x[rng.permutation(len(x))]


def kmeans(r, parts, k, iters, on_iteration=None):
    """One rank's part of the job: parts are its chunks (numpy arrays).
    on_iteration(r, it) is called before each iteration (a kill point).
    Returns the centroids' digest and what the job was."""
    x = np.concatenate(parts) if parts else np.zeros((0, 2))
    version, model = r.load_checkpoint()
    if version == 0:  # a fresh start: rank 0's first k points
        first = r.broadcast_object(x[:k].copy() if r.rank() == 0 else None, 0)
        model = {"c": first, "it": 0}
    while model["it"] < iters:
        if on_iteration:
            on_iteration(r, model["it"])
        c = model["c"]
        near = ((x[:, None, :] - c[None, :, :]) ** 2).sum(axis=2).argmin(axis=1)
        acc = np.zeros((k, x.shape[1] + 1))
        for j in range(k):
            acc[j, :-1] = x[near == j].sum(axis=0)
            acc[j, -1] = (near == j).sum()
        r.allreduce(acc, rally.SUM)
        c = np.where(acc[:, -1:] > 0, acc[:, :-1] / np.maximum(acc[:, -1:], 1), c)
        model = {"c": c, "it": model["it"] + 1}
        r.checkpoint(model)
    return {"digest": "%016x" % rally.digest64(np.ascontiguousarray(model["c"])),
            "world": r.world_size(), "attempt": r.attempt(), "version": r.version()}


class KillSelf:
    """on_iteration: rank's first incarnation SIGKILLs its own process at
    iteration it (a Dask worker dying mid-job)."""

    def __init__(self, rank, it):
        self.rank, self.it = rank, it

    def __call__(self, r, it):
        if r.rank() == self.rank and it == self.it and r.attempt() == 0:
            os.kill(os.getpid(), signal.SIGKILL)


def main():
    import dask.array as da
    from distributed import Client, LocalCluster

    import rally.dask

    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--kill", type=int, metavar="RANK")
    a = ap.parse_args()
    hook = KillSelf(a.kill, 5) if a.kill is not None else None
    with LocalCluster(n_workers=a.workers, processes=True, threads_per_worker=1,
                      dashboard_address=None, silence_logs=40) as cluster, Client(cluster) as client:
        x = da.from_array(points(), chunks=(CHUNK, 2))
        out = rally.dask.run(client, kmeans, K, ITERS, on_iteration=hook, data=x,
                             n_workers=a.workers, echo=True)
    print("k-means on %d Dask workers: %d iterations, centroids %s" %
          (out["world"], out["version"], out["digest"]))


if __name__ == "__main__":
    main()
