"""dask_kmeans.py — k-means as a rally.dask job (test_dask.py): Lloyd's
iterations over this rank's partitions of a dask.array, one float64 SUM
allreduce of the per-centroid sums and counts per iteration and a
checkpoint after it.  With kill_at=(rank, it, path), that rank's first
incarnation writes its pid to path at iteration it and waits to be killed
(the test kills it), so the kill lands where the test says.

Run as a script under rally-run (``rally-run -n 4 python3 dask_kmeans.py``)
it is the same job without Dask, on the same data cut into the same
partitions and blocks (rally.dask's), and prints "result DIGEST": the Dask
job must give the same bits."""
import os
import sys
import time

import numpy as np

import rally


def kmeans(r, parts, k, iters, kill_at=None):
    x = np.concatenate(parts) if parts else np.zeros((0, 2))
    version, model = r.load_checkpoint()
    if version == 0:
        first = r.broadcast_object(x[:k].copy() if r.rank() == 0 else None, 0)
        model = {"c": first, "it": 0}
    while model["it"] < iters:
        if kill_at and r.rank() == kill_at[0] and model["it"] == kill_at[1] and r.attempt() == 0:
            with open(kill_at[2] + ".tmp", "w") as f:
                f.write(str(os.getpid()))
            os.rename(kill_at[2] + ".tmp", kill_at[2])
            time.sleep(120)  # the test kills this process now
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


K, ITERS, ROWS, CHUNK = 4, 12, 2000, 250


def points():
    rng = np.random.default_rng(7)
    centers = rng.uniform(-10, 10, size=(K, 2))
    x = np.concatenate([c + rng.standard_normal((ROWS // K, 2)) for c in centers])
    return x[rng.permutation(len(x))]


if __name__ == "__main__":
    import rally.dask

    x = points()
    chunks = [x[i:i + CHUNK] for i in range(0, len(x), CHUNK)]
    with rally.init() as r:
        mine = [chunks[i] for i in rally.dask._assign(len(chunks), r.world_size())[r.rank()]]
        out = kmeans(r, mine, K, ITERS)
        if r.rank() == 0:
            r.tracker_print("result %s" % out["digest"])
    sys.exit(0)

