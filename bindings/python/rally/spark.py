"""rally.spark — a rally job as one barrier stage of a Spark job: one rank
per barrier task, the tracker (rally-tracker) started by the driver.

    import rally.spark

    def train(r, rows):           # r: this rank's rally handle; rows: its rows
        ...                       # allreduce, checkpoint, as under rally-run
        return model

    model = rally.spark.run(spark, train, data=df, n_workers=4,
                            snapshot_dir="/shared/snaps", snapshot_every=5)

Each barrier task runs its rank's worker as a process of its own and
watches it.  A worker that dies (kill -9, the OOM killer) is started again
in place by its task, and rally recovers it from the survivors: no task
fails, no stage is retried, the result is the failure-free run's.  When an
executor is lost, Spark fails the barrier stage and runs it again; every
rank of the new attempt resumes from the newest complete snapshot in the
shared second tier (``snapshot_dir``), and the result is again the
failure-free run's, bit for bit.  A job that succeeds removes its
snapshots.

A program (``rally-gbdt`` and the like) runs the same way: give its argv,
with ``{data}`` where its input file goes; the rows are written, each
rank's at the byte range rally's range partitioning gives that rank, to one
file in ``data_dir`` (a directory every executor reaches).

The stage is a shuffle-map stage (its output is shuffled to one partition
that the driver collects): Spark retries a failed barrier shuffle-map stage,
while it aborts a failed barrier result stage.
"""
from __future__ import annotations

import collections
import hashlib
import hmac
import os
import pickle
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from . import _lib, _tracker
from .errors import ConfigError, PeerError

__all__ = ["run", "slots", "GBDTClassifier", "GBDTModel"]


# --- the driver ---------------------------------------------------------------

def _context(spark: Any):
    """The SparkContext of a SparkSession or a SparkContext."""
    return getattr(spark, "sparkContext", spark)


def slots(spark: Any) -> int:
    """How many tasks the cluster runs at once now (what a barrier stage of
    N tasks needs N of)."""
    jsc = _context(spark)._jsc.sc()
    return int(jsc.maxNumConcurrentTasks(jsc.resourceProfileManager().defaultResourceProfile()))


def _wait_for_slots(spark: Any, n: int, wait: float) -> None:
    """Spark itself, short of slots for a barrier stage, retries its check
    for minutes (spark.scheduler.barrier.maxConcurrentTasksCheck.*): a
    clear error after ``wait`` seconds instead."""
    until = time.monotonic() + wait
    have = slots(spark)
    while have < n and time.monotonic() < until:
        time.sleep(0.2)
        have = slots(spark)
    if have < n:
        raise ConfigError("rally.spark.run: the cluster runs %d task%s at once, the job needs %d "
                          "(one barrier task a rank; waited %g s): add executors or cores, or "
                          "ask for fewer workers" % (have, "" if have == 1 else "s", n, wait), 4)


def _identity(what: Any, n: int, args: tuple, kwargs: dict, settings: Sequence[str],
              name: Optional[str]) -> str:
    """The job's directory name under the snapshot root: its name and a hash
    of what makes it this job (the function or the program's argv, the
    arguments, the settings, N).  A job with other parameters gets another
    directory, so it can never resume this one's snapshots; the same job
    run again finds them and resumes."""
    if callable(what):
        base = name or getattr(what, "__name__", "job")
        ident = [getattr(what, "__module__", ""), getattr(what, "__qualname__", base)]
    else:
        base = name or os.path.basename(str(what[0]))
        ident = list(map(str, what))
    try:
        blob = pickle.dumps((ident, n, args, sorted(kwargs.items()), list(settings)), protocol=4)
    except Exception:  # noqa: BLE001 - an argument that does not pickle: its repr
        blob = repr((ident, n, args, sorted(kwargs.items()), list(settings))).encode()
    base = re.sub(r"[^A-Za-z0-9._-]", "_", base)[:40]
    return "%s-%s" % (base, hashlib.sha256(blob).hexdigest()[:16])


class _Keeper:
    """The driver's service to the tasks: one rally-tracker for each attempt
    of the stage.  A task asks with the job's token and the attempt's
    generation (the smallest task attempt id of the attempt, which every
    task of it learns from allGather and which grows with every attempt);
    the first ask of a newer generation ends the last tracker and starts a
    new one.  A task whose worker failed for good says so here, so that the
    driver cancels the job instead of letting Spark retry it."""

    def __init__(self, n: int, host: str, startup_ms: int, echo: bool):
        self.n, self.startup_ms, self.echo = n, startup_ms, echo
        self.bind = host if host.startswith("127.") or host == "localhost" else None
        self.token = uuid.uuid4().hex
        self.lock = threading.Lock()
        self.gen, self.tracker, self.answer = -1, None, b""
        self.generations = 0
        self.fatal: Optional[str] = None
        self.last: collections.deque = collections.deque(maxlen=200)
        self.sock = socket.create_server((host, 0))
        self.address = "%s:%d" % (host, self.sock.getsockname()[1])
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with c:
                try:
                    c.settimeout(10)
                    line = c.makefile("rb").readline().decode(errors="replace").rstrip("\n")
                    c.sendall(self._answer(line))
                except (OSError, ConfigError) as e:
                    self.last.append("rally.spark: keeper: %s" % e)

    def _answer(self, line: str) -> bytes:
        kind, token, gen, rest = (line.split(" ", 3) + ["", "", "", ""])[:4]
        if not hmac.compare_digest(token.encode(), self.token.encode()):
            return b"refused\n"
        if kind == "log":  # a worker's last lines, as hex: one line on the wire
            for line in bytes.fromhex(rest).decode(errors="replace").splitlines():
                self.last.append(line)
                if self.echo:
                    print(line, file=sys.stderr, flush=True)
            return b"ok\n"
        if kind == "fatal":
            with self.lock:
                if int(gen) >= self.gen and self.fatal is None:
                    self.fatal = rest
            return b"ok\n"
        if kind != "tracker":
            return b"refused\n"
        with self.lock:
            g = int(gen)
            if self.fatal is not None:  # no attempt after a rank failed for good
                return b"failed\n"
            if g < self.gen:
                return b"stale\n"
            if g > self.gen:
                self._stop_tracker()
                self.tracker, where, secret = _tracker.start("rally.spark", self.n, self.bind,
                                                             self.startup_ms)
                threading.Thread(target=_tracker.drain, args=(self.tracker, self.last, self.echo),
                                 daemon=True).start()
                self.gen, self.generations = g, self.generations + 1
                self.answer = ("%s %s\n" % (where, secret.hex())).encode()
            return self.answer

    def _stop_tracker(self) -> None:
        p, self.tracker = self.tracker, None
        if p is not None:
            _tracker.stop(p)

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept (close alone does not)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(10)
        with self.lock:
            self._stop_tracker()


def _ask(keeper: str, line: str) -> str:
    host, _, port = keeper.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=30) as c:
        c.sendall(line.encode() + b"\n")
        return c.makefile("rb").readline().decode().strip()


def _stage_attempts(sc, group: str) -> int:
    """The most attempts any stage of the job group's jobs took (Spark's
    own count: 1 when no stage was retried)."""
    st, most = sc.statusTracker(), 0
    for j in st.getJobIdsForGroup(group):
        info = st.getJobInfo(j)
        for s in (info.stageIds if info else ()):
            si = st.getStageInfo(s)
            if si is not None:
                most = max(most, si.currentAttemptId + 1)
    return most


def _rows_rdd(data: Any, n: int):
    """data's RDD with exactly n partitions, partition r holding rank r's
    rows, the same rows in the same order in every attempt given the same
    input: n partitions as they are; otherwise partition i's rows go whole
    to rank i * n // parts (contiguous blocks, in order) through a shuffle,
    keyed by (partition, row) so the task can put them back in order."""
    rdd = data.rdd if hasattr(data, "rdd") else data
    parts = rdd.getNumPartitions()
    if parts == n:
        return rdd, False

    def key(i, it):
        for j, row in enumerate(it):
            yield (i, j), row
    return rdd.mapPartitionsWithIndex(key).partitionBy(n, lambda k: k[0] * n // parts), True


def run(spark: Any, what: Union[Callable[..., Any], Sequence[str]], *args: Any,
        data: Any = None, n_workers: Optional[int] = None, settings: Sequence[str] = (),
        snapshot_dir: Optional[str] = None, snapshot_every: int = 0, snapshot_every_ms: int = 0,
        snapshot_keep: Optional[int] = None, local_dir: Optional[str] = None,
        data_dir: Optional[str] = None, job: Optional[str] = None,
        sort_rows: bool = True, wait_for_slots: float = 60.0, restart_limit: int = 3,
        restart_wait: float = 60.0,
        timeout: Optional[float] = None, echo: bool = False, **kwargs: Any) -> Any:
    """Runs a rally job of ``n_workers`` ranks (default: data's partitions)
    as one barrier stage and returns rank 0's result.

    what: a function, called as ``fn(r, rows, *args, **kwargs)`` in each
    rank's worker process, with ``r`` its rally handle and ``rows`` its rows
    (a list); or a program's argv, where ``{data}`` is replaced by the file
    the rows were written to as CSV (the row's values, a vector's spread
    out) and ``{rank}`` by the rank; rank 0's standard output is returned.
    data: a DataFrame or an RDD.  Rank r takes partition r when there are
    n_workers partitions; otherwise contiguous blocks of partitions, in
    order (a shuffle).  Each rank's rows are then sorted by their pickled
    bytes (sort_rows; False keeps the source's order), so that a partition
    read back in another order (a shuffle before the stage, read again by a
    retried stage) gives the same bits.  The rows must be the same in every
    attempt (a source read again, or a DataFrame's repartition, gives the
    same rows; a random split does not), and rally checks it: each rank's
    input fingerprint is kept in its snapshots and a resume over other rows
    is refused.
    settings: ``rally_key=value`` settings for every rank.

    snapshot_dir: a directory every executor reaches, the second tier of
    durable snapshots (docs/snapshot-format.md, "Two tiers"); the first is
    ``local_dir`` on each executor (default: its temporary directory).
    snapshot_every (every K-th checkpoint version) and/or snapshot_every_ms
    say how often; snapshot_keep how many stay.  Every attempt of the stage
    resumes from the newest complete snapshot of this job when there is
    one; the job's directory is named after ``job`` (default: the function's
    or program's name) and a hash of its parameters, so a job with other
    parameters never resumes it.  After success the snapshots are removed.

    wait_for_slots: seconds to wait for the cluster to run n_workers tasks
    at once, then a ConfigError.  restart_limit: how often a task restarts
    its worker in place; restart_wait: how long the tracker waits for a
    restarted worker.  timeout bounds the whole job.  echo: copy the
    tracker's lines to standard error; ``run.last_lines`` keeps the last
    200 either way, and ``run.info`` says how the job went:
    stage_attempts (Spark's count), trackers (one per attempt that started
    its workers), restarts (worker restarts in place, per rank)."""
    sc = _context(spark)
    if data is None and n_workers is None:
        raise ConfigError("rally.spark.run: give data or n_workers", 4)
    n = int(n_workers if n_workers is not None else
            (data.rdd if hasattr(data, "rdd") else data).getNumPartitions())
    if n < 1:
        raise ConfigError("rally.spark.run: n_workers must be at least 1, not %d" % n, 4)
    program = not callable(what)
    if program and isinstance(what, str):
        raise ConfigError("rally.spark.run: a program is its argv, a list of strings", 4)
    data_dir = data_dir or snapshot_dir
    if program and data is not None and data_dir is None:
        raise ConfigError("rally.spark.run: a program reads its rows from a file in data_dir "
                          "(or snapshot_dir), a directory every executor reaches", 4)
    _wait_for_slots(spark, n, wait_for_slots)

    name = _identity(what, n, args, kwargs, settings, job)
    common = list(settings)
    if snapshot_dir is not None:
        common += ["rally_snapshot_copy=" + os.path.abspath(snapshot_dir),
                   "rally_snapshot_local=1",
                   "rally_snapshot_job=" + name,
                   "rally_snapshot_every=%d" % int(snapshot_every),
                   "rally_snapshot_every_ms=%d" % int(snapshot_every_ms),
                   "rally_resume=latest-if-any"]
        if snapshot_keep is not None:
            common.append("rally_snapshot_keep=%d" % int(snapshot_keep))
    elif snapshot_every or snapshot_every_ms:
        raise ConfigError("rally.spark.run: snapshot_every and snapshot_every_ms need "
                          "snapshot_dir", 4)
    datafile = None
    if program and data is not None:
        datafile = os.path.join(os.path.abspath(data_dir),
                                "%s.%s.csv" % (name, uuid.uuid4().hex[:8]))

    host = sc.getConf().get("spark.driver.host") or socket.gethostname()
    keeper = _Keeper(n, host, int(restart_wait * 1000), echo)
    run.last_lines = keeper.last
    spec = {"keeper": keeper.address, "token": keeper.token, "n": n, "settings": common,
            "program": list(map(str, what)) if program else None,
            "fn": None if program else what, "args": args, "kwargs": kwargs,
            "local_dir": local_dir, "name": name, "datafile": datafile,
            "restart_limit": int(restart_limit), "sort_rows": bool(sort_rows)}
    if data is not None:
        rdd, keyed = _rows_rdd(data, n)
    else:
        rdd, keyed = sc.parallelize(range(n), n), False
        spec["no_rows"] = True
    spec["keyed"] = keyed
    staged = rdd.barrier().mapPartitions(lambda it: _task(spec, it))
    group = "rally-spark-" + uuid.uuid4().hex[:12]
    box: Dict[str, Any] = {}

    def collect() -> None:
        sc.setJobGroup(group, "rally job %s" % name, interruptOnCancel=True)
        try:
            box["out"] = staged.partitionBy(1).collect()
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = e

    from pyspark import InheritableThread

    t = InheritableThread(target=collect, daemon=True)
    deadline = None if timeout is None else time.monotonic() + timeout
    run.info = {}
    try:
        t.start()
        while t.is_alive():
            t.join(0.2)
            if keeper.fatal is not None:
                sc.cancelJobGroup(group)
                t.join(60)
                raise PeerError("rally.spark.run: the job failed: %s" % keeper.fatal, 8)
            if deadline is not None and time.monotonic() > deadline:
                sc.cancelJobGroup(group)
                t.join(60)
                raise ConfigError("rally.spark.run: the job ran past its timeout (%g s)"
                                  % timeout, 4)
        if keeper.fatal is not None:
            raise PeerError("rally.spark.run: the job failed: %s" % keeper.fatal, 8)
        if "error" in box:
            raise PeerError("rally.spark.run: the Spark job failed: %s / %s"
                            % (str(box["error"]).splitlines()[0][:400],
                               " / ".join(list(keeper.last)[-5:])), 8)
        results = dict(box["out"])
        if snapshot_dir is not None:  # every attempt's snapshots are this job's
            shutil.rmtree(os.path.join(os.path.abspath(snapshot_dir), name), ignore_errors=True)
        run.info = {"stage_attempts": _stage_attempts(sc, group),
                    "trackers": keeper.generations,
                    "restarts": {r: results[r][0] for r in sorted(results)},
                    "job": name}
        return pickle.loads(results[0][1])
    finally:
        keeper.close()
        if datafile is not None and os.path.exists(datafile):
            os.unlink(datafile)


run.last_lines = collections.deque()
run.info = {}


# --- the tasks ----------------------------------------------------------------

def _jvm_of(pid: int) -> Optional[int]:
    """The executor JVM this Python worker belongs to: the nearest ancestor
    named java."""
    while pid > 1:
        try:
            with open("/proc/%d/comm" % pid) as f:
                if f.read().strip() == "java":
                    return pid
            with open("/proc/%d/stat" % pid) as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return None
    return None


def _alive(pid: Optional[int]) -> bool:
    if pid is None:
        return True
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _die_with_parent() -> None:
    """In the worker before exec: SIGKILL when the task's process ends, as
    it does when Spark kills a task of a failed stage."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _write_shard(ctx, path: str, rank: int, n: int, body: bytes) -> None:
    """Every rank's rows into one file, rank r's at the byte range rally's
    range partitioning gives rank r of n (docs/data.md): each part is padded
    to the largest with a line of spaces, which is no record, so the file
    is n parts of P bytes and rank r's range is [r P, (r + 1) P)."""
    size = max(int(s) for s in ctx.allGather(str(len(body))))
    if size == 0:
        size = 1
    pad = size - len(body)
    if pad:
        body += b" " * (pad - 1) + b"\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, body, rank * size)
        os.fsync(fd)
    finally:
        os.close(fd)
    ctx.barrier()  # every part is there before any rank reads


def _task(spec: dict, it) -> Any:
    """One rank, inside a barrier task: its rows to a file, its worker
    started and watched (restarted in place when a signal kills it), its
    result or its failure handed back."""
    from pyspark import BarrierTaskContext

    ctx = BarrierTaskContext.get()
    rank, n = ctx.partitionId(), spec["n"]
    gen = min(int(x) for x in ctx.allGather(str(ctx.taskAttemptId())))
    rows = [] if spec.get("no_rows") else list(it)
    if spec["keyed"]:  # the source's order: partition, then row
        rows = [row for _, row in sorted(rows, key=lambda kv: kv[0])]
    if spec["sort_rows"]:  # a shuffle before the stage gives its rows in any order
        rows.sort(key=lambda row: pickle.dumps(row, protocol=4))
    work = tempfile.mkdtemp(prefix="rally-spark-%d-" % rank)
    try:
        if spec["program"] is not None:
            argv = list(spec["program"])
            if spec["datafile"]:
                _write_shard(ctx, spec["datafile"], rank, n, _csv_values(rows))
            argv = [a.replace("{data}", spec["datafile"] or "").replace("{rank}", str(rank))
                    for a in argv]
        else:
            import pyspark.cloudpickle as cloudpickle

            payload = os.path.join(work, "payload")
            with open(payload, "wb") as f:
                cloudpickle.dump((spec["fn"], None if spec.get("no_rows") else rows,
                                  spec["args"], spec["kwargs"]), f)
            argv = [sys.executable, "-c", "import rally.spark as s; s._worker_main()", payload,
                    os.path.join(work, "result")]
        answer = _ask(spec["keeper"], "tracker %s %d" % (spec["token"], gen))
        if answer in ("stale", "refused", "failed", ""):
            raise RuntimeError("rally.spark: rank %d: the driver answered %r for attempt %d"
                               % (rank, answer, gen))
        where, secret = answer.split(" ")
        secret_file = os.path.join(work, "secret")
        fd = os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, bytes.fromhex(secret))
        os.close(fd)
        local = os.path.join(spec["local_dir"] or tempfile.gettempdir(),
                             "rally-spark-snap-%s-%d" % (spec["name"], rank))
        if any(s.startswith("rally_snapshot_copy=") for s in spec["settings"]):
            os.makedirs(os.path.join(local, spec["name"]), exist_ok=True)
        rally_args = ["rally_tracker=" + where, "rally_secret_file=" + secret_file,
                      "rally_task_id=%d" % rank] + list(spec["settings"])
        if any(s.startswith("rally_snapshot_copy=") for s in spec["settings"]):
            rally_args.append("rally_snapshot_dir=" + local)
        restarts, out = _watch(spec, rank, gen, argv + rally_args, work)
        if any(s.startswith("rally_snapshot_copy=") for s in spec["settings"]):
            shutil.rmtree(local, ignore_errors=True)  # the job succeeded: its own tier goes
        if spec["program"] is None:
            with open(os.path.join(work, "result"), "rb") as f:
                out = f.read()
        else:
            out = pickle.dumps(out.decode(errors="replace"))
        return [(rank, (restarts, out if rank == 0 else b""))]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _watch(spec: dict, rank: int, gen: int, argv: List[str], work: str):
    """Runs the rank's worker until it exits, starting it again in place
    when a signal killed it (up to restart_limit times).  A worker that
    exits non-zero failed for good: the driver is told, and the task fails.
    The task's own end (Spark killing it) takes the worker along."""
    jvm = _jvm_of(os.getppid())
    restarts = 0
    log = os.path.join(work, "worker.log")
    while True:
        with open(log, "wb") as err, open(os.path.join(work, "stdout"), "wb") as out:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                 preexec_fn=_die_with_parent)
            while p.poll() is None:
                if not _alive(jvm):  # the executor is gone: so is this rank
                    p.kill()
                    p.wait()
                    os._exit(1)
                time.sleep(0.05)
        if p.returncode == 0:
            _tell(spec, gen, rank, log)
            with open(os.path.join(work, "stdout"), "rb") as f:
                return restarts, f.read()
        if p.returncode < 0 and restarts < spec["restart_limit"]:
            restarts += 1
            with open(log, "ab") as err:
                err.write(b"rally.spark: rank %d's worker was killed by signal %d; restarting "
                          b"it in place (restart %d of %d)\n"
                          % (rank, -p.returncode, restarts, spec["restart_limit"]))
            _tell(spec, gen, rank, log)
            continue
        _tell(spec, gen, rank, log)
        with open(log, "rb") as f:
            tail = f.read()[-2000:].decode(errors="replace").strip().splitlines()[-3:]
        why = ("killed by signal %d (restarted %d times)" % (-p.returncode, restarts)
               if p.returncode < 0 else "exit status %d" % p.returncode)
        msg = "rank %d's worker failed: %s: %s" % (rank, why, " / ".join(tail))
        try:
            _ask(spec["keeper"], "fatal %s %d %s" % (spec["token"], gen, msg.replace("\n", " ")))
        except OSError:
            pass
        raise RuntimeError("rally.spark: " + msg)


def _tell(spec: dict, gen: int, rank: int, log: str) -> None:
    """The worker's last lines, each prefixed with its rank, to the driver
    (run.last_lines, and standard error with echo)."""
    with open(log, "rb") as f:
        lines = f.read()[-4000:].decode(errors="replace").splitlines()[-20:]
    text = "\n".join("[%d] %s" % (rank, line) for line in lines)
    try:
        _ask(spec["keeper"], "log %s %d %s" % (spec["token"], gen, text.encode().hex()))
    except OSError:
        pass


def _worker_main() -> None:
    """A rank's worker process: python -c ... PAYLOAD RESULT rally_key=value..."""
    import pyspark.cloudpickle as cloudpickle

    from . import digest64, init

    payload, result = sys.argv[1], sys.argv[2]
    with open(payload, "rb") as f:
        raw = f.read()
    fn, rows, args, kwargs = cloudpickle.loads(raw)
    with init(sys.argv[3:]) as r:
        if rows is not None:
            r.set_input("spark", "%016x" % digest64(pickle.dumps(rows, protocol=4)))
            out = fn(r, rows, *args, **kwargs)
        else:
            out = fn(r, *args, **kwargs)
    with open(result + ".tmp", "wb") as f:
        pickle.dump(out, f, protocol=4)
    os.replace(result + ".tmp", result)


# --- rally-gbdt as a Spark ML estimator -----------------------------------------

def _feature_rows(df: Any, features: Union[str, Sequence[str]], first: Sequence[str] = ()):
    """df's rows as (first..., feature values...): a vector or array column
    spread out, or the named numeric columns."""
    cols = [features] if isinstance(features, str) else list(features)
    return df.select(*(list(first) + cols))


def _num(v: Any) -> str:
    f = float(v)
    return "" if f != f else repr(f)  # NaN: an empty field, rally-gbdt's missing value


def _csv_values(rows: List[Any]) -> bytes:
    out = []
    for row in rows:
        vals: List[str] = []
        for v in row:
            if hasattr(v, "toArray"):
                vals.extend(_num(x) for x in v.toArray())
            elif isinstance(v, (list, tuple)):
                vals.extend(_num(x) for x in v)
            else:
                vals.append(_num(v))
        out.append(",".join(vals))
    return ("\n".join(out) + "\n").encode() if out else b""


try:
    from pyspark.ml import Estimator as _Estimator, Model as _Model
except ImportError:  # the module's run() needs pyspark anyway; its estimator too
    _Estimator = _Model = object  # type: ignore


class GBDTClassifier(_Estimator):
    """rally-gbdt (binary:logistic) as a Spark ML estimator, as
    xgboost.spark's SparkXGBClassifier is for XGBoost:

        clf = GBDTClassifier(features_col="features", label_col="label",
                             num_workers=4, n_estimators=200, max_depth=6,
                             shared_dir="/shared/rally")
        model = clf.fit(train_df)
        model.transform(test_df).select("prediction", "probability")

    features_col: a vector or array column, or a list of numeric columns;
    label_col: 0 or 1.  n_estimators, max_depth, eta, reg_lambda, gamma,
    min_child_weight, max_bin: rally-gbdt's --trees, --max-depth, --eta,
    --lambda, --gamma, --min-child-weight, --max-bin; program_args: more of
    its flags (examples/gbdt/README.md).  shared_dir: a
    directory every executor reaches, for the training rows and the
    snapshots (every ``snapshot_every`` trees; 0: none).  Other keyword
    arguments go to rally.spark.run (timeout, echo, ...)."""

    def __init__(self, features_col: Union[str, Sequence[str]] = "features",
                 label_col: str = "label", num_workers: int = 2, n_estimators: int = 100,
                 max_depth: int = 6, eta: float = 0.3, reg_lambda: float = 1.0,
                 gamma: float = 0.0, min_child_weight: float = 1.0, max_bin: int = 255,
                 shared_dir: Optional[str] = None, snapshot_every: int = 10,
                 prediction_col: str = "prediction", probability_col: str = "probability",
                 program_args: Sequence[str] = (), **run_kwargs: Any):
        super().__init__()
        self.features_col, self.label_col, self.num_workers = features_col, label_col, num_workers
        self.prediction_col, self.probability_col = prediction_col, probability_col
        self.params_ = {"--trees": n_estimators, "--max-depth": max_depth, "--eta": eta,
                        "--lambda": reg_lambda, "--gamma": gamma,
                        "--min-child-weight": min_child_weight, "--max-bin": max_bin}
        self.program_args = list(program_args)
        self.shared_dir, self.snapshot_every = shared_dir, snapshot_every
        self.run_kwargs = run_kwargs

    def _fit(self, dataset: Any) -> "GBDTModel":
        import json

        if self.shared_dir is None:
            raise ConfigError("GBDTClassifier: shared_dir (a directory every executor reaches) "
                              "holds the training rows and the snapshots", 4)
        argv = [_lib.tool("rally-gbdt"), "--data", "{data}", "--data-opt", "csv_label=0",
                "--data-opt", "format=csv", "--quiet", "--json"]
        for k, v in self.params_.items():
            argv += [k, repr(v) if isinstance(v, float) else str(v)]
        argv += self.program_args
        rows = _feature_rows(dataset, self.features_col, [self.label_col])
        snaps = os.path.join(self.shared_dir, "snapshots")
        os.makedirs(snaps, exist_ok=True)
        kw = dict(self.run_kwargs)
        if self.snapshot_every:
            kw.update(snapshot_dir=snaps, snapshot_every=self.snapshot_every)
        out = run(dataset.sparkSession, argv, data=rows.rdd.map(tuple),
                  n_workers=self.num_workers, data_dir=self.shared_dir, job="rally-gbdt", **kw)
        start = out.index('{"format"')
        model, _ = json.JSONDecoder().raw_decode(out[start:])
        return GBDTModel(model, self.features_col, self.prediction_col, self.probability_col)


class GBDTModel(_Model):
    """A fitted rally-gbdt model: transform(df) adds the probability of
    label 1 (``probability``) and the class (``prediction``, 0.0 or 1.0),
    computed by ``rally-gbdt predict`` on each partition.  ``model`` is the
    model's JSON (as a dict); ``model["model_digest"]`` names its bits."""

    def __init__(self, model: dict, features_col: Union[str, Sequence[str]] = "features",
                 prediction_col: str = "prediction", probability_col: str = "probability"):
        super().__init__()
        self.model, self.features_col = model, features_col
        self.prediction_col, self.probability_col = prediction_col, probability_col

    def _transform(self, dataset: Any) -> Any:
        import json

        from pyspark.sql.types import DoubleType, StructField, StructType

        text = json.dumps(self.model)
        cols = ([self.features_col] if isinstance(self.features_col, str)
                else list(self.features_col))
        width = len(cols)
        tool = _lib.tool("rally-gbdt")

        def predict(it):
            rows = list(it)
            if not rows:
                return
            work = tempfile.mkdtemp(prefix="rally-spark-predict-")
            try:
                mpath, dpath = os.path.join(work, "model.json"), os.path.join(work, "rows.csv")
                with open(mpath, "w") as f:
                    f.write(text)
                with open(dpath, "wb") as f:
                    f.write(_csv_values([row[-width:] for row in rows]))
                out = subprocess.run([tool, "predict", mpath, dpath, "--data-opt", "format=csv"],
                                     capture_output=True, check=True).stdout.split()
            finally:
                shutil.rmtree(work, ignore_errors=True)
            for row, p in zip(rows, out):
                prob = float(p)
                yield tuple(row[:-width]) + (1.0 if prob > 0.5 else 0.0, prob)

        src = dataset.select(*(dataset.columns + cols))
        schema = StructType(dataset.schema.fields +
                            [StructField(self.prediction_col, DoubleType(), False),
                             StructField(self.probability_col, DoubleType(), False)])
        return dataset.sparkSession.createDataFrame(src.rdd.mapPartitions(predict), schema)
