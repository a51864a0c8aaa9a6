"""dask_job.py — examples/dask_kmeans.py's k-means for test_dask.py.
KillAt(rank, it, path) is a kill point the test drives: that rank's first
incarnation writes its pid to path at iteration it and waits to be killed,
so the kill lands where the test says.

Run as a script under rally-run (``rally-run -n 4 python3 dask_job.py``)
it is the same job without Dask, on the same data cut into the same
partitions and blocks (rally.dask's), and prints "result DIGEST": the Dask
job must give the same bits."""
import os
import sys
import time

import rally

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
from dask_kmeans import CHUNK, ITERS, K, kmeans, points  # noqa: E402,F401


class KillAt:
    def __init__(self, rank, it, path):
        self.rank, self.it, self.path = rank, it, path

    def __call__(self, r, it):
        if r.rank() == self.rank and it == self.it and r.attempt() == 0:
            with open(self.path + ".tmp", "w") as f:
                f.write(str(os.getpid()))
            os.rename(self.path + ".tmp", self.path)
            time.sleep(120)  # the test kills this process now


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
