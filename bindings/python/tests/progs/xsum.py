"""xsum.py — each rank adds its contiguous block of the same 4000 rows into
a rally.XSum; allreduce_xsum gives the exact column sums, which every rank
also computes from all the rows and compares bit for bit; SUM_EXACT of one
value a rank likewise.  Prints "xsum_ok DIGEST" on rank 0 (the same for
every N) or raises."""
import numpy as np

import rally


def rows():
    rng = np.random.default_rng(3)
    v = rng.standard_normal((4000, 6)) * np.exp2(rng.integers(-500, 500, (4000, 6)))
    v[1::2, 0] = -v[0::2, 0]
    return v


def main():
    v = rows()
    with rally.init() as r:
        n, q = r.world_size(), r.rank()
        mine = v[len(v) * q // n:len(v) * (q + 1) // n]
        acc = rally.XSum(6)
        got = r.allreduce_xsum(acc, prepare=lambda a: a.clear().add(mine))
        want = rally.XSum(6).add(v).round()
        assert got.tobytes() == want.tobytes(), (got, want)
        got32 = r.allreduce_xsum(acc, np.float32)
        assert got32.tobytes() == rally.XSum(6).add(v).round(np.float32).tobytes()
        one = v[q].copy()
        r.allreduce(one, rally.SUM_EXACT)
        assert one.tobytes() == rally.XSum(6).add(v[:n]).round().tobytes()
        if q == 0:
            print("xsum_ok %016x" % rally.digest64(got))


if __name__ == "__main__":
    main()
