"""models.py — the global models users checkpoint, for test_models.py.

    rally-run -n 4 python3 models.py KIND [--steps S] [--kill RANK:STEP]

KIND is the model:
- adam, adamw, rmsprop: a torch MLP with that optimizer and an LR
  scheduler, batches drawn from torch's global generator (seeded per rank),
  so the generators' state is part of the training state; rally.torch
  checkpoints the module, the optimizer, the scheduler, the generators and
  an extra dict (the job's losses so far);
- numpy: a dict {"W", "m", "v", "step"}: a linear model trained with Adam
  written in numpy, every array derived from the one before, over rows cut
  into blocks as rally.dask cuts a collection (dict_adam: test_dask.py runs
  it through rally.dask on the same rows, for the same digest);
- dataclass: the same model as a dataclass with a list of losses.

--kill RANK:STEP: that rank's first incarnation SIGKILLs itself before
STEP (--kill-after-grads: in STEP, after the gradients' allreduce, so the
survivors step the optimizer in place before they wait for it).  --lazy
(torch kinds): a lazy checkpoint (rt.checkpoint(lazy=True)), without the
generators (a lazy checkpoint has no local model): the batches are drawn
from a generator seeded by rank and step instead.  Rank 0 prints "digest HEX" of the final weights, and "losses N"
(the extra state must have come through a restart whole).
"""
import argparse
import dataclasses
import os
import signal
from typing import List

import numpy as np

import rally

IN, OUT = 16, 4


def batch(rank, step, n=32):
    rng = np.random.default_rng(1_000_003 * step + rank)
    x = rng.standard_normal((n, IN))
    y = np.tanh(x @ np.linspace(-1, 1, IN * OUT).reshape(IN, OUT))
    return x, y


def grad_of(w, rank, step):
    x, y = batch(rank, step)
    return x.T @ (x @ w - y) / len(x)


def adam(w, m, v, g, t, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    w = w - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return w, m, v


@dataclasses.dataclass
class Linear:
    w: np.ndarray
    m: np.ndarray
    v: np.ndarray
    step: int = 0
    losses: List[float] = dataclasses.field(default_factory=list)


ROWS, CHUNK = 800, 100


def rows():
    """The numpy model's data: ROWS rows of IN inputs and OUT targets."""
    x = np.random.default_rng(11).standard_normal((ROWS, IN))
    return np.concatenate([x, np.tanh(x @ np.linspace(-1, 1, IN * OUT).reshape(IN, OUT))], axis=1)


def dict_adam(r, parts, steps, on_step=None):
    """The dict model on this rank's blocks of rows (numpy arrays); on_step(r,
    step) before each step (a kill point).  Returns the weights' digest."""
    xy = np.concatenate(parts)
    x, y = xy[:, :IN], xy[:, IN:]
    version, model = r.load_checkpoint()
    if version == 0:
        z = np.zeros((IN, OUT))
        model = {"W": z, "m": z.copy(), "v": z.copy(), "step": 0}
    while model["step"] < steps:
        w, m, v, step = model["W"], model["m"], model["v"], model["step"]
        if on_step:
            on_step(r, step)
        g = r.allreduce(x.T @ (x @ w - y), rally.SUM) / ROWS
        w, m, v = adam(w, m, v, g, step + 1)
        model = {"W": w, "m": m, "v": v, "step": step + 1}
        r.checkpoint(model)
    return "%016x" % rally.digest64(np.ascontiguousarray(model["W"]))


def kill_at(kill):
    def on_step(r, step):
        if kill == (r.rank(), step) and r.attempt() == 0:
            os.kill(os.getpid(), signal.SIGKILL)
    return on_step


class FailOnce:
    """on_step: rank's first step at step raises, once per marker file (a
    rank's own code failing; rally.dask.run raises it and the job is over)."""

    def __init__(self, rank, step, marker):
        self.rank, self.step, self.marker = rank, step, marker

    def __call__(self, r, step):
        if r.rank() == self.rank and step == self.step and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            raise RuntimeError("rank %d fails at step %d" % (self.rank, step))


def numpy_job(r, a, kill):
    if a.kind == "numpy":
        from rally.dask import _assign

        blocks = np.split(rows(), ROWS // CHUNK)
        mine = [blocks[i] for i in _assign(len(blocks), r.world_size())[r.rank()]]
        out = dict_adam(r, mine, a.steps, kill_at(kill))
        if r.rank() == 0:
            r.tracker_print("digest %s" % out)
        return
    version, d = r.load_checkpoint()
    if version == 0:
        z = np.zeros((IN, OUT))
        d = Linear(z, z.copy(), z.copy())
    while d.step < a.steps:
        kill_at(kill)(r, d.step)
        g = r.allreduce(grad_of(d.w, r.rank(), d.step), rally.SUM) / r.world_size()
        w, m, v = adam(d.w, d.m, d.v, g, d.step + 1)
        d = Linear(w, m, v, d.step + 1, d.losses + [float((g * g).sum())])
        r.checkpoint(d)
    if r.rank() == 0:
        r.tracker_print("digest %016x" % rally.digest64(np.ascontiguousarray(d.w)))
        r.tracker_print("losses %d" % len(d.losses))


def torch_job(r, a, kill):
    import torch

    import rally.torch as rt

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)  # the same initial weights on every rank
    model = torch.nn.Sequential(torch.nn.Linear(IN, 32), torch.nn.ReLU(), torch.nn.Linear(32, OUT))
    make = {"adam": lambda p: torch.optim.Adam(p, lr=0.005),
            "adamw": lambda p: torch.optim.AdamW(p, lr=0.005, weight_decay=0.01),
            "rmsprop": lambda p: torch.optim.RMSprop(p, lr=0.002, momentum=0.5)}[a.kind]
    opt = make(model.parameters())
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=7, gamma=0.7)
    torch.manual_seed(100 + r.rank())  # each rank's own stream of batches
    start, extra = rt.load_checkpoint(model, opt, sched, rng=not a.lazy, with_extra=True)
    losses = extra["losses"] if extra else []
    grads = rt.GradientBuckets(model.parameters())
    w = torch.linspace(-1, 1, IN * OUT).reshape(IN, OUT)
    for step in range(start, a.steps):
        if not a.kill_after_grads:
            kill_at(kill)(r, step)
        if a.lazy:
            x = torch.randn(32, IN, generator=torch.Generator().manual_seed(1_000_003 * step + r.rank()))
        else:
            x = torch.randn(32, IN)  # the global generator: restored with rng=True
        loss = torch.nn.functional.mse_loss(model(x), torch.tanh(x @ w))
        opt.zero_grad()
        loss.backward()
        grads.allreduce_()
        if a.kill_after_grads:
            kill_at(kill)(r, step)
        opt.step()
        sched.step()
        mean = r.allreduce(np.array([loss.item()]), rally.SUM) / r.world_size()
        losses.append(float(mean[0]))  # the job's loss: every rank holds the same
        rt.checkpoint(model, opt, step + 1, extra={"losses": losses}, scheduler=sched,
                      rng=not a.lazy, lazy=a.lazy)
    if r.rank() == 0:
        flat = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
        r.tracker_print("digest %016x" % rally.digest64(flat))
        r.tracker_print("losses %d" % len(losses))


def main():
    with rally.init() as r:
        ap = argparse.ArgumentParser()
        ap.add_argument("kind", choices=["adam", "adamw", "rmsprop", "numpy", "dataclass"])
        ap.add_argument("--steps", type=int, default=30)
        ap.add_argument("--kill", metavar="RANK:STEP", default="")
        ap.add_argument("--kill-after-grads", action="store_true")
        ap.add_argument("--lazy", action="store_true")
        a = ap.parse_args()
        kill = tuple(int(v) for v in a.kill.split(":")) if a.kill else None
        (numpy_job if a.kind in ("numpy", "dataclass") else torch_job)(r, a, kill)


if __name__ == "__main__":
    main()
