"""ckpt.py ITERS [--pause-ms MS] [--local] [--lazy] [--mock] — a recoverable job in
Python: each iteration an allreduce (float64 sums whose bits depend on the
reduction order), a broadcast of an object, an allgather, an allreduce_object, and a checkpoint
of a pickled model (and, with --local, a per-rank local model; --lazy: a
lazy checkpoint; --mock: rally.init(mock=True)).  Prints
"pid R P" per incarnation and, on rank 0, "digest HEX" of the final model,
so a run with failures can be compared with one without."""
import hashlib
import os
import sys
import time

import numpy as np

import rally


def main():
    iters = int(sys.argv[1])
    pause = float(sys.argv[sys.argv.index("--pause-ms") + 1]) / 1000 if "--pause-ms" in sys.argv else 0
    use_local, lazy = "--local" in sys.argv, "--lazy" in sys.argv
    with rally.init(mock=True if "--mock" in sys.argv else None) as r:
        rank, world = r.rank(), r.world_size()
        r.tracker_print("pid %d %d" % (rank, os.getpid()))
        # bootstrap collectives before load_checkpoint are replayed too
        sizes = r.allgather(100 + rank)
        n = int(sum(sizes))
        if use_local:
            version, model, local = r.load_checkpoint(with_local=True)
        else:
            (version, model), local = r.load_checkpoint(), None
        if version == 0:
            model = {"w": np.zeros(n), "it": 0, "log": []}
            local = {"rank": rank, "seen": []}
        elif use_local:
            assert local["rank"] == rank, local
        while model["it"] < iters:
            it = model["it"]
            rng = np.random.default_rng(it * 7919 + rank)
            g = rng.standard_normal(n) / (rank + 1.0)  # order-sensitive sums
            r.allreduce(g, rally.SUM)
            best = np.array([g.max(), -g.min()])
            r.allreduce(best, rally.MAX)
            note = r.broadcast({"it": it, "best": best.tolist()} if rank == it % world else None,
                               it % world)
            every = r.allgather(float(g[rank]))
            model["w"] = model["w"] * 0.5 + g
            top = r.allreduce_object({rank: float(g[0])}, lambda a, b: {**a, **b})
            model["log"].append((note["best"], sum(every), sorted(top.items())))
            model["it"] = it + 1
            if pause:
                time.sleep(pause)
            if use_local:
                local["seen"].append(it)
                r.checkpoint(model, local)
            elif lazy:
                r.lazy_checkpoint(model)
                model = dict(model, w=model["w"].copy(), log=list(model["log"]))  # leave it be
            else:
                r.checkpoint(model)
        if use_local:
            assert local["seen"] == list(range(len(local["seen"]))) and len(local["seen"]) == iters
        h = hashlib.sha256(model["w"].tobytes() + repr(model["log"]).encode()).hexdigest()[:16]
        if rank == 0:
            r.tracker_print("digest %s version %d" % (h, r.version()))


main()
