"""bench.py — the Python binding's cost, measured the way bench/ measures C.

    rally-run -n N python3 bench.py allreduce BYTES:REPS [BYTES:REPS ...]
    rally-run -n N python3 bench.py ckpt MIB REPS

allreduce: bench/bench_common.h's method with rally.allreduce on a float32
numpy array — per size a correctness check, warm-up reps (a fifth, at least
one), then REPS timed reps, each behind a 1-float allreduce as a barrier and
followed by an untimed checkpoint (which drops the recovery cache);
per-rep times MAX-reduced over ranks; rank 0 prints
"RESULT <bytes> <reps> <median_us> <min_us> <max_us>", the C benchmark's line.
Alternating with those reps, the same allreduce through the bare C function
(rally_allreduce called through ctypes, no checks): "BARE ..." likewise.
The difference is the binding's own cost, in the same process and buffer.

ckpt: a model of MIB MiB (a float64 array in a dict) checkpointed REPS
times; rank 0 prints "CKPT <bytes> pickle_ms=<median> checkpoint_ms=<median>
total_ms=<median>" (pickling alone, then rally.checkpoint of the object,
which pickles and copies).
"""
import pickle
import sys
import time

import numpy as np

import rally


def median(t):
    t = sorted(t)
    n = len(t)
    return t[n // 2] if n % 2 else 0.5 * (t[n // 2 - 1] + t[n // 2])


def allreduce(r, specs):
    rank, n = r.rank(), r.world_size()
    bar = np.zeros(1, np.float32)
    for spec in specs:
        nbytes, reps = (int(v) for v in spec.split(":"))
        count = nbytes // 4
        buf = ((rank + 1) + (np.arange(count) % 7)).astype(np.float32)
        r.allreduce(buf, rally.SUM)
        want = np.float32(n * (n + 1) // 2) + np.float32(n) * (np.arange(count) % 7).astype(np.float32)
        if not np.array_equal(buf, want):
            raise SystemExit("bench.py: wrong sum at %d bytes" % nbytes)
        warm = reps // 5 if reps >= 10 else 1
        times = np.zeros((2, reps))  # [the binding, the bare C call], reps alternating
        lib, h, noprep = r._lib, r._h, rally._lib.PREPARE_FN()
        for i in range(warm + reps):
            for k in (0, 1):
                r.allreduce(bar, rally.SUM)
                t0 = time.perf_counter()
                if k == 0:
                    r.allreduce(buf, rally.SUM)
                else:
                    lib.rally_allreduce(h, buf.ctypes.data, count, 8, rally.SUM, noprep, None)
                t1 = time.perf_counter()
                if i >= warm:
                    times[k, i - warm] = (t1 - t0) * 1e6
                r.checkpoint(None)  # untimed, as bench_allreduce: drops the recovery cache
        r.allreduce(times, rally.MAX)
        if rank == 0:
            for tag, t in (("RESULT", times[0]), ("BARE", times[1])):
                print("%s %d %d %.3f %.3f %.3f" % (tag, nbytes, reps, median(t), t.min(),
                                                   t.max()), flush=True)


def ckpt(r, mib, reps):
    model = {"w": np.random.default_rng(1).standard_normal(mib * 131072), "it": 0}
    tp, tc = [], []
    for i in range(reps):
        t0 = time.perf_counter()
        blob = pickle.dumps(model, protocol=rally.PICKLE_PROTOCOL)
        t1 = time.perf_counter()
        r.checkpoint(model)
        t2 = time.perf_counter()
        tp.append((t1 - t0) * 1e3)
        tc.append((t2 - t1) * 1e3)
        model["it"] = i + 1
    t = np.array([median(tp), median(tc)])
    r.allreduce(t, rally.MAX)
    if r.rank() == 0:
        print("CKPT %d pickle_ms=%.1f checkpoint_ms=%.1f" % (len(blob), t[0], t[1]), flush=True)


def main():
    with rally.init() as r:
        if len(sys.argv) > 2 and sys.argv[1] == "allreduce":
            allreduce(r, sys.argv[2:])
        elif len(sys.argv) == 4 and sys.argv[1] == "ckpt":
            ckpt(r, int(sys.argv[2]), int(sys.argv[3]))
        else:
            raise SystemExit(__doc__)


main()
