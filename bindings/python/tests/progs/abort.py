"""abort.py — rank 1 meets a failure only it can see and calls
r.abort(msg, 3) after one allreduce: every other rank's next allreduce must
raise rally.PeerError carrying "rank 1 failed: msg (rally_abort code 3)",
and nobody is restarted."""
import sys

import numpy as np

import rally

with rally.init() as r:
    print("attempt %d" % r.attempt(), flush=True)
    a = np.ones(3)
    r.allreduce(a, rally.SUM)
    if r.rank() == 1:
        r.abort("bad input line 17", 3)
        sys.exit(3)
    try:
        r.allreduce(a, rally.SUM)
    except rally.PeerError as e:
        if "rank 1 failed: bad input line 17 (rally_abort code 3)" in e.message:
            print("saw the abort", flush=True)
        raise
