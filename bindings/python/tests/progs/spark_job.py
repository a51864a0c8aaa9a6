"""spark_job.py — the job test_spark.py runs through rally.spark: a small
linear model fitted by gradient steps over the rank's rows (a global model,
checkpointed every step), with points where a test makes a failure land:
a rank writes its worker's pid to a file once it reaches a step (and, for
an executor's loss, once the shared tier holds a complete snapshot), or
its own code fails at a step."""
import glob
import os
import time

import numpy as np

import rally


def rows(n=4000, d=6, seed=7):
    """Label first, then d features: the same rows for the same arguments."""
    g = np.random.default_rng(seed)
    x = g.normal(size=(n, d))
    y = x @ np.linspace(1.0, -1.0, d) + 0.1 * g.normal(size=n)
    return [(float(y[i]),) + tuple(map(float, x[i])) for i in range(n)]


def _mark(path):
    if not os.path.exists(path):
        with open(path + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.replace(path + ".tmp", path)


def fit(r, part, steps, rank_at=None, step_at=-1, marker=None, snapshots=None, fail=None,
        pause=0.05):
    """Gradient descent on the squared error; returns the weights' digest.
    At step_at, rank rank_at writes its pid to marker (after the first
    complete snapshot under snapshots, when given) or, with fail (a path),
    raises once: the first time, the one that makes that file."""
    a = np.array(part, dtype=np.float64).reshape(len(part), -1)
    y, x = a[:, 0], a[:, 1:]
    version, w = r.load_checkpoint()
    if version == 0:
        w = np.zeros(x.shape[1])
    for step in range(version, steps):
        g = np.concatenate([x.T @ (x @ w - y), [len(y)]])
        r.allreduce(g, rally.SUM)
        w = w - 0.5 * g[:-1] / g[-1]
        if r.rank() == rank_at and step == step_at:
            if fail:
                if not os.path.exists(fail):
                    open(fail, "w").close()
                    raise RuntimeError("rank %d fails at step %d" % (rank_at, step))
            else:
                while snapshots and not glob.glob(os.path.join(snapshots, "*", "snap-*",
                                                               "MANIFEST.json")):
                    time.sleep(0.05)
                _mark(marker)
        time.sleep(pause)
        r.checkpoint(w)
    return {"digest": "%016x" % rally.digest64(w), "version": r.version(),
            "world": r.world_size()}
