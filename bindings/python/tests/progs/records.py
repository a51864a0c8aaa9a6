"""records.py IDS ITERS — local models as records in Python
(Rally.set_local_records): ids 0..IDS-1, rank r of N owns id when
id * N // IDS == r; each id's state is an integer.  Each iteration sums
every state over the job (an exact int64 allreduce) and updates every state
from that sum and the iteration, then checkpoints the sum and the records.
Nothing depends on N, so every run ends with the same digest whatever the
world size and however an elastic job's workers change (rally.Resized:
load again).  Rank 0 prints "digest HEX"."""
import sys

import numpy as np

import rally

MASK = (1 << 63) - 1


def mix(x):
    x = (x ^ (x >> 31)) * 0x7fb5d329728ea185 & MASK
    return (x ^ (x >> 29)) & MASK


def main():
    ids, iters = int(sys.argv[1]), int(sys.argv[2])
    with rally.init() as r:
        r.set_local_records(lambda rid, world: rid * world // ids)
        while True:
            rank, world = r.rank(), r.world_size()
            try:
                version, total, recs = r.load_checkpoint(with_local=True)
                mine = [i for i in range(ids) if i * world // ids == rank]
                if version == 0:
                    recs, total = {i: mix(i * 977) for i in mine}, 0
                assert sorted(recs) == mine, (rank, world, sorted(recs)[:5], mine[:5])
                for it in range(version, iters):
                    s = np.array([sum(recs.values()) & MASK], np.int64)
                    r.allreduce(s, rally.SUM)
                    total = int(s[0]) & MASK
                    recs = {i: mix(v ^ total ^ (it << 20)) for i, v in recs.items()}
                    r.checkpoint(total, recs)
                break
            except rally.Resized:
                continue
        d = np.array([sum(mix(v + i) for i, v in recs.items()) & MASK], np.int64)
        r.allreduce(d, rally.SUM)
        if r.rank() == 0:
            print("digest %016x" % ((int(d[0]) ^ total) & MASK), flush=True)


if __name__ == "__main__":
    main()
