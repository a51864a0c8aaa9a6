"""rally.dask — a rally job as tasks on a dask.distributed cluster: one rally
worker per Dask worker, the tracker (rally-tracker) started by the client.

    import rally.dask

    def train(r, parts):          # r: this rank's rally handle; parts: its partitions
        ...                       # allreduce, checkpoint, as under rally-run
        return model

    model = rally.dask.run(client, train, data=dask_array, n_workers=4)

When a Dask worker process dies (kill -9; its nanny starts a new one), the
rank it ran is submitted again, pinned to a Dask worker that runs no rank,
and rejoins the job as the restarted rank: the survivors hand it the
checkpoint and the results since, as under rally-run, and the result is the
failure-free run's.  Dask's own rerun is not used: a task restricted to the
dead worker's address would wait for that address forever, and a loose one
could queue behind a live rank on a busy worker, which waits for it.
"""
from __future__ import annotations

import asyncio
import collections
import os
import re
import threading
import time
import uuid
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import _tracker
from .errors import ConfigError, PeerError

__all__ = ["run", "partitions"]


def partitions(collection: Any) -> List[Any]:
    """The partitions of a Dask collection (a dask.array, a dask.dataframe,
    a dask.bag, or a list of Delayed), as a flat list of Delayed in the
    collection's order."""
    if isinstance(collection, (list, tuple)):
        return list(collection)
    d = collection.to_delayed()
    return list(d.ravel()) if hasattr(d, "ravel") else list(d)


def _assign(nparts: int, n: int) -> List[List[int]]:
    """Partition i goes to rank i * n // nparts: contiguous blocks in the
    collection's order, the same for the same collection and N whatever the
    placement, so a run gives the same bits as the last one."""
    out: List[List[int]] = [[] for _ in range(n)]
    for i in range(nparts):
        out[i * n // nparts].append(i)
    return out


def _task(rank: int, tracker: str, secret: bytes, fn: Callable[..., Any], parts: Optional[list],
          args: tuple, kwargs: dict, settings: Sequence[str]) -> Any:
    """One rank, inside a Dask worker."""
    with _tracker.joined(tracker, secret, rank, settings) as r:
        return fn(r, parts, *args, **kwargs) if parts is not None else fn(r, *args, **kwargs)


def _where(path: str) -> str:
    """A snapshot place as every Dask worker must name it: s3://... as it is,
    a directory absolute."""
    return path if "://" in path else os.path.abspath(path)


def _snapshot_settings(fn, snapshot_dir, every, every_ms, copy, keep, required, job, resume,
                       who="rally.dask.run"):
    """The snapshot arguments of who (rally.dask.run, rally.ray.run) as
    rally_key=value settings."""
    if snapshot_dir is None:
        if copy or every or every_ms or resume == "latest":
            raise ConfigError(who + ": snapshot_every, snapshot_every_ms, snapshot_copy "
                              "and resume=\"latest\" need snapshot_dir", 4)
        return ["rally_resume=" + _where(resume)] if resume else []
    name = job or getattr(fn, "__name__", "job")  # the default: fn's, in the job name's bytes
    out = ["rally_snapshot_dir=" + _where(snapshot_dir),
           "rally_snapshot_job=" + re.sub(r"[^A-Za-z0-9._-]", "_", name)[:64],
           "rally_snapshot_every=%d" % int(every), "rally_snapshot_every_ms=%d" % int(every_ms),
           "rally_snapshot_required=%d" % bool(required)]
    if copy:
        out.append("rally_snapshot_copy=" + _where(copy))
    if keep is not None:
        out.append("rally_snapshot_keep=%d" % int(keep))
    if resume:
        out.append("rally_resume=" + (resume if resume == "latest" else _where(resume)))
    return out


def run(client: Any, fn: Callable[..., Any], *args: Any, n_workers: Optional[int] = None,
        data: Any = None, settings: Sequence[str] = (), wait_for_workers: float = 30.0,
        timeout: Optional[float] = None, restart_wait: float = 120.0, echo: bool = False,
        snapshot_dir: Optional[str] = None, snapshot_every: int = 0, snapshot_every_ms: int = 0,
        snapshot_copy: Optional[str] = None, snapshot_keep: Optional[int] = None,
        snapshot_required: bool = False, snapshot_job: Optional[str] = None,
        resume: Optional[str] = None, **kwargs: Any) -> Any:
    """Runs ``fn(r, *args, **kwargs)`` as a rally job of ``n_workers`` ranks
    (default: every Dask worker), one per Dask worker, and returns rank 0's
    result.  ``r`` is the rank's rally handle (rally.init's, so the
    module-level calls work too).

    data: a Dask collection (or a list of Delayed); its partitions are split
    into contiguous blocks in order, rank r taking block r, and fn is called
    as ``fn(r, parts, *args, **kwargs)`` with its block's values (a list).
    settings: ``rally_key=value`` settings for every rank.

    A cluster with fewer than n_workers workers after ``wait_for_workers``
    seconds is a ConfigError saying how many it has.  A rank whose Dask
    worker dies is started again on a worker that runs no rank (the dead
    one's replacement), waiting up to ``restart_wait`` seconds for one.  An
    exception in a rank, or a job the tracker gives up on, is raised here
    and the other ranks are cancelled; ``timeout`` bounds the whole job.
    echo: copy the tracker's lines (its log, the ranks' tracker_print) to
    standard error; ``run.last_lines`` keeps the last 200 either way.

    Durable snapshots, as rally-run's flags of the same names
    (docs/config.md): snapshot_dir (a directory every Dask worker reaches,
    or s3://...) with snapshot_every (every K-th checkpoint version) and/or
    snapshot_every_ms; snapshot_copy (the second tier), snapshot_keep,
    snapshot_required; snapshot_job names the job's directory (default:
    fn's name).  resume="latest" (or a snapshot's path) continues from the
    newest complete snapshot, after a job that failed for good (a Dask
    worker that never came back, the client killed).  The job owns its run:
    a fresh start over older snapshots of the same job is refused, and a
    job that succeeds removes its own snapshots."""
    from distributed import wait

    if n_workers is None:
        n_workers = len(client.scheduler_info()["workers"])
    n = int(n_workers)
    if n < 1:
        raise ConfigError("rally.dask.run: n_workers must be at least 1, not %d" % n, 4)
    try:
        client.wait_for_workers(n, timeout=wait_for_workers)
    except Exception:  # noqa: BLE001 - distributed raises TimeoutError of its own
        have = len(client.scheduler_info()["workers"])
        raise ConfigError("rally.dask.run: the cluster has %d worker%s, the job needs %d "
                          "(waited %g s); start more or ask for fewer"
                          % (have, "" if have == 1 else "s", n, wait_for_workers), 4) from None
    settings = list(settings) + _snapshot_settings(
        fn, snapshot_dir, snapshot_every, snapshot_every_ms, snapshot_copy, snapshot_keep,
        snapshot_required, snapshot_job, resume)
    blocks: List[Optional[list]] = [None] * n
    if data is not None:
        futs = client.compute(partitions(data))
        blocks = [[futs[i] for i in b] for b in _assign(len(futs), n)]

    workers = sorted(client.scheduler_info()["workers"])
    loopback = all(w.startswith(("tcp://127.", "inproc://")) for w in workers)
    # A restarted rank must be able to register within the startup timeout
    # of its epoch: a Dask worker's restart takes seconds.
    tracker, where, secret = _tracker.start("rally.dask", n, "127.0.0.1" if loopback else None,
                                            int(restart_wait * 1000))
    last: collections.deque = collections.deque(maxlen=200)
    run.last_lines = last
    reader = threading.Thread(target=_tracker.drain, args=(tracker, last, echo), daemon=True)
    reader.start()
    job = uuid.uuid4().hex[:8]
    placed: Dict[int, str] = {}  # rank -> Dask worker address
    futures: Dict[int, Any] = {}
    starts = [0] * n

    def submit(rank: int, worker: str) -> None:
        placed[rank] = worker
        futures[rank] = client.submit(
            _task, rank, where, secret, fn, blocks[rank], args, kwargs, list(settings),
            key="rally-%s-%d-%d" % (job, rank, starts[rank]), workers=[worker],
            allow_other_workers=False, pure=False)
        starts[rank] += 1

    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        for rank in range(n):
            submit(rank, workers[rank])
        while True:
            try:
                done, _ = wait(list(futures.values()), timeout=0.2, return_when="FIRST_COMPLETED")
            except (TimeoutError, asyncio.TimeoutError):  # nothing ended in 0.2 s
                done = ()
            for f in done:
                if f.status == "error":
                    raise f.exception()
            if all(f.status == "finished" for f in futures.values()):
                return futures[0].result()
            if tracker.poll() is not None and tracker.returncode != 0:
                reader.join(5)
                raise PeerError("rally.dask.run: the job failed: %s"
                                % " / ".join(list(last)[-5:]), 8)
            if deadline is not None and time.monotonic() > deadline:
                raise ConfigError("rally.dask.run: the job ran past its timeout (%g s)" % timeout, 4)
            alive = set(client.scheduler_info()["workers"])
            for rank in range(n):
                if placed[rank] in alive or futures[rank].status == "finished":
                    continue
                futures[rank].cancel()
                free = sorted(alive - set(placed.values()))
                until = time.monotonic() + restart_wait
                while not free:
                    if time.monotonic() > until:
                        raise ConfigError("rally.dask.run: rank %d's Dask worker died and no "
                                          "free worker came in %g s" % (rank, restart_wait), 4)
                    time.sleep(0.1)
                    alive = set(client.scheduler_info()["workers"])
                    free = sorted(alive - set(placed.values()))
                submit(rank, free[0])
    finally:
        for f in futures.values():
            f.cancel()
        _tracker.stop(tracker)
        reader.join(5)
