"""ops.py — a worker that checks every dtype and operator, broadcast and
allgather and allreduce_object of objects, and custom reducers (commutative and not) against
numpy, under rally-run.
Each rank builds every rank's operand from the same seed, so each knows the
expected result; values are small integers (exact in every type, so any
reduction order gives the same bits).  Prints "ops_ok rank R" or raises."""
import sys

import numpy as np

import rally

N = int(sys.argv[1]) if len(sys.argv) > 1 else 37


def operand(rank, dtype, n):
    rng = np.random.default_rng(1000 + rank)
    lo, hi = (0, 100) if np.dtype(dtype).kind == "u" else (-100, 100)
    return rng.integers(lo, hi, size=n).astype(dtype)


def main():
    with rally.init() as r:
        rank, world = r.rank(), r.world_size()
        checked = 0
        for dt in rally.DTYPES:
            ops = [rally.MAX, rally.MIN, rally.SUM] + ([rally.BITOR] if dt.kind != "f" else [])
            for op in ops:
                a = operand(rank, dt, N).reshape(-1, 1) if op == rally.SUM else operand(rank, dt, N)
                every = np.stack([operand(q, dt, N) for q in range(world)])
                if op == rally.MAX:
                    want = every.max(axis=0)
                elif op == rally.MIN:
                    want = every.min(axis=0)
                elif op == rally.SUM:
                    want = every.sum(axis=0, dtype=dt).reshape(-1, 1)  # wraps like C
                else:
                    want = np.bitwise_or.reduce(every, axis=0)
                got = r.allreduce(a, op)
                assert got is a and a.dtype == dt
                if not np.array_equal(a, want):
                    raise SystemExit("rank %d: %s %s: got %s want %s" % (rank, dt, op, a, want))
                checked += 1
            b = operand(rank, dt, N)
            r.broadcast(b, world - 1)
            assert np.array_equal(b, operand(world - 1, dt, N)), (dt, "broadcast")
        # prepare fills the buffer
        p = np.zeros(4, np.int64)
        r.allreduce(p, rally.SUM, prepare=lambda a: a.fill(rank + 1))
        assert p.tolist() == [world * (world + 1) // 2] * 4, p
        # objects
        obj = {"from": rank, "payload": list(range(rank + 1))}
        got = r.broadcast(obj if rank == 1 % world else None, 1 % world)
        assert got == {"from": 1 % world, "payload": list(range(1 % world + 1))}, got
        every = r.allgather(("rank", rank, np.arange(rank)))
        assert [e[1] for e in every] == list(range(world))
        assert all(np.array_equal(e[2], np.arange(q)) for q, e in enumerate(every))
        # allreduce_object: mpi4py's comm.allreduce(obj, op), folded in rank order
        assert r.allreduce_object(rank + 1) == world * (world + 1) // 2
        assert r.allreduce_object([rank], rally.SUM) == list(range(world))  # list + list
        assert r.allreduce_object({rank: "x"}, lambda a, b: {**a, **b}) == {q: "x" for q in range(world)}
        assert r.allreduce_object((rank, -rank), rally.MAX) == (world - 1, 1 - world)
        assert r.allreduce_object(1 << rank, rally.BITOR) == (1 << world) - 1
        assert r.allreduce_object("s%d" % rank, lambda a, b: a + b) == "".join("s%d" % q for q in range(world))
        assert r.allreduce_object(0.1 * (rank + 1), rally.SUM_EXACT) == \
            __import__("math").fsum(0.1 * (q + 1) for q in range(world))
        try:
            r.allreduce_object(1, rally.Reducer(0, None, True, None, None))
            raise SystemExit("an object reduction with a Reducer went through")
        except rally.ArgumentError:
            pass
        rows = r.allgather(np.array([[rank, -rank]], np.int16))
        assert rows.shape == (world, 1, 2) and rows[:, 0, 0].tolist() == list(range(world)), rows
        # a custom reducer on a structured dtype: (max of value, its rank)
        pair = np.dtype([("v", np.float64), ("who", np.int32)])
        red = r.register_reducer(
            lambda io, x: np.where((x["v"] > io["v"]) | ((x["v"] == io["v"]) & (x["who"] < io["who"])),
                                   x, io), pair)
        m = np.zeros(5, pair)
        m["v"] = operand(rank, np.float64, 5)
        m["who"] = rank
        r.allreduce(m, red)
        vals = np.stack([operand(q, np.float64, 5) for q in range(world)])
        assert np.array_equal(m["v"], vals.max(axis=0)), m
        assert np.array_equal(m["who"], vals.argmax(axis=0)), m
        # a non-commutative reducer: affine maps x -> a x + b composed in rank
        # order, (f (+) g)(x) = g(f(x)); the result must be the left fold
        aff = np.dtype([("a", np.int64), ("b", np.int64)])

        def compose(f, g):
            out = np.empty_like(f)
            out["a"] = f["a"] * g["a"]
            out["b"] = g["a"] * f["b"] + g["b"]
            return out
        fold = r.register_reducer(compose, aff, commutative=False)
        maps = [np.array([(q % 3 + 1, i + 2 * q) for i in range(6)], aff) for q in range(world)]
        mine = maps[rank].copy()
        r.allreduce(mine, fold)
        want = maps[0]
        for q in range(1, world):
            want = compose(want, maps[q])
        assert np.array_equal(mine, want), (mine, want)
        r.tracker_print("ops_ok rank %d checked %d" % (rank, checked))


main()
