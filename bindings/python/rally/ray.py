"""rally.ray — a rally job on a Ray cluster: each rank a Ray actor that Ray
restarts, the tracker (rally-tracker) started by the driver.

    import rally.ray

    def train(r, data):           # r: this rank's rally handle
        x = data.rows(r)          # this rank's rows of the Ray Dataset (pandas)
        ...                       # allreduce, checkpoint, as under rally-run
        return model

    model = rally.ray.run(train, data=ray_dataset, n_workers=4)

An actor's process that dies (kill -9, OOM) is restarted by Ray
(max_restarts) and its run is retried there (max_task_retries): it joins
the job as the restarted rank, the survivors hand it the checkpoint and the
results since, and the result is the failure-free run's.  A rank that Ray
cannot bring back (its node is gone and no other has room for it, or its
restarts are spent) is lost for good: the job then goes on without it
(on_node_loss="shrink", rally-run's --min-workers) or starts again from
its newest snapshot at n_workers once the cluster has room
(on_node_loss="resume", the default).  docs/ray.md says more.
"""
from __future__ import annotations

import collections
import os
import struct
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import _lib, _tracker
from .dask import _snapshot_settings
from .errors import ConfigError, PeerError

__all__ = ["run", "Input"]


class Input:
    """A Ray Dataset as every rank sees it: its blocks (object references,
    in the dataset's order) and their row counts.  Rank k of a world of w
    takes rows [k·T/w, (k+1)·T/w) of the T rows: the same rows for the same
    rank and world in every attempt and on every node, and a split for any
    world when an elastic job shrinks."""

    def __init__(self, refs: List[Any], lens: List[int]) -> None:
        self.refs, self.lens = list(refs), [int(n) for n in lens]
        self.total = sum(self.lens)

    def bounds(self, rank: int, world: int):
        return rank * self.total // world, (rank + 1) * self.total // world

    def rows(self, r: Any):
        """This rank's rows (a pandas DataFrame, index from 0), for r's rank
        and world now.  Tells rally what it read (rally_set_input: the
        range and a digest of the rows), so a restarted rank that read
        other rows, or a resume over other data, is refused."""
        import numpy as np
        import pandas as pd
        import ray

        from . import digest64

        lo, hi = self.bounds(r.rank(), r.world_size())
        parts, at = [], 0
        for ref, n in zip(self.refs, self.lens):
            if at < hi and at + n > lo:
                parts.append(ray.get(ref).iloc[max(lo - at, 0):min(hi - at, n)])
            at += n
        df = (pd.concat(parts, ignore_index=True) if parts
              else ray.get(self.refs[0]).iloc[0:0].reset_index(drop=True))
        h = pd.util.hash_pandas_object(df, index=False).to_numpy()
        head = np.frombuffer(struct.pack("<4q", r.rank(), r.world_size(), lo, hi), np.uint8)
        fp = digest64(np.concatenate([head, h.view(np.uint8)]))
        r.set_input("ray-dataset:contiguous-rows:%d" % self.total, "%016x" % fp)
        return df


def _input(ds: Any) -> Input:
    """A Ray Dataset's blocks in its order (preserve_order: a dataset read in
    parallel gives its blocks in the same order every time)."""
    import ray
    from ray.data import DataContext

    ctx = DataContext.get_current()
    was = ctx.execution_options.preserve_order
    ctx.execution_options.preserve_order = True
    try:
        refs = ds.to_pandas_refs()
    finally:
        ctx.execution_options.preserve_order = was
    lens = ray.get([_nrows().remote(ref) for ref in refs])
    return Input(refs, lens)


def _len(block: Any) -> int:
    return len(block)


_remote: Dict[str, Any] = {}


def _nrows():
    if "nrows" not in _remote:
        import ray

        _remote["nrows"] = ray.remote(num_cpus=0)(_len)
    return _remote["nrows"]


class _Rank:
    """One rank: run() is the rank's whole job; a restarted actor runs it
    again (Ray retries it) and so rejoins as the restarted rank."""

    def where(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    def run(self, task_id: int, tracker: str, secret: bytes, fn: Callable[..., Any],
            data: Optional[Input], args: tuple, kwargs: dict, settings: Sequence[str]):
        """Returns (the rank at the end, fn's result)."""
        with _tracker.joined(tracker, secret, task_id, settings) as r:
            out = fn(r, data, *args, **kwargs) if data is not None else fn(r, *args, **kwargs)
            return r.rank(), out


def _job_dirs(settings: Sequence[str]) -> List[str]:
    """The job's directories in the snapshot tiers (rally_snapshot_dir and
    rally_snapshot_copy, each /rally_snapshot_job)."""
    kv = dict(x.split("=", 1) for x in settings)
    return [kv[k].rstrip("/") + "/" + kv["rally_snapshot_job"]
            for k in ("rally_snapshot_dir", "rally_snapshot_copy") if k in kv]


def _runs(jobdir: str) -> set:
    """The runs that have snapshots in jobdir (none when it does not exist)."""
    from . import snapshot

    if "://" not in jobdir and not os.path.isdir(jobdir):
        return set()
    return {e.run_id for e in snapshot.list(jobdir)}


def _remove_lost_runs(jobdirs: List[str], before: Dict[str, set]) -> None:
    """After a resumed attempt succeeded (it removed its own snapshots): the
    attempts' before it that this call ran and lost, so that no later job
    resumes them."""
    from . import snapshot

    tool = _lib.tool("rally-snapshot")
    for d in jobdirs:
        for e in snapshot.list(d):
            if e.run_id not in before[d]:
                subprocess.run([tool, "rm", d + "/" + e.name], check=True,
                               stdout=subprocess.DEVNULL)


def _say(msg: str) -> None:
    print("rally.ray: " + msg, file=sys.stderr, flush=True)


class _Lost(Exception):
    """Ranks Ray cannot bring back, in the resume policy: the attempt ends."""


class _Attempt:
    """One attempt of the job: a placement group of n bundles, n actors, a
    tracker; watched until rank 0's result, a failure, or ranks lost."""

    def __init__(self, o: Dict[str, Any], settings: List[str]) -> None:
        import ray
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        self.o, n = o, o["n"]
        self.pg = placement_group([dict(o["bundle"]) for _ in range(n)], strategy="SPREAD")
        self.actors: List[Any] = []
        self.tracker = None
        if not self._ready(o["wait"]):
            ray.util.remove_placement_group(self.pg)
            raise ConfigError("rally.ray.run: the cluster has no room for %d ranks of %s after "
                              "%g s (its free resources: %s); start more nodes or ask for fewer"
                              % (n, o["bundle"], o["wait"], ray.available_resources()), 4)
        self.gone: set = set()
        self.refs: List[Any] = []
        self.last: collections.deque = collections.deque(maxlen=200)
        try:
            nodes = [x for x in ray.nodes() if x["Alive"]]
            loopback = all(x["NodeManagerAddress"].startswith("127.") for x in nodes)
            # a restarted rank registers within the startup timeout of its
            # epoch: the node's loss is known and the actor restarted inside
            # node_wait
            args = ["--control-stdin"]
            if o["min_workers"] is not None:
                args += ["--min-workers", str(o["min_workers"])]
            self.tracker, where, secret = _tracker.start(
                "rally.ray", n, "127.0.0.1" if loopback else None,
                int((o["node_wait"] + 60) * 1000), args, control=True)
            self.reader = threading.Thread(target=_tracker.drain, daemon=True,
                                           args=(self.tracker, self.last, o["echo"]))
            self.reader.start()
            cls = ray.remote(max_restarts=o["max_restarts"], max_task_retries=o["max_restarts"],
                             max_concurrency=2)(_Rank)
            for i in range(n):
                self.actors.append(cls.options(
                    num_cpus=o["bundle"].get("CPU", 0), resources=o["resources"],
                    scheduling_strategy=PlacementGroupSchedulingStrategy(
                        self.pg, placement_group_bundle_index=i)).remote())
            self.node = ray.get([a.where.remote() for a in self.actors], timeout=o["wait"])
            self.refs = [a.run.remote(i, where, secret, o["fn"], o["data"], o["args"], o["kwargs"],
                                      settings) for i, a in enumerate(self.actors)]
        except BaseException:
            self.close()
            raise

    def _ready(self, wait: float) -> bool:
        import ray

        ready, _ = ray.wait([self.pg.ready()], timeout=wait)
        return bool(ready)

    def _give_up(self, ranks: List[int], cause: str) -> None:
        """Tells the tracker these ranks will not come back and stops their
        actors for good (a pending one would join later as a stranger)."""
        import ray

        for i in ranks:
            self.gone.add(i)
            ray.kill(self.actors[i], no_restart=True)
            self.tracker.stdin.write("gone %d %s\n" % (i, cause))
        self.tracker.stdin.flush()

    def watch(self, deadline: Optional[float]) -> Any:
        """Rank 0's result; raises what failed, or _Lost (resume)."""
        import ray
        from ray.exceptions import RayActorError

        o = self.o
        missing: Dict[int, Any] = {}  # rank -> (its ping, since when)
        next_look = 0.0
        while True:
            live = {i: ref for i, ref in enumerate(self.refs) if i not in self.gone}
            done, _ = ray.wait(list(live.values()), num_returns=len(live), timeout=0.2)
            lost: List[int] = []
            for i, ref in live.items():
                if ref not in done:
                    continue
                try:
                    rank, out = ray.get(ref)
                except RayActorError as e:  # restarts spent: lost like a node
                    _say("rank %d's actor died for good: %s" % (i, str(e).splitlines()[0]))
                    lost.append(i)
                    continue
                if rank == 0 and all(x in done or j in self.gone for j, x in live.items()):
                    return out
            if self.tracker.poll() is not None and self.tracker.returncode != 0:
                self.reader.join(5)
                raise PeerError("rally.ray.run: the job failed: %s"
                                % " / ".join(list(self.last)[-5:]), 8)
            if deadline is not None and time.monotonic() > deadline:
                raise ConfigError("rally.ray.run: the job ran past its timeout (%g s)"
                                  % o["timeout"], 4)
            now = time.monotonic()
            if now >= next_look:  # which ranks sat on a node that is gone
                next_look = now + 1.0
                alive = {x["NodeID"] for x in ray.nodes() if x["Alive"]}
                for i, a in enumerate(self.actors):
                    if i not in self.gone and i not in missing and self.node[i] not in alive:
                        missing[i] = (a.where.remote(), now)
            for i, (ping, since) in list(missing.items()):
                back, _ = ray.wait([ping], timeout=0)
                if back:  # Ray restarted it elsewhere: it recovers in place
                    self.node[i] = ray.get(ping)
                    del missing[i]
                elif now - since > o["node_wait"]:
                    del missing[i]
                    lost.append(i)
            if lost:
                self._lost(sorted(lost))

    def _lost(self, ranks: List[int]) -> None:
        o = self.o
        names = ("ranks " if len(ranks) > 1 else "rank ") + ", ".join(str(i) for i in ranks)
        if o["policy"] == "shrink":
            left = o["n"] - len(self.gone) - len(ranks)
            _say("%s lost for good (Ray brought %s back nowhere in %g s): going on with %d ranks"
                 % (names, "them" if len(ranks) > 1 else "it", o["node_wait"], left))
            self._give_up(ranks, "its Ray actor cannot be restarted (node lost)")
            return
        self._give_up(ranks, "its Ray actor cannot be restarted (node lost); "
                      "resuming from the newest snapshot")
        raise _Lost(names)

    def close(self) -> None:
        """Ends the attempt: the ranks' own ends first (a failed run that
        nobody reads is reported by Ray as an unhandled error), then the
        actors, the tracker, the placement group."""
        import ray

        live = [ref for i, ref in enumerate(self.refs) if i not in self.gone]
        done, _ = ray.wait(live, num_returns=len(live), timeout=5) if live else ([], [])
        for ref in done:
            try:
                ray.get(ref)
            except Exception:  # noqa: BLE001 - said already, or the job's own failure
                pass
        for a in self.actors:
            ray.kill(a, no_restart=True)
        if self.tracker is not None:
            _tracker.stop(self.tracker)
            self.reader.join(5)
        ray.util.remove_placement_group(self.pg)


def run(fn: Callable[..., Any], *args: Any, n_workers: int, data: Any = None,
        settings: Sequence[str] = (), on_node_loss: str = "resume", min_workers: int = 1,
        max_restarts: int = 3, node_wait: float = 30.0, wait: float = 60.0,
        resume_wait: float = 600.0, max_resumes: int = 3, num_cpus: float = 1,
        resources: Optional[Dict[str, float]] = None, timeout: Optional[float] = None,
        echo: bool = False, snapshot_dir: Optional[str] = None, snapshot_every: int = 0,
        snapshot_every_ms: int = 0, snapshot_copy: Optional[str] = None,
        snapshot_keep: Optional[int] = None, snapshot_required: bool = False,
        snapshot_job: Optional[str] = None, resume: Optional[str] = None, **kwargs: Any) -> Any:
    """Runs ``fn(r, *args, **kwargs)`` as a rally job of ``n_workers`` ranks,
    each a Ray actor of ``num_cpus`` CPUs (and ``resources``) in a placement
    group spread over the nodes, on the Ray cluster ray.init connected to;
    returns rank 0's result.  ``r`` is the rank's rally handle.

    data: a Ray Dataset; fn is called as ``fn(r, data, *args, **kwargs)``
    with an Input whose ``rows(r)`` gives the rank's rows (docs/ray.md).
    settings: ``rally_key=value`` settings for every rank.

    A cluster without room for the ranks after ``wait`` seconds is a
    ConfigError.  An actor's process that dies is restarted by Ray, up to
    ``max_restarts`` times a rank, and recovers in place.  A rank on a node
    that died and that Ray has not started again ``node_wait`` seconds
    later, or whose restarts are spent, is lost for good:

    - on_node_loss="resume": the job stops and starts again from its newest
      snapshot at n_workers ranks once the cluster has room for them (up to
      ``resume_wait`` seconds; at most ``max_resumes`` times).  It needs
      snapshot_dir on storage every node reaches.
    - on_node_loss="shrink": the job goes on without the rank, from the
      newest checkpoint, renumbered, while ``min_workers`` are left; every
      survivor's pending call raises rally.Resized, and fn reads its rows
      again for its new rank (rally-run's --min-workers, docs/recovery.md).

    An exception in fn is raised here; ``timeout`` bounds each attempt.
    echo: copy the tracker's lines to standard error (``run.last_lines``
    keeps the last 200 either way).  The snapshot arguments are
    rally.dask.run's (rally-run's flags of the same names)."""
    import ray

    n = int(n_workers)
    if n < 1:
        raise ConfigError("rally.ray.run: n_workers must be at least 1, not %d" % n, 4)
    if on_node_loss not in ("resume", "shrink"):
        raise ConfigError("rally.ray.run: on_node_loss is \"resume\" or \"shrink\", not %r"
                          % (on_node_loss,), 4)
    shrink = on_node_loss == "shrink"
    if shrink and not 1 <= min_workers < n:
        raise ConfigError("rally.ray.run: min_workers must be from 1 to n_workers - 1 (%d), "
                          "not %d" % (n - 1, min_workers), 4)
    settings = list(settings) + _snapshot_settings(
        fn, snapshot_dir, snapshot_every, snapshot_every_ms, snapshot_copy, snapshot_keep,
        snapshot_required, snapshot_job, resume, who="rally.ray.run")
    if shrink:
        settings.append("rally_elastic=1")
    bundle = {"CPU": float(num_cpus)}
    bundle.update(resources or {})
    o = {"n": n, "fn": fn, "args": args, "kwargs": kwargs, "policy": on_node_loss,
         "min_workers": min_workers if shrink else None, "max_restarts": int(max_restarts),
         "node_wait": float(node_wait), "wait": float(wait), "echo": echo, "timeout": timeout,
         "bundle": bundle, "resources": resources or {},
         "data": _input(data) if data is not None else None}
    jobdirs = _job_dirs(settings) if snapshot_dir is not None else []
    before = {d: _runs(d) for d in jobdirs}
    resumes = 0
    while True:
        deadline = None if timeout is None else time.monotonic() + timeout
        att = _Attempt(o, settings)
        run.last_lines = att.last
        try:
            out = att.watch(deadline)
            if resumes:
                _remove_lost_runs(jobdirs, before)
            return out
        except _Lost as e:
            if snapshot_dir is None:
                raise PeerError("rally.ray.run: %s lost for good (its node is gone) and no "
                                "snapshot_dir to resume from (or on_node_loss=\"shrink\")"
                                % e, 8) from None
            if resumes == max_resumes:
                raise PeerError("rally.ray.run: %s lost for good after %d resumes"
                                % (e, resumes), 8) from None
            resumes += 1
            _say("%s lost for good: resuming from the newest snapshot at %d ranks once the "
                 "cluster has room (up to %g s)" % (e, n, resume_wait))
        finally:
            att.close()
        settings = [s for s in settings if not s.startswith("rally_resume=")]
        settings.append("rally_resume=latest")
        o["wait"] = float(resume_wait)
