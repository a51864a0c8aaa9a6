"""ray_job.py — docs/ray.md's k-means (ray_kmeans.py, extracted from the doc)
as test_ray.py drives it: a driver that prints "result DIGEST world W", and
a kill point, PauseOn, where the test kills a whole Ray node.

    python3 ray_job.py ADDRESS POLICY NODE MARKER [SNAPSHOT_DIR|-] [N_WORKERS] [WAIT]

The ranks on node NODE (their Ray node's RALLY_TEST_TAG ends in -NODE) write
MARKER.<pid> at iteration 5 and wait there to be killed with their node;
NODE "rank1": rank 1's first incarnation does, to be killed alone."""
import os
import sys
import time

import ray

import rally.ray
from ray_kmeans import BLOCKS, ITERS, K, kmeans, points


class PauseOn:
    def __init__(self, node, it, path):
        self.node, self.it, self.path = node, it, path

    def __call__(self, r, it):
        if self.node == "rank1":
            here = r.rank() == 1 and r.attempt() == 0
        else:
            here = os.environ.get("RALLY_TEST_TAG", "").endswith("-" + self.node)
        if here and it == self.it:
            tmp = "%s.%d.tmp" % (self.path, os.getpid())
            with open(tmp, "w") as f:
                f.write("%d\n" % r.rank())
            os.rename(tmp, "%s.%d" % (self.path, os.getpid()))
            time.sleep(600)  # the test kills this node now


def main():
    address, policy, node, marker = sys.argv[1:5]
    snap = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] != "-" else None
    n = int(sys.argv[6]) if len(sys.argv) > 6 else 4
    # room for the ranks: a node just started, or the last job's actors just
    # gone, may take a while to show on a loaded machine
    wait = float(sys.argv[7]) if len(sys.argv) > 7 else 120
    ray.init(address=address, log_to_driver=False, logging_level="ERROR")
    df = points()
    ds = ray.data.from_pandas([df[i::BLOCKS] for i in range(BLOCKS)])
    out = rally.ray.run(kmeans, K, ITERS, on_iteration=PauseOn(node, 5, marker), data=ds,
                        n_workers=n, on_node_loss=policy, min_workers=n // 2, node_wait=5,
                        wait=wait, resume_wait=120, timeout=300, snapshot_dir=snap,
                        snapshot_every=1 if snap else 0)
    print("result %s world %d" % (out["digest"], out["world"]), flush=True)


if __name__ == "__main__":
    main()
