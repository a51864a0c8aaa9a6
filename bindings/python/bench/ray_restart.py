"""ray_restart.py — bench/ray.sh's measure: one rank of docs/ray.md's k-means
killed -9 at iteration 5 on a local two-node Ray cluster, under rally.ray
(Ray restarts that actor, it recovers in place) and under Ray Train (a
TorchTrainer on CPU, gloo, a checkpoint every iteration; on a worker's
death it restarts every worker from the newest checkpoint).  The same
points, rows per rank, 4 ranks of 1 CPU, iterations and kill point.

    python3 ray_restart.py DOC_PROGRAM_DIR ROUNDS      (the orchestrator)
    python3 ray_restart.py rally|train ADDRESS DIR     (one job; internal)

The orchestrator starts the cluster (tests/progs/ray_cluster.py), runs the
two jobs ROUNDS times each, interleaved A B B A, and prints per job the
median and range of: the seconds from the kill to the killed rank back at
iteration 5 in its new process (the job back in step: the others wait
there under rally, start there again under Ray Train), and the job's wall
time with the kill.  The kill lands at a known point: rank 1's first
process writes DIR/pid at iteration 5 and waits; the orchestrator kills it
and notes the time; rank 1's next process writes DIR/back there."""
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time

KILL_IT = 5


def _put(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


class Hook:
    """Rank 1: its first process stops at KILL_IT (DIR/first is made once);
    the next one says when it is back there."""

    def __init__(self, d):
        self.d = d

    def __call__(self, rank, it):
        if rank != 1 or it != KILL_IT:
            return
        try:
            os.close(os.open(os.path.join(self.d, "first"), os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            if not os.path.exists(os.path.join(self.d, "back")):
                _put(os.path.join(self.d, "back"), repr(time.time()))
            return
        _put(os.path.join(self.d, "pid"), str(os.getpid()))
        time.sleep(600)  # killed here


def rally_job(address, d):
    import ray

    import rally.ray
    from ray_kmeans import BLOCKS, ITERS, K, kmeans, points

    hook = Hook(d)
    ray.init(address=address, log_to_driver=False, logging_level="ERROR")
    df = points()
    ds = ray.data.from_pandas([df[i::BLOCKS] for i in range(BLOCKS)])
    out = rally.ray.run(kmeans, K, ITERS, data=ds, n_workers=4, timeout=300,
                        on_iteration=lambda r, it: hook(r.rank(), it))
    print("result", out["digest"], flush=True)


def train_loop(cfg):
    """The same k-means as a Ray Train worker: rows [k·T/w, (k+1)·T/w), a
    gloo all_reduce of the per-centroid sums and counts, a checkpoint of the
    centroids from rank 0 every iteration, resumed from the newest."""
    import numpy as np
    import torch
    import torch.distributed as dist

    import ray.train
    from ray_kmeans import ITERS, K, points

    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    x = points()[["a", "b"]].to_numpy()
    x = x[rank * len(x) // world:(rank + 1) * len(x) // world]
    ck = ray.train.get_checkpoint()
    if ck:
        with ck.as_directory() as cd, open(os.path.join(cd, "model.pkl"), "rb") as f:
            model = pickle.load(f)
    else:
        first = torch.from_numpy(x[:K].copy())
        dist.broadcast(first, 0)
        model = {"c": first.numpy(), "it": 0}
    hook = Hook(cfg["dir"])
    while model["it"] < ITERS:
        hook(rank, model["it"])
        c = model["c"]
        near = ((x[:, None, :] - c[None, :, :]) ** 2).sum(axis=2).argmin(axis=1)
        acc = np.zeros((K, 3))
        for j in range(K):
            acc[j, :2] = x[near == j].sum(axis=0)
            acc[j, 2] = (near == j).sum()
        t = torch.from_numpy(acc)
        dist.all_reduce(t)
        s = t.numpy()
        c = np.where(s[:, 2:] > 0, s[:, :2] / np.maximum(s[:, 2:], 1), c)
        model = {"c": c, "it": model["it"] + 1}
        with tempfile.TemporaryDirectory() as td:
            if rank == 0:
                with open(os.path.join(td, "model.pkl"), "wb") as f:
                    pickle.dump(model, f)
            ray.train.report({"it": model["it"]},
                             checkpoint=ray.train.Checkpoint.from_directory(td) if rank == 0
                             else None)


def train_job(address, d):
    import ray
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    ray.init(address=address, log_to_driver=False, logging_level="ERROR")
    trainer = TorchTrainer(
        train_loop, train_loop_config={"dir": d},
        scaling_config=ScalingConfig(num_workers=4, use_gpu=False,
                                     resources_per_worker={"CPU": 1}),
        run_config=RunConfig(name="kmeans", storage_path=os.path.join(d, "storage"),
                             failure_config=FailureConfig(max_failures=3)))
    result = trainer.fit()
    print("result", result.metrics, flush=True)


def one(cluster, kind, tmp, rnd):
    """One job with its kill: (kill to back in step, wall time), seconds."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "tests", "progs"))
    from ray_cluster import read, wait_until

    d = os.path.join(tmp, "%s-%d" % (kind, rnd))
    os.makedirs(d)
    out = os.path.join(d, "out")
    env = dict(cluster.env, RALLY_TEST_TAG=cluster.tag + "-driver", PYTHONUNBUFFERED="1")
    t0 = time.time()
    with open(out, "w") as f:
        p = subprocess.Popen(["timeout", "-s", "KILL", "600", sys.executable,
                              os.path.abspath(__file__), kind, cluster.address, d],
                             stdout=f, stderr=subprocess.STDOUT, env=env)
    pid_file = os.path.join(d, "pid")
    wait_until(lambda: os.path.exists(pid_file) or p.poll() is not None, 300,
               lambda: read(out)[-3000:])
    assert os.path.exists(pid_file), read(out)[-3000:]
    killed = time.time()
    os.kill(int(read(pid_file)), signal.SIGKILL)
    rc = p.wait()
    t1 = time.time()
    assert rc == 0 and "result" in read(out), read(out)[-3000:]
    return float(read(os.path.join(d, "back"))) - killed, t1 - t0


def stats(xs):
    xs = sorted(xs)
    n = len(xs)
    med = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    return "%8.2f (%.2f-%.2f)" % (med, xs[0], xs[-1])


def main():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "tests", "progs"))
    from ray_cluster import Cluster

    doc_dir, rounds = sys.argv[1], int(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix="rbench-")
    progs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "progs")
    c = Cluster(tmp, os.pathsep.join([os.environ.get("PYTHONPATH", ""), doc_dir, progs]))
    res = {"rally": [], "train": []}
    try:
        c.start("head", "127.0.0.2")
        c.start("n2", "127.0.0.3")
        for rnd in range(rounds):
            for kind in (("rally", "train") if rnd % 2 == 0 else ("train", "rally")):
                res[kind].append(one(c, kind, tmp, rnd))
    finally:
        c.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print("%-30s %22s %22s" % ("4 ranks, kill -9 of rank 1 at it 5",
                               "kill to back in step s", "job with the kill s"))
    for kind, name in (("rally", "rally.ray (in place)"),
                       ("train", "Ray Train (restart all)")):
        print("%-30s %22s %22s" % (name, stats([a for a, _ in res[kind]]),
                                   stats([b for _, b in res[kind]])))


if __name__ == "__main__":
    if sys.argv[1] in ("rally", "train"):
        (rally_job if sys.argv[1] == "rally" else train_job)(sys.argv[2], sys.argv[3])
    else:
        main()
