"""rally — reliable allreduce and broadcast for Python, over librally with
ctypes (no compiler needed).

A job is N Python processes started by ``rally-run -n N python3 train.py``;
each does::

    import numpy as np
    import rally

    with rally.init():                      # rally.finalize() on leaving
        version, model = rally.load_checkpoint()
        if version == 0:
            model = make_model()
        for it in range(version, iters):
            grad = compute(model)            # a numpy array
            rally.allreduce(grad, rally.SUM) # in place, on every rank
            model = update(model, grad)
            rally.checkpoint(model)          # any picklable object

A worker that dies is restarted by rally-run with the same command line; it
gets the newest checkpoint from ``load_checkpoint()`` and the results of
the collectives since from the survivors (see docs/recovery.md).

The module-level functions use the handle made by the last ``init()``;
``init()`` also returns it (a ``Rally`` object with the same methods).
Errors raise ``rally.Error`` subclasses carrying the C library's sentence
(``.message``) and status (``.status``, ``.status_name``).
``bindings/python/README.md`` says how the package finds librally.
"""

from __future__ import annotations

import ctypes
import struct
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _canon, _held, _lib
from . import xsum as _xsum
from .xsum import XSum
from .errors import (ArgumentError, AuthError, ConfigError, Error, MismatchError,  # noqa: F401
                     OutOfMemoryError, PeerError, ProtocolError, Resized, StateError,
                     SystemCallError, TimeoutError, from_status)

__all__ = [
    "init", "finalize", "Rally", "rank", "world_size", "is_distributed", "processor_name",
    "tracker_print", "allreduce", "broadcast", "broadcast_object", "allgather",
    "register_reducer", "checkpoint", "load_checkpoint", "lazy_checkpoint", "version",
    "abort", "attempt", "digest64", "allreduce_xsum", "allreduce_object", "XSum", "set_app",
    "set_input", "report", "report_total",
    "MAX", "MIN", "SUM", "BITOR", "SUM_EXACT", "Error", "ArgumentError", "ConfigError", "PeerError",
    "MismatchError", "StateError", "Resized",
]
from ._version import __version__  # noqa: E402,F401

# Built-in operators (rally.h).  BITOR takes integer arrays only.  SUM_EXACT
# is the exactly rounded sum: the same bits at any world size.
MAX, MIN, SUM, BITOR, SUM_EXACT = 0, 1, 2, 3, 4
_OP_NAMES = {MAX: "MAX", MIN: "MIN", SUM: "SUM", BITOR: "BITOR", SUM_EXACT: "SUM_EXACT"}

# numpy (kind, itemsize) -> rally's element type (rally.h).
_DTYPES = {
    ("i", 1): 0, ("u", 1): 1, ("i", 2): 2, ("u", 2): 3, ("i", 4): 4, ("u", 4): 5,
    ("i", 8): 6, ("u", 8): 7, ("f", 4): 8, ("f", 8): 9,
}
DTYPES = tuple(np.dtype(n) for n in ("int8", "uint8", "int16", "uint16", "int32", "uint32",
                                     "int64", "uint64", "float32", "float64"))

PICKLE_PROTOCOL = _canon.PROTOCOL  # objects travel in their canonical form (_canon.py)

# An operator: one of the constants above or a Reducer; a prepare callback
# fills the array it is given.
Op = Union[int, "Reducer"]
Prepare = Callable[[np.ndarray], None]


def _fsum(xs):
    import math

    if not all(isinstance(x, (int, float, np.integer, np.floating)) for x in xs):
        raise ArgumentError("allreduce_object: SUM_EXACT takes numbers only (math.fsum); "
                            "for arrays use allreduce(a, SUM_EXACT)")
    return math.fsum(xs)


# allreduce_object's operators on Python objects.
_OBJECT_OPS = {MAX: max, MIN: min, SUM: lambda a, b: a + b, BITOR: lambda a, b: a | b,
               SUM_EXACT: _fsum}


def _check_array(what, a, writable=True):
    """a as a C-contiguous native-order array we may write, or ArgumentError."""
    if not isinstance(a, np.ndarray):
        raise ArgumentError("%s needs a numpy.ndarray (the result is written into it), got %s"
                            % (what, type(a).__name__))
    if not a.flags.c_contiguous:
        raise ArgumentError("%s needs a C-contiguous array; this one is a strided view (pass "
                            "np.ascontiguousarray(a) and copy the result back)" % what)
    if writable and not a.flags.writeable:
        raise ArgumentError("%s writes its result into the array, but this one is read-only"
                            % what)
    if a.dtype.hasobject:
        raise ArgumentError("%s cannot send Python objects in an array (dtype %s); use "
                            "broadcast_object or allgather" % (what, a.dtype))
    if not a.dtype.isnative:
        raise ArgumentError("%s needs native byte order; convert with a.astype(a.dtype."
                            "newbyteorder('='))" % what)
    return a


def _rally_dtype(what, a):
    t = _DTYPES.get((a.dtype.kind, a.dtype.itemsize)) if a.dtype.fields is None else None
    if t is None:
        raise ArgumentError("%s: dtype %s is not one of rally's element types (%s); convert the "
                            "array, or register a reducer for it" % (what, a.dtype,
                                                                      ", ".join(map(str, DTYPES))))
    return t


class Reducer:
    """A custom reduction registered with ``register_reducer``; pass it to
    ``allreduce`` as the operator."""

    def __init__(self, rid, dtype, commutative, fn, cfn):
        self.id, self.dtype, self.commutative = rid, dtype, commutative
        self.fn, self._cfn = fn, cfn  # the C callback must outlive every call

    def __repr__(self):
        return "<rally.Reducer %d on %s>" % (self.id, self.dtype)


class Rally:
    """A rally handle: one worker's membership of the job.  ``rally.init()``
    makes one; use it as a context manager, or call ``finalize()``."""

    def __init__(self, args: Optional[Sequence[str]] = None, mock: Optional[bool] = None) -> None:
        if mock is None:
            mock = _env_flag("RALLY_PYTHON_MOCK")
        self._lib = _lib.load(mock)
        self.mock = bool(mock)
        self._h = None
        self._pending = None  # an exception raised inside a C callback
        self._reducers = {}
        # lazy_checkpoint's values, two sets: the newest checkpoint's and the
        # one before, which a recovery inside the next call may still ask for
        # (each call names its set to rally: the callback's argument, 1 or 2)
        self._held = (_held.Held(), _held.Held())
        self._held_at = 0
        self._owner = None  # set_local_records: the Python owner, and its C callback
        self._lazy_cfn = _lib.SERIALIZE_FN(self._serialize)
        from_argv = args is None
        argv = list(sys.argv) if from_argv else [sys.argv[0] if sys.argv else "python"] + list(args)
        arr = (ctypes.c_char_p * (len(argv) + 1))(*[str(a).encode() for a in argv], None)
        argc = ctypes.c_int(len(argv))
        cargv = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))
        h = ctypes.c_void_p()
        rc = self._lib.rally_init(ctypes.byref(h), ctypes.byref(argc), ctypes.byref(cargv))
        if rc != 0:
            msg = self._lib.rally_errmsg(h).decode(errors="replace")
            self._lib.rally_finalize(h)
            raise from_status(rc, "rally_init failed: " + msg)
        self._h = h
        if from_argv:  # rally_key=value arguments are rally's, not the script's
            sys.argv[:] = [cargv[i].decode() for i in range(argc.value)]
        self._torchrun_env()

    def _torchrun_env(self) -> None:
        """rally-run gives each worker torchrun's RANK and WORLD_SIZE as it
        launched them; an elastic job's may have changed since: the job's own."""
        import os
        if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
            os.environ["RANK"] = str(self.rank())
            os.environ["WORLD_SIZE"] = str(self.world_size())

    # --- life cycle -------------------------------------------------------------

    def finalize(self) -> None:
        """Leaves the job and frees the handle; later calls raise StateError.
        A second call does nothing."""
        if self._h is None:
            return
        h, self._h = self._h, None
        rc = self._lib.rally_finalize(h)
        if rc != 0:  # the handle is gone, its sentence kept (rally.h)
            raise from_status(rc, "rally_finalize failed: %s"
                              % self._lib.rally_errmsg(h).decode(errors="replace"))

    close = finalize

    @property
    def closed(self) -> bool:
        """Whether finalize() ran (every call but finalize raises StateError then)."""
        return self._h is None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        """Finalizes, unless the block ends with an exception that is not a
        rally.Error: a worker whose own code failed must not tell the job it
        finished.  Then the handle is dropped unfinalized and the worker
        counts as failed when its process ends, as a C worker that exits
        without rally_finalize (rally-run restarts it)."""
        global _default
        try:
            if exc_type is None or issubclass(exc_type, Error):
                self.finalize()
            else:
                self._h = None
        finally:
            if _default is self:
                _default = None
        return False

    def _handle(self, what):
        if self._h is None:
            raise StateError("%s: the rally handle is closed (finalize() was called); call "
                             "rally.init() for a new one" % what)
        return self._h

    def _check(self, rc, what):
        pending, self._pending = self._pending, None
        if rc != 0:
            msg = self._lib.rally_errmsg(self._h).decode(errors="replace")
            err = from_status(rc, msg if msg.startswith(what) else "%s: %s" % (what, msg))
            if pending is not None:
                raise err from pending
            raise err
        if pending is not None:
            raise pending

    def _guard(self, fn):
        """fn wrapped so that an exception inside it is kept for _check."""
        def call(*a):
            try:
                return fn(*a)
            except BaseException as e:  # noqa: B902 - C cannot take it; _check re-raises
                if self._pending is None:
                    self._pending = e
                return None
        return call

    # --- who we are -------------------------------------------------------------

    def rank(self) -> int:
        """This worker's rank, in [0, world_size())."""
        return self._lib.rally_rank(self._handle("rank"))

    def world_size(self) -> int:
        """The number of workers in the job (1 without a tracker)."""
        return self._lib.rally_world_size(self._handle("world_size"))

    def is_distributed(self) -> bool:
        """Whether the job has more than one worker."""
        return self.world_size() > 1

    def processor_name(self) -> str:
        """The name of this worker's host."""
        buf = ctypes.create_string_buffer(1025)
        self._check(self._lib.rally_processor_name(self._handle("processor_name"), buf,
                                                   len(buf)), "processor_name")
        return buf.value.decode(errors="replace")

    def tracker_print(self, msg: object) -> None:
        """Prints msg on the launcher's standard output behind this rank."""
        h = self._handle("tracker_print")
        self._check(self._lib.rally_tracker_print(h, str(msg).rstrip("\n").encode()),
                    "tracker_print")

    def report(self, key: str, value: float) -> None:
        """rally_report: the application's progress for people watching the
        job (rally-run's status page, metrics, events and --progress line):
        key = value at this worker's checkpoint version (the iteration).
        Not a collective (rank 0 alone is enough for a value every rank
        shares); never waits for the network, and does nothing without a
        launcher.  Raises ArgumentError for a key that is not 1 to 64 bytes
        of A-Z a-z 0-9 _ . : - or a value that is not a finite number."""
        h = self._handle("report")
        if not isinstance(key, str):
            raise ArgumentError("report: the key must be a str, not %s" % type(key).__name__)
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ArgumentError("report: %s's value must be a number, not %s"
                                % (key, type(value).__name__)) from None
        self._check(self._lib.rally_report(h, key.encode(errors="replace"), v), "report")

    def report_total(self, iterations: int) -> None:
        """rally_report_total: the job's iterations in all (0: not known), for
        the observers' "i of n" and the time left.  Like report: not a
        collective, never waits, nothing without a launcher."""
        h = self._handle("report_total")
        n = int(iterations)
        if n < 0 or n >= 1 << 64:
            raise ArgumentError("report_total: %d iterations is not a count" % n)
        self._check(self._lib.rally_report_total(h, n), "report_total")

    # --- collectives ------------------------------------------------------------

    def allreduce(self, a: np.ndarray, op: Op, prepare: Optional[Prepare] = None) -> np.ndarray:
        """Reduces the array a in place over every rank with op (MAX, MIN,
        SUM, BITOR, SUM_EXACT, or a Reducer from register_reducer) and
        returns a.
        prepare(a), when given, fills a first; it is not called when the
        result is recovered from other workers."""
        h = self._handle("allreduce")
        _check_array("allreduce", a)
        cprep = _lib.PREPARE_FN(self._guard(lambda _arg: prepare(a))) if prepare else \
            _lib.PREPARE_FN()
        if isinstance(op, Reducer):
            if self._reducers.get(op.id) is not op:
                raise ArgumentError("allreduce: reducer %d was not registered on this handle"
                                    % op.id)
            if a.dtype != op.dtype:
                raise ArgumentError("allreduce: reducer %d reduces %s, the array holds %s"
                                    % (op.id, op.dtype, a.dtype))
            rc = self._lib.rally_allreduce_custom(h, a.ctypes.data, a.size, op.id, cprep, None)
        else:
            t = _rally_dtype("allreduce", a)
            if op not in _OP_NAMES:
                raise ArgumentError("allreduce: operator %r is not rally.MAX, MIN, SUM, BITOR, "
                                    "SUM_EXACT or a Reducer" % (op,))
            if op == BITOR and a.dtype.kind == "f":
                raise ArgumentError("allreduce: BITOR takes integer arrays only, not %s"
                                    % a.dtype)
            rc = self._lib.rally_allreduce(h, a.ctypes.data, a.size, t, op, cprep, None)
        self._check(rc, "allreduce")
        return a

    def allreduce_xsum(self, acc: XSum, dtype: Any = np.float64,
                       prepare: Optional[Callable[[XSum], None]] = None) -> np.ndarray:
        """The exact sum over every rank of each element of acc (an XSum of
        the same count everywhere), rounded once, as a new array of dtype
        (float64 or float32).  prepare(acc), when given, fills acc first; it
        is not called when the result is recovered from other workers."""
        h = self._handle("allreduce_xsum")
        if not isinstance(acc, XSum):
            raise ArgumentError("allreduce_xsum needs a rally.XSum, got %s" % type(acc).__name__)
        out = np.empty(acc.count, dtype=_xsum._float_dtype("allreduce_xsum", dtype))
        cprep = _lib.PREPARE_FN(self._guard(lambda _arg: prepare(acc))) if prepare else \
            _lib.PREPARE_FN()
        rc = self._lib.rally_allreduce_xsum(h, acc._s, _xsum._RALLY_FLOAT[out.dtype],
                                            out.ctypes.data if out.size else None, cprep, None)
        self._check(rc, "allreduce_xsum")
        return out

    def register_reducer(self, fn: Callable[[np.ndarray, np.ndarray], None], dtype: Any,
                         commutative: bool = True, id: Optional[int] = None) -> Reducer:  # noqa: A002
        """Registers fn(inout, incoming) as a reduction over elements of
        dtype (any numpy dtype without Python objects, e.g. a structured
        one): it must set inout[i] = inout[i] (+) incoming[i] in place (or
        return the new values), for an associative (+).  Every rank must
        register the same reducers in the same order.  Returns a Reducer."""
        h = self._handle("register_reducer")
        dtype = np.dtype(dtype)
        if dtype.hasobject or dtype.itemsize == 0:
            raise ArgumentError("register_reducer: dtype %s has no fixed-size bytes" % dtype)
        rid = len(self._reducers) if id is None else int(id)
        size = dtype.itemsize

        def reduce(inout, incoming, count, _arg):
            nb = count * size
            dst = np.frombuffer((ctypes.c_char * nb).from_address(inout), dtype=dtype)
            src = np.frombuffer((ctypes.c_char * nb).from_address(incoming), dtype=dtype)
            out = fn(dst, src)
            if out is not None and out is not dst:
                dst[...] = out

        cfn = _lib.REDUCE_FN(self._guard(reduce))
        self._check(self._lib.rally_register_reducer(h, rid, size, 1 if commutative else 0, cfn,
                                                     None), "register_reducer")
        red = Reducer(rid, dtype, bool(commutative), fn, cfn)
        self._reducers[rid] = red
        return red

    def broadcast(self, data: Any, root: int = 0) -> Any:
        """An ndarray: root's contents reach every rank's array in place
        (same shape and dtype everywhere); returns it.  Anything else:
        broadcast_object(data, root)."""
        if not isinstance(data, np.ndarray):
            return self.broadcast_object(data, root)
        h = self._handle("broadcast")
        _check_array("broadcast", data)
        self._check(self._lib.rally_broadcast(h, data.ctypes.data, data.nbytes, int(root)),
                    "broadcast")
        return data

    def broadcast_object(self, obj: Any, root: int = 0) -> Any:
        """Returns root's obj on every rank (root gets obj itself, the others
        an unpickled copy); the others pass anything, e.g. None."""
        h = self._handle("broadcast_object")
        buf = ctypes.c_void_p()
        n = ctypes.c_size_t(0)
        keep = None
        if self.rank() == root:
            keep = _canon.dumps(obj, "broadcast_object")
            buf.value = ctypes.cast(ctypes.c_char_p(keep), ctypes.c_void_p).value
            n.value = len(keep)
        self._check(self._lib.rally_broadcast_alloc(h, ctypes.byref(buf), ctypes.byref(n),
                                                    int(root)), "broadcast_object")
        if keep is not None:
            return obj
        try:
            return _canon.loads(ctypes.string_at(buf.value, n.value)) if n.value else None
        finally:
            self._lib.rally_free(buf)

    def allgather(self, obj: Any) -> Union[List[Any], np.ndarray]:
        """An ndarray (the same shape and dtype on every rank): a new array
        of shape (world_size,) + obj.shape holding every rank's, in rank
        order.  Anything else: every rank's obj (pickled), as a list in
        rank order."""
        h = self._handle("allgather")
        if isinstance(obj, np.ndarray):
            _check_array("allgather", obj, writable=False)
            out = np.empty((self.world_size(),) + obj.shape, obj.dtype)
            self._check(self._lib.rally_allgather(h, obj.ctypes.data, obj.nbytes,
                                                  out.ctypes.data), "allgather")
            return out
        return self._gather_pickled(h, obj, "allgather")

    def allreduce_object(self, obj: Any, op: Any = SUM) -> Any:
        """Every rank's obj (any picklable object) reduced with op, on every
        rank, as mpi4py's ``comm.allreduce(obj, op)``: op is SUM (``a + b``),
        MAX, MIN, BITOR (``a | b``), SUM_EXACT (``math.fsum``, numbers only)
        or a function ``op(a, b)`` of two objects.  The objects are gathered
        (pickled) and folded in rank order, ``op(op(x0, x1), x2)...``, on
        every rank alike, so every rank gets the same object and the same
        bits at a given N, and a recovering worker gets the gathered objects
        from the survivors.  For numbers in arrays ``allreduce`` is the fast
        path: this call moves N objects to every rank."""
        h = self._handle("allreduce_object")
        fold = _OBJECT_OPS.get(op) if isinstance(op, int) else op
        if not callable(fold):
            raise ArgumentError("allreduce_object: op %r is not one of MAX, MIN, SUM, BITOR, "
                                "SUM_EXACT nor a function of two objects" % (op,))
        xs = self._gather_pickled(h, obj, "allreduce_object")
        if fold is _fsum:
            return fold(xs)
        acc = xs[0]
        for x in xs[1:]:
            acc = fold(acc, x)
        return acc

    def _gather_pickled(self, h, obj, what):
        mine = _canon.dumps(obj, what)
        world = self.world_size()
        sizes = (ctypes.c_uint64 * world)()
        out = ctypes.c_void_p()
        self._check(self._lib.rally_allgatherv(h, mine, len(mine), ctypes.byref(out), sizes), what)
        try:
            blob = ctypes.string_at(out.value, sum(sizes)) if sum(sizes) else b""
        finally:
            self._lib.rally_free(out)
        res, off = [], 0
        for s in sizes:
            res.append(_canon.loads(blob[off:off + s]))
            off += s
        return res

    # --- checkpoints ------------------------------------------------------------

    def set_local_records(self, owner: Callable[[int, int], int]) -> None:
        """Declares the local model a dict of records: {id: object}, ids
        integers in 0..2^64-1, each object pickled on its own.  owner(id,
        world) -> rank says which rank owns an id in a job of world ranks
        (the rule the shards follow; the same function on every rank).  When
        an elastic job's workers change (rally.Resized), every record moves
        to its owner in the new world, and load_checkpoint(with_local=True)
        gives each rank the dict of the records it owns.  Call it before the
        first checkpoint with a local model (docs/recovery.md, "Elastic
        jobs")."""
        h = self._handle("set_local_records")

        def c_owner(rid, world, _arg):
            try:
                return int(owner(rid, world))
            except BaseException as e:  # noqa: B902 - rally sees an impossible rank
                if self._pending is None:
                    self._pending = e
                return -1
        self._owner = (owner, _lib.OWNER_FN(c_owner))
        self._check(self._lib.rally_set_local_records(h, self._owner[1], None),
                    "set_local_records")

    def _records_bytes(self, local_model):
        out = []
        for rid in sorted(local_model):
            blob = _canon.dumps(local_model[rid])
            out.append(struct.pack("<QI", rid, len(blob)))
            out.append(blob)
        return b"".join(out)

    @staticmethod
    def _records_of(raw):
        recs, at = {}, 0
        while at < len(raw):
            rid, n = struct.unpack_from("<QI", raw, at)
            recs[rid] = _canon.loads(raw[at + 12:at + 12 + n])
            at += 12 + n
        return recs

    def load_checkpoint(self, with_local: bool = False) -> Tuple[Any, ...]:
        """(version, global_model), or (version, global_model, local_model)
        with with_local.  A fresh start gives version 0 and None models;
        a restarted worker the objects of the newest checkpoint."""
        h = self._handle("load_checkpoint")
        g, gn = ctypes.c_void_p(), ctypes.c_uint64(0)
        lo, ln = ctypes.c_void_p(), ctypes.c_uint64(0)
        v = ctypes.c_uint64(0)
        rc = self._lib.rally_load_checkpoint(h, ctypes.byref(g), ctypes.byref(gn),
                                             ctypes.byref(lo) if with_local else None,
                                             ctypes.byref(ln) if with_local else None,
                                             ctypes.byref(v))
        self._check(rc, "load_checkpoint")
        try:
            gm = _canon.loads(ctypes.string_at(g.value, gn.value)) if v.value and gn.value else None
            raw = ctypes.string_at(lo.value, ln.value) if v.value and ln.value else None
            if self._owner is not None:
                lm = self._records_of(raw or b"") if v.value else None
            else:
                lm = _canon.loads(raw) if raw else None
        finally:
            self._lib.rally_free(g)
            self._lib.rally_free(lo)
        return (v.value, gm, lm) if with_local else (v.value, gm)

    def checkpoint(self, global_model: Any, local_model: Any = None) -> None:
        """Checkpoints the objects: version + 1.  They are pickled in their
        canonical form (rally/_canon.py): equal values, equal bytes, on
        every rank, so rally's check that the ranks' global models agree
        compares values, whatever the objects' identities or memory
        order.  local_model None means the job has no local model (use
        local models always or never).  The checkpoint must be the step's
        last collective (docs/recovery.md)."""
        h = self._handle("checkpoint")
        gb = _canon.dumps(global_model)
        if local_model is not None and self._owner is not None:
            lb = self._records_bytes(local_model)  # set_local_records: a dict of records
        else:
            lb = _canon.dumps(local_model) if local_model is not None else None
        self._check(self._lib.rally_checkpoint(h, gb, len(gb), lb if lb is not None else None,
                                               len(lb) if lb else 0),
                    "checkpoint")

    def lazy_checkpoint(self, global_model: Any) -> None:
        """A checkpoint that pickles global_model only when a recovering
        worker or a snapshot needs it (rally_lazy_checkpoint).  Its values
        are held from this call on: every numpy array and CPU tensor in it
        copied into a buffer reused from one checkpoint to the next
        (rally/_held.py), so the model may change in place right after
        the call, an optimizer's step included.  That costs a memcpy of
        the model (and twice its size in memory), where checkpoint()
        pickles it and copies it again.  Not compared across ranks (that
        would pickle it), and no local model; the checkpoint must be the
        step's last collective."""
        h = self._handle("lazy_checkpoint")
        at = 1 - self._held_at
        self._held[at].hold(global_model)
        self._held_at = at
        self._check(self._lib.rally_lazy_checkpoint(h, self._lazy_cfn, at + 1), "lazy_checkpoint")

    def _serialize(self, arg, buf, cap):
        try:
            blob = self._held[arg - 1].blob("lazy_checkpoint")
            if cap >= len(blob):
                ctypes.memmove(buf, blob, len(blob))
            return len(blob)
        except BaseException as e:  # noqa: B902 - rally sees a failed serialize
            if self._pending is None:
                self._pending = e
            return 0xFFFFFFFFFFFFFFFF

    def version(self) -> int:
        """How many checkpoints the job has taken."""
        return self._lib.rally_checkpoint_version(self._handle("version"))

    def attempt(self) -> int:
        """How many times this rank was started before this process (0 on the
        first start; rabit's DMLC_NUM_ATTEMPT), known before load_checkpoint."""
        return self._lib.rally_attempt(self._handle("attempt"))

    def set_app(self, name: str, config: str = "") -> None:
        """rally_set_app: names the application and its configuration for
        durable snapshots; a resume with other values is refused.  Call it
        before load_checkpoint."""
        h = self._handle("set_app")
        self._check(self._lib.rally_set_app(h, str(name).encode(), str(config).encode()),
                    "set_app")

    def set_input(self, scheme: str, fingerprint: str) -> None:
        """rally_set_input: how the input was partitioned (a Shard's
        partition) and this rank's shard fingerprint, kept in snapshots; a
        resume over other data is refused.  Call it before load_checkpoint."""
        h = self._handle("set_input")
        self._check(self._lib.rally_set_input(h, str(scheme).encode(), str(fingerprint).encode()),
                    "set_input")

    def abort(self, msg: str, code: int = 1) -> None:
        """Stops the whole job because of a failure only this rank sees:
        every rank's pending and next call raises PeerError with "rank R
        failed: msg (rally_abort code C)", and rally-run restarts nobody.
        Returns once the job is failed; the handle is spent afterwards."""
        h = self._handle("abort")
        self._check(self._lib.rally_abort(h, int(code), str(msg).encode()), "abort")


def digest64(data: Any) -> int:
    """rally_digest64: XXH3-64 (seed 0) of a bytes-like object's bytes (bytes,
    bytearray, memoryview, a C-contiguous numpy array), as an int: the
    digest the C examples print as model_digest.  Needs no handle."""
    mv = memoryview(data)
    if not mv.c_contiguous:
        raise ArgumentError("digest64 needs C-contiguous bytes; this view is strided (pass "
                            "numpy.ascontiguousarray(a))")
    raw = np.frombuffer(mv.cast("B"), dtype=np.uint8)
    lib = _lib.load(_lib.loaded_mock() if _lib.loaded() else _env_flag("RALLY_PYTHON_MOCK"))
    return int(lib.rally_digest64(raw.ctypes.data if raw.size else None, raw.size))


def _env_flag(name):
    import os
    return os.environ.get(name, "").lower() in ("1", "yes", "true", "on")


_default = None


def init(args: Optional[Sequence[str]] = None, mock: Optional[bool] = None) -> Rally:
    """Joins the job and returns the handle (also the default handle of the
    module-level functions).  args: None reads rally_key=value settings from
    sys.argv and removes them there; a list is read instead (sys.argv is left
    alone).  mock=True loads librally_mock (kill points rally_mock=...);
    None takes RALLY_PYTHON_MOCK=1 from the environment."""
    global _default
    if _default is not None and not _default.closed:
        raise StateError("rally.init: this process is already in a job; call rally.finalize() "
                         "first")
    _default = Rally(args, mock)
    return _default


def finalize() -> None:
    """Leaves the job (the default handle).  Does nothing without one."""
    global _default
    r, _default = _default, None
    if r is not None:
        r.finalize()


def _current(what):
    if _default is None:
        raise StateError("rally.%s: no rally handle; call rally.init() first (or it was "
                         "finalized)" % what)
    return _default


# The module-level calls: the default handle's methods (typed, for checkers
# that read py.typed; each takes its method's docstring).
def rank() -> int:
    return _current("rank").rank()


def world_size() -> int:
    return _current("world_size").world_size()


def is_distributed() -> bool:
    return _current("is_distributed").is_distributed()


def processor_name() -> str:
    return _current("processor_name").processor_name()


def tracker_print(msg: object) -> None:
    return _current("tracker_print").tracker_print(msg)


def allreduce(a: np.ndarray, op: Op, prepare: Optional[Prepare] = None) -> np.ndarray:
    return _current("allreduce").allreduce(a, op, prepare)


def allreduce_xsum(acc: XSum, dtype: Any = np.float64,
                   prepare: Optional[Callable[[XSum], None]] = None) -> np.ndarray:
    return _current("allreduce_xsum").allreduce_xsum(acc, dtype, prepare)


def register_reducer(fn: Callable[[np.ndarray, np.ndarray], None], dtype: Any,
                     commutative: bool = True, id: Optional[int] = None) -> Reducer:  # noqa: A002
    return _current("register_reducer").register_reducer(fn, dtype, commutative, id)


def allreduce_object(obj: Any, op: Any = SUM) -> Any:
    return _current("allreduce_object").allreduce_object(obj, op)


def broadcast(data: Any, root: int = 0) -> Any:
    return _current("broadcast").broadcast(data, root)


def broadcast_object(obj: Any, root: int = 0) -> Any:
    return _current("broadcast_object").broadcast_object(obj, root)


def allgather(obj: Any) -> Union[List[Any], np.ndarray]:
    return _current("allgather").allgather(obj)


def load_checkpoint(with_local: bool = False) -> Tuple[Any, ...]:
    return _current("load_checkpoint").load_checkpoint(with_local)


def checkpoint(global_model: Any, local_model: Any = None) -> None:
    return _current("checkpoint").checkpoint(global_model, local_model)


def lazy_checkpoint(global_model: Any) -> None:
    return _current("lazy_checkpoint").lazy_checkpoint(global_model)


def version() -> int:
    return _current("version").version()


def abort(msg: str, code: int = 1) -> None:
    return _current("abort").abort(msg, code)


def attempt() -> int:
    return _current("attempt").attempt()


def set_app(name: str, config: str = "") -> None:
    return _current("set_app").set_app(name, config)


def set_input(scheme: str, fingerprint: str) -> None:
    return _current("set_input").set_input(scheme, fingerprint)


def report(key: str, value: float) -> None:
    return _current("report").report(key, value)


def report_total(iterations: int) -> None:
    return _current("report_total").report_total(iterations)


for _f in (rank, world_size, is_distributed, processor_name, tracker_print, allreduce,
           allreduce_xsum, allreduce_object, register_reducer, broadcast, broadcast_object, allgather,
           load_checkpoint, checkpoint, lazy_checkpoint, version, abort, attempt, set_app,
           set_input, report, report_total):
    _f.__doc__ = getattr(Rally, _f.__name__).__doc__
del _f
