"""rally.torch — PyTorch tensors through rally, on the CPU: reduced and
broadcast in place (a CPU tensor and its ``.numpy()`` view share memory, so
nothing is copied), gradients bucketed into a few allreduces, and a module's,
an optimizer's and an LR scheduler's ``state_dict`` checkpointed as the global
model, each rank's random number generators as its local model.

    import rally, rally.torch as rt

    with rally.init() as r:
        start = rt.load_checkpoint(model, opt, sched)  # 0, or the step to resume
        grads = rt.GradientBuckets(model.parameters())
        for step in range(start, steps):
            loss_fn(model(x), y).backward()
            grads.allreduce_()                      # the mean over the ranks
            opt.step(); opt.zero_grad(); sched.step()
            rt.checkpoint(model, opt, step + 1, scheduler=sched)

A worker killed mid-job is restarted by rally-run, loads the newest state
from the survivors and goes on; with deterministic kernels
(``torch.use_deterministic_algorithms(True)``, a fixed thread count) the
final weights are bit-identical to a run without failures
(bindings/python/examples/torch_mlp.py).

CursorSampler replaces DistributedSampler: a batch sampler driven by
rally.data.Cursor, whose state rides in the checkpoint, so every sample is
seen once per epoch across restarts, shrinks, grows and resumes at another
world size (docs/data.md, "The data cursor").
"""
from __future__ import annotations

import random
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

import numpy as np
import torch

from . import SUM, _current
from .data import Cursor
from .errors import ArgumentError

__all__ = ["allreduce_", "broadcast_", "GradientBuckets", "checkpoint", "load_checkpoint",
           "CursorSampler"]


def _view(what: str, t: torch.Tensor) -> np.ndarray:
    """The numpy view of a CPU, contiguous tensor: the same memory."""
    if not isinstance(t, torch.Tensor):
        raise ArgumentError("rally.torch.%s takes a torch.Tensor, not %s" % (what, type(t).__name__))
    if t.device.type != "cpu":
        raise ArgumentError("rally.torch.%s: the tensor is on %s; rally reduces CPU tensors "
                            "(move it with .cpu())" % (what, t.device))
    if not t.is_contiguous():
        raise ArgumentError("rally.torch.%s: the tensor is not contiguous (pass "
                            "t.contiguous(), or reduce the tensor it views)" % what)
    return t.detach().numpy()


def allreduce_(t: torch.Tensor, op: Any = SUM, r: Any = None) -> torch.Tensor:
    """Reduces t in place over every rank with op (rally.SUM, MAX, MIN,
    BITOR, SUM_EXACT) and returns t; r: a handle (default: rally.init's)."""
    (r or _current("torch.allreduce_")).allreduce(_view("allreduce_", t), op)
    return t


def broadcast_(t: torch.Tensor, root: int = 0, r: Any = None) -> torch.Tensor:
    """Root's t in place on every rank; returns t."""
    (r or _current("torch.broadcast_")).broadcast(_view("broadcast_", t), root)
    return t


class GradientBuckets:
    """Many small gradients in a few allreduces: the parameters' gradients
    are copied into flat buffers of one dtype each, at most ``bucket_bytes``
    (a parameter larger than that has a bucket of its own), reduced, and
    copied back.  The buffers are made once and reused every step.  The
    order is the parameters' order, so every rank fills the same buckets
    alike; every rank must pass the same parameters."""

    def __init__(self, params: Iterable[torch.Tensor], bucket_bytes: int = 1 << 20,
                 mean: bool = True, r: Any = None) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.mean, self.r = mean, r
        self.buckets: List[tuple] = []  # (flat buffer, [(param, offset, numel)])
        cur: Dict[torch.dtype, list] = {}
        for p in self.params:
            if p.device.type != "cpu":
                raise ArgumentError("rally.torch.GradientBuckets: a parameter is on %s; CPU only"
                                    % p.device)
            group = cur.setdefault(p.dtype, [])
            size = sum(q.numel() for q in group) * p.element_size()
            if group and size + p.numel() * p.element_size() > bucket_bytes:
                self._close(group)
                group = cur[p.dtype] = []
            group.append(p)
        for group in cur.values():
            if group:
                self._close(group)

    def _close(self, group: list) -> None:
        flat = torch.zeros(sum(p.numel() for p in group), dtype=group[0].dtype)
        at, members = 0, []
        for p in group:
            members.append((p, at, p.numel()))
            at += p.numel()
        self.buckets.append((flat, members))

    def allreduce_(self) -> None:
        """Sums (mean=True: averages) every parameter's .grad over the ranks,
        in place; a parameter without a gradient counts as zeros."""
        r = self.r or _current("torch.GradientBuckets.allreduce_")
        scale = 1.0 / r.world_size() if self.mean else None
        for flat, members in self.buckets:
            for p, at, n in members:
                seg = flat[at:at + n]
                if p.grad is None:
                    seg.zero_()
                else:
                    seg.copy_(p.grad.reshape(-1))
            r.allreduce(flat.numpy(), SUM)
            if scale is not None:
                flat.mul_(scale)
            for p, at, n in members:
                if p.grad is None:
                    p.grad = torch.empty_like(p)
                p.grad.copy_(flat[at:at + n].view_as(p))


def _to_torch(x: Any) -> Any:
    """Snapshots written before tensors had a canonical form hold numpy
    arrays where the state_dicts had tensors: tensors again."""
    if isinstance(x, np.ndarray):
        return torch.from_numpy(x)
    if isinstance(x, dict):
        return {k: _to_torch(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_to_torch(v) for v in x)
    return x


def _rng_state() -> Dict[str, Any]:
    return {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
            "python": random.getstate()}


def _set_rng_state(state: Dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])


def _scheduler_state(scheduler: Any) -> Dict[str, Any]:
    """scheduler's state_dict without its own bound methods: some schedulers
    keep one there (torch 1.x's OneCycleLR, its anneal_func), which refers
    back to the scheduler, optimizer and all; load_state_dict keeps the
    scheduler's own."""
    return {k: v for k, v in scheduler.state_dict().items()
            if getattr(v, "__self__", None) is not scheduler}


def checkpoint(module: torch.nn.Module, optimizer: Optional[torch.optim.Optimizer] = None,
               step: Optional[int] = None, extra: Any = None, scheduler: Any = None,
               rng: bool = False, lazy: bool = False, r: Any = None) -> None:
    """Checkpoints the training state: module's and optimizer's state_dicts,
    scheduler's (an LR scheduler, or anything with state_dict and
    load_state_dict), step and extra (any values) as the global model,
    which every rank holds alike, so one copy survives.  rng=True also
    keeps this rank's random number generators (torch's, numpy's global
    one and Python's ``random``) as its local model: ranks may draw
    different numbers, so each keeps its own (use it at every checkpoint or
    never).  Every object travels in rally's canonical form
    (rally/_canon.py), so a restarted rank's equal state is equal bytes.
    The checkpoint must be the step's last collective.

    lazy=True copies the tensors into buffers reused every step and
    pickles nothing until a recovering rank or a snapshot needs the state
    (Rally.lazy_checkpoint): a memcpy of the state a step, where the
    default pickles it and rally copies and digests the bytes.  The
    optimizer may change the tensors in place right after the call.  What
    it gives up: the ranks' states are not compared, rng=True is refused
    (a lazy checkpoint has no local model), and an elastic job that loses
    a worker inside a checkpoint's acknowledgement cannot go on (rally
    keeps no copy of the version before a lazy one to go back to)."""
    if lazy and rng:
        raise ArgumentError("rally.torch.checkpoint: rng=True needs lazy=False (a lazy "
                            "checkpoint keeps no local model)")
    h = r or _current("torch.checkpoint")
    state = {"module": module.state_dict(), "step": step, "extra": extra,
             "optimizer": optimizer.state_dict() if optimizer is not None else None,
             "scheduler": _scheduler_state(scheduler) if scheduler is not None else None}
    if lazy:
        h.lazy_checkpoint(state)
    else:
        h.checkpoint(state, _rng_state() if rng else None)


def load_checkpoint(module: torch.nn.Module, optimizer: Optional[torch.optim.Optimizer] = None,
                    scheduler: Any = None, rng: bool = False, with_extra: bool = False,
                    r: Any = None) -> Union[int, Tuple[int, Any]]:
    """Loads the newest checkpoint into module, optimizer and scheduler (and
    with rng=True this rank's random number generators), if there is one.
    Returns its step (checkpoint's step, else the version; 0 on a fresh
    start), or (step, extra) with with_extra=True (extra None on a fresh
    start).  Pass what checkpoint was given: a scheduler or rng
    checkpointed but not asked for here is not restored."""
    h = r or _current("torch.load_checkpoint")
    version, state, local = h.load_checkpoint(with_local=True)
    step, extra = 0, None
    if version:
        module.load_state_dict(_to_torch(state["module"]))
        if optimizer is not None and state["optimizer"] is not None:
            optimizer.load_state_dict(_to_torch(state["optimizer"]))
        if scheduler is not None:
            if state.get("scheduler") is None:
                raise ArgumentError("rally.torch.load_checkpoint: the checkpoint holds no "
                                    "scheduler; pass scheduler= to checkpoint too")
            scheduler.load_state_dict(state["scheduler"])
        if rng:
            if local is None:
                raise ArgumentError("rally.torch.load_checkpoint: the checkpoint holds no random "
                                    "number generators; pass rng=True to checkpoint too")
            _set_rng_state(local)
        step = state["step"] if state["step"] is not None else version
        extra = state["extra"]
    return (step, extra) if with_extra else step


class CursorSampler(torch.utils.data.Sampler):
    """A batch sampler for DataLoader(dataset, batch_sampler=...) in place of
    DistributedSampler: each batch it yields is this rank's share of one
    global batch of ``batch_size`` sample ids (rally.data.Cursor), from where
    the cursor stands to the end of its epoch, split among the ranks of the
    job as it is now (the rank and world size of r, or of the current
    handle, read when iteration starts).

    DataLoader's workers (num_workers > 0) fetch ahead of the training loop,
    so the sampler's own iteration cannot say where training is: iterate
    ``sampler.steps(loader)`` instead of the loader, which moves the cursor
    past a batch as it hands it over.  Keep ``state_dict()`` in the
    checkpoint of the step (``rt.checkpoint(..., extra=...)``) and give it
    back to ``load_state_dict`` after loading; after rally.Resized, iterate
    again: the epoch goes on, split among the new ranks::

        sampler = rt.CursorSampler(len(data), batch_size=64, seed=0)
        loader = DataLoader(data, batch_sampler=sampler, num_workers=2)
        step, extra = rt.load_checkpoint(model, opt, with_extra=True)
        if extra is not None:
            sampler.load_state_dict(extra)
        while sampler.epoch < epochs:
            for x, y in sampler.steps(loader):
                ...  # forward, backward, allreduce the gradients, opt.step()
                step += 1
                rt.checkpoint(model, opt, step, extra=sampler.state_dict())
    """

    def __init__(self, count: int, batch_size: int, seed: int = 0, r: Any = None) -> None:
        self.cursor = Cursor(count, batch_size, seed)
        self._r = r

    @property
    def epoch(self) -> int:
        """The epoch the next step belongs to."""
        return self.cursor.epoch

    def _where(self) -> Tuple[int, int]:
        h = self._r or _current("torch.CursorSampler")
        return h.rank(), h.world_size()

    def __iter__(self):
        rank, world = self._where()
        c, epoch = self.cursor.copy(), self.cursor.epoch
        while c.epoch == epoch:
            yield c.next(rank, world).tolist()

    def __len__(self) -> int:
        """The steps left in the cursor's epoch."""
        left = self.cursor.count - self.cursor.position
        return -(-left // self.cursor.batch)

    def steps(self, loader: Iterable) -> Iterable:
        """loader's batches (a DataLoader over this sampler), the cursor
        moved past each as it is handed over."""
        for batch in loader:
            self.cursor.advance()
            yield batch

    def state_dict(self) -> Dict[str, bytes]:
        return {"cursor": self.cursor.state()}

    def load_state_dict(self, state: Dict[str, bytes]) -> None:
        self.cursor.load(state["cursor"])
