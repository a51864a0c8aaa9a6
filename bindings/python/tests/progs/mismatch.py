"""mismatch.py — rank 1 reduces int32 where the others reduce float64: every
rank must get rally.MismatchError with the C library's sentence, and later
calls StateError.  Prints "mismatch_ok rank R" when that is so."""
import numpy as np

import rally

r = rally.init()
a = np.ones(8, np.int32 if r.rank() == 1 else np.float64)
try:
    r.allreduce(a, rally.SUM)
    print("rank %d: no error" % r.rank())
except rally.MismatchError as e:
    assert e.status == 9 and e.status_name == "RALLY_EMISMATCH", e
    assert "allreduce" in e.message, e.message
    try:
        r.allreduce(np.ones(2), rally.SUM)
    except rally.StateError as e2:
        print("mismatch_ok rank %d: %s | then: %s" % (r.rank(), e, e2), flush=True)
finally:
    try:
        r.finalize()
    except rally.Error:
        pass
