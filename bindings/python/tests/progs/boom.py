"""boom.py — rank 1 raises an ordinary Python exception inside the with
block after one allreduce: it must count as a failed worker (not finalized)
whose exit fails the job (no restart), and the others get rally.PeerError."""
import numpy as np

import rally

with rally.init() as r:
    a = np.ones(3)
    r.allreduce(a, rally.SUM)
    if r.rank() == 1:
        raise RuntimeError("a bug in the worker's own code")
    r.allreduce(a, rally.SUM)
