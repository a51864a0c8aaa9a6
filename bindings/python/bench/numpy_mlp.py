"""numpy_mlp.py — the torch MLP of bindings/python/examples/torch_mlp.py
written in numpy (bench/torch.sh's numpy block): the same shapes (32 ->
hidden -> hidden -> 1, ReLUs, mean squared error), SGD with momentum, each
rank's batch a function of (rank, step).  The gradients live in one float32
array, averaged in one allreduce a step:

    rally-run -n N python3 numpy_mlp.py [--steps S] [--hidden H] [--no-checkpoint]
        rally.allreduce, and a lazy checkpoint of the weights and the
        momentum every step (rally.lazy_checkpoint: copied into buffers
        reused every step, pickled only if a recovery or a snapshot asks);
        a restarted rank resumes from it
    RANK=.. WORLD_SIZE=.. MASTER_ADDR=.. MASTER_PORT=.. python3 numpy_mlp.py --gloo ...
        torch.distributed's Gloo all_reduce on the same array (a tensor
        over its memory), no checkpoints (Gloo has none to take)

Rank 0 prints "time per step S s" (the clock runs from the first step) and
"weights CRC" (CRC-32 of the weights' bytes), so runs can be compared bit
for bit: at N = 2 a sum of two is the same whoever adds, and rally's and
Gloo's weights agree; a rank killed and restarted by rally-run ends with
the same weights as a run without failures."""
import argparse
import os
import sys
import time
import zlib

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread a rank, as torch_mlp.py
import numpy as np  # noqa: E402

IN, OUT = 32, 1


def shapes(hidden):
    return [(IN, hidden), (hidden,), (hidden, hidden), (hidden,), (hidden, OUT), (OUT,)]


def views(flat, hidden):
    """The arrays of shapes(hidden), in order, as views into flat."""
    out, at = [], 0
    for s in shapes(hidden):
        n = int(np.prod(s))
        out.append(flat[at:at + n].reshape(s))
        at += n
    return out


def size(hidden):
    return sum(int(np.prod(s)) for s in shapes(hidden))


def batch(rank, step, n):
    g = np.random.default_rng(1_000_003 * step + rank)
    x = g.standard_normal((n, IN), dtype=np.float32)
    w = np.linspace(-1, 1, IN, dtype=np.float32)[:, None]
    y = np.tanh(x @ w) + np.float32(0.1) * g.standard_normal((n, OUT), dtype=np.float32)
    return x, y


def grad(p, g, x, y):
    """The loss's gradient with respect to the weights p into g (views)."""
    w1, b1, w2, b2, w3, b3 = p
    h1 = np.maximum(x @ w1 + b1, 0)
    h2 = np.maximum(h1 @ w2 + b2, 0)
    d = (h2 @ w3 + b3 - y) * np.float32(2.0 / y.size)
    g[4][...] = h2.T @ d
    g[5][...] = d.sum(0)
    d = (d @ w3.T) * (h2 > 0)
    g[2][...] = h1.T @ d
    g[3][...] = d.sum(0)
    d = (d @ w2.T) * (h1 > 0)
    g[0][...] = x.T @ d
    g[1][...] = d.sum(0)


class MLP:
    """The weights, their momentum and gradients, each one float32 array
    (the gradients reduced in one call), with the layers as views."""

    def __init__(self, hidden):
        self.weights = np.random.default_rng(0).uniform(-0.1, 0.1, size(hidden)).astype(np.float32)
        self.mom = np.zeros_like(self.weights)
        self.grads = np.zeros_like(self.weights)
        self.p, self.g = views(self.weights, hidden), views(self.grads, hidden)

    def train(self, a, rank, n, start, reduce, ckpt):
        """Steps start .. a.steps, reduce() summing the gradients over the
        ranks, ckpt(step) after each; the seconds a step took."""
        inv = np.float32(1.0 / n)
        t0 = time.perf_counter()
        for step in range(start, a.steps):
            x, y = batch(rank, step, a.batch)
            grad(self.p, self.g, x, y)
            reduce()
            self.grads *= inv
            self.mom *= np.float32(0.9)
            self.mom += self.grads
            self.weights -= np.float32(0.05) * self.mom
            ckpt(step + 1)
        return (time.perf_counter() - t0) / max(1, a.steps - start)

    def crc(self):
        return "%08x" % zlib.crc32(self.weights.tobytes())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--gloo", action="store_true")
    ap.add_argument("--no-checkpoint", action="store_true")
    a = ap.parse_args([v for v in sys.argv[1:] if not v.startswith("rally_")])  # rally.init's
    m = MLP(a.hidden)
    if a.gloo:
        import torch
        import torch.distributed as dist
        torch.set_num_threads(1)
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        tgrads = torch.from_numpy(m.grads)  # the same memory
        took = m.train(a, rank, dist.get_world_size(), 0, lambda: dist.all_reduce(tgrads),
                       lambda step: None)
        if rank == 0:
            print("time per step %.6f s" % took, flush=True)
            print("weights %s" % m.crc(), flush=True)
        dist.destroy_process_group()
        return
    import rally
    with rally.init() as r:
        _, model = r.load_checkpoint()
        start = 0
        if model is not None:
            m.weights[...], m.mom[...], start = model["weights"], model["mom"], model["step"]
        state = {"weights": m.weights, "mom": m.mom, "step": 0}

        def ckpt(step):
            state["step"] = step
            if not a.no_checkpoint:
                r.lazy_checkpoint(state)

        took = m.train(a, r.rank(), r.world_size(), start,
                       lambda: r.allreduce(m.grads, rally.SUM), ckpt)
        if r.rank() == 0:
            r.tracker_print("time per step %.6f s" % took)
            r.tracker_print("weights %s" % m.crc())


if __name__ == "__main__":
    main()
