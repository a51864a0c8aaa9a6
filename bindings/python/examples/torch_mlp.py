#!/usr/bin/env python3
"""torch_mlp.py — data-parallel training of a small MLP with rally.torch.

    rally-run -n 4 python3 torch_mlp.py [--steps 100] [--batch 64] [--hidden 64]
                                        [--kill RANK:STEP] [--eager]

Each rank draws its own batches of a generated regression task (seeded by
rank and step), computes gradients, and averages them over the ranks in a
few bucketed allreduces; SGD with momentum steps the same on every rank,
and the module's and optimizer's state is checkpointed every step: lazily
(copied into buffers reused every step, pickled only when a recovering rank
asks), or with --eager pickled and compared across the ranks.  A
killed rank (kill -9, or rally_mock=1,50,0,0 with RALLY_PYTHON_MOCK=1) is
restarted by rally-run, loads the state from the survivors and goes on;
--kill 1:50 makes rank 1's first incarnation SIGKILL itself before step 50
(with TORCH_MLP_KILLED=FILE set, it writes the wall clock of its death to
FILE, and the restarted rank prints "back S s", the wall clock from the
kill to the end of its first step: bench/torch.sh).

Deterministic: one intra-op thread (torch.set_num_threads(1)),
torch.use_deterministic_algorithms(True), and every rank's batch a function
of (rank, step) alone, so the final weights are bit-identical to a run
without failures.  Rank 0 prints "step S loss L" every 10 steps and last
"weights DIGEST" (XXH3-64 of every parameter's bytes in order) and the
seconds per step.
"""
import argparse
import os
import signal
import time

import numpy as np
import torch

import rally
import rally.torch as rt

IN, HIDDEN, OUT = 32, 64, 1


def mlp(hidden=HIDDEN):
    """The model: IN -> hidden -> hidden -> OUT with ReLUs; seed torch first
    for the same initial weights on every rank."""
    return torch.nn.Sequential(torch.nn.Linear(IN, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, OUT))


def batch(rank, step, n):
    g = torch.Generator().manual_seed(1_000_003 * step + rank)
    x = torch.randn(n, IN, generator=g)
    w = torch.linspace(-1, 1, IN).unsqueeze(1)
    y = torch.tanh(x @ w) + 0.1 * torch.randn(n, OUT, generator=g)
    return x, y


def main():
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    with rally.init() as r:  # takes rally_key=value out of sys.argv first
        ap = argparse.ArgumentParser()
        ap.add_argument("--steps", type=int, default=100)
        ap.add_argument("--batch", type=int, default=64)
        ap.add_argument("--hidden", type=int, default=HIDDEN)
        ap.add_argument("--bucket-bytes", type=int, default=1 << 20)
        ap.add_argument("--kill", metavar="RANK:STEP", default="")
        ap.add_argument("--eager", action="store_true")
        a = ap.parse_args()
        kill = tuple(int(v) for v in a.kill.split(":")) if a.kill else None
        torch.manual_seed(0)  # the same initial weights on every rank
        model = mlp(a.hidden)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        start = rt.load_checkpoint(model, opt)
        grads = rt.GradientBuckets(model.parameters(), bucket_bytes=a.bucket_bytes)
        loss_fn = torch.nn.MSELoss()
        killed = os.environ.get("TORCH_MLP_KILLED")
        t0 = time.perf_counter()
        for step in range(start, a.steps):
            if kill == (r.rank(), step) and r.attempt() == 0:
                if killed:
                    with open(killed, "w") as f:
                        f.write("%.6f\n" % time.time())
                os.kill(os.getpid(), signal.SIGKILL)
            x, y = batch(r.rank(), step, a.batch)
            loss = loss_fn(model(x), y)
            opt.zero_grad()
            loss.backward()
            grads.allreduce_()
            opt.step()
            rt.checkpoint(model, opt, step + 1, lazy=not a.eager)
            if killed and kill and kill[0] == r.rank() and r.attempt() > 0 and step == start:
                with open(killed) as f:
                    r.tracker_print("back %.6f s" % (time.time() - float(f.read())))
            if r.rank() == 0 and (step + 1) % 10 == 0:
                r.tracker_print("step %d loss %.6f" % (step + 1, loss.item()))
        took = time.perf_counter() - t0
        if r.rank() == 0:
            flat = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
            r.tracker_print("weights %016x" % rally.digest64(flat))
            r.tracker_print("time per step %.6f s" % (took / max(1, a.steps - start)))


if __name__ == "__main__":
    main()
