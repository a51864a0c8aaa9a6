"""rally.snapshot — reading durable snapshots with no job running, over the
C library's reader (include/rally/snapshot.h).

    import rally.snapshot
    for e in rally.snapshot.list("snaps/train"):
        print(e.name, e.state, e.version, "*" if e.latest else "")
    with rally.snapshot.open("snaps/train/latest") as s:
        s.verify()                 # every file's size, checksum and header
        model = s.read()           # the bytes the job checkpointed as its global model
        mine = s.read(rank=3)      # rank 3's local model, when the job had them

Opening reads and checks the manifest and every file's size; a model file's
checksum and header are checked when it is read.  A failure raises the
rally.Error subclass of the C status, with the C library's sentence (it names
the file and what is wrong).
"""
import collections
import ctypes

from . import _lib
from .errors import from_status

_ERR = 512

COMPLETE, INCOMPLETE, DAMAGED = 0, 1, 2
_STATES = {COMPLETE: "complete", INCOMPLETE: "incomplete", DAMAGED: "damaged"}

#: One snapshot directory of a job directory, as a listing sees it.  ``state``
#: is "complete", "incomplete" or "damaged"; ``latest`` marks the one
#: ``--resume latest`` would take; ``why`` says what is wrong with a snapshot
#: that is not complete.
Entry = collections.namedtuple("Entry", "name version state latest run_id created world nbytes why")


class _CEntry(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 48), ("version", ctypes.c_uint64),
                ("state", ctypes.c_int), ("latest", ctypes.c_int),
                ("run_id", ctypes.c_char * 37), ("created", ctypes.c_char * 28),
                ("world", ctypes.c_int), ("nbytes", ctypes.c_uint64),
                ("why", ctypes.c_char * 512)]


_declared = None


def _lib_():
    """The loaded library (whichever of plain and mock this process has),
    with the reader's functions declared."""
    global _declared
    lib = _lib.load(_lib.loaded_mock())
    if _declared is lib:
        return lib
    P, I, Z, U64, S = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint64, ctypes.c_char_p
    PS, PU64 = ctypes.POINTER(S), ctypes.POINTER(U64)
    sigs = {
        "rally_snapshot_list": (I, [S, ctypes.POINTER(ctypes.POINTER(_CEntry)), ctypes.POINTER(Z),
                                    S, Z]),
        "rally_snapshot_open": (I, [S, ctypes.POINTER(P), S, Z]),
        "rally_snapshot_close": (None, [P]),
        "rally_snapshot_path": (S, [P]),
        "rally_snapshot_version": (U64, [P]),
        "rally_snapshot_world": (I, [P]),
        "rally_snapshot_has_local": (I, [P]),
        "rally_snapshot_field": (S, [P, S]),
        "rally_snapshot_host": (S, [P, I]),
        "rally_snapshot_fingerprint": (S, [P, I]),
        "rally_snapshot_setting_at": (I, [P, Z, PS, PS]),
        "rally_snapshot_nfiles": (Z, [P]),
        "rally_snapshot_file": (I, [P, Z, PS, PU64, PU64]),
        "rally_snapshot_verify": (I, [P, S, Z]),
        "rally_snapshot_read": (I, [P, I, ctypes.POINTER(P), PU64, S, Z]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    _declared = lib
    return lib


def _raise(rc, err):
    raise from_status(rc, err.value.decode(errors="replace"))


def list(jobdir):  # noqa: A001 (the module's verb, as rally-snapshot ls)
    """The snapshot directories of a job directory, in ascending version
    order, as :class:`Entry` tuples."""
    lib = _lib_()
    v = ctypes.POINTER(_CEntry)()
    n = ctypes.c_size_t()
    err = ctypes.create_string_buffer(_ERR)
    rc = lib.rally_snapshot_list(str(jobdir).encode(), ctypes.byref(v), ctypes.byref(n), err, _ERR)
    if rc != 0:
        _raise(rc, err)
    try:
        return [Entry(e.name.decode(), e.version, _STATES.get(e.state, "damaged"), bool(e.latest),
                      e.run_id.decode(), e.created.decode(), e.world, e.nbytes, e.why.decode())
                for e in (v[i] for i in range(n.value))]
    finally:
        lib.rally_free(ctypes.cast(v, ctypes.c_void_p))


class Snapshot:
    """An open snapshot (see :func:`open`)."""

    _FIELDS = ("format_version", "job", "snapshot_id", "run_id", "run_started", "created",
               "rally_version", "app_name", "app_config", "app_config_xxh3", "partitioning")

    def __init__(self, path):
        self._lib = _lib_()
        self._h = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_ERR)
        rc = self._lib.rally_snapshot_open(str(path).encode(), ctypes.byref(self._h), err, _ERR)
        if rc != 0:
            _raise(rc, err)
        lib, h = self._lib, self._h
        #: the snapshot directory (for JOBDIR/latest, the one it named)
        self.path = lib.rally_snapshot_path(h).decode()
        #: the checkpoint version it holds
        self.version = lib.rally_snapshot_version(h)
        #: workers of the job that took it
        self.world = lib.rally_snapshot_world(h)
        #: whether it holds a local model of every rank
        self.has_local = bool(lib.rally_snapshot_has_local(h))
        #: the manifest's fields by name (job, run_id, created, app_name, ...)
        self.meta = {k: lib.rally_snapshot_field(h, k.encode()).decode() for k in self._FIELDS}
        #: rank r's host
        self.hosts = [lib.rally_snapshot_host(h, r).decode() for r in range(self.world)]
        #: rank r's input fingerprint ("" when it set none)
        self.fingerprints = [lib.rally_snapshot_fingerprint(h, r).decode()
                             for r in range(self.world)]
        #: the job's settings as the snapshot kept them
        self.settings = {}
        k, v = ctypes.c_char_p(), ctypes.c_char_p()
        i = 0
        while lib.rally_snapshot_setting_at(h, i, ctypes.byref(k), ctypes.byref(v)) == 0:
            self.settings[k.value.decode()] = v.value.decode()
            i += 1
        #: (name, bytes, xxh3-64) of each file, as the manifest lists them
        self.files = []
        name, nb, x = ctypes.c_char_p(), ctypes.c_uint64(), ctypes.c_uint64()
        for i in range(lib.rally_snapshot_nfiles(h)):
            lib.rally_snapshot_file(h, i, ctypes.byref(name), ctypes.byref(nb), ctypes.byref(x))
            self.files.append((name.value.decode(), nb.value, x.value))

    def _handle(self):
        if not self._h:
            raise ValueError("the snapshot %s is closed" % self.path)
        return self._h

    def verify(self):
        """Reads and checks every file: sizes, checksums, headers."""
        err = ctypes.create_string_buffer(_ERR)
        rc = self._lib.rally_snapshot_verify(self._handle(), err, _ERR)
        if rc != 0:
            _raise(rc, err)

    def read(self, rank=-1):
        """The model ``rank`` checkpointed (-1: the global model) as bytes,
        checked as it is read."""
        p, n = ctypes.c_void_p(), ctypes.c_uint64()
        err = ctypes.create_string_buffer(_ERR)
        rc = self._lib.rally_snapshot_read(self._handle(), int(rank), ctypes.byref(p),
                                           ctypes.byref(n), err, _ERR)
        if rc != 0:
            _raise(rc, err)
        try:
            return ctypes.string_at(p, n.value) if n.value else b""
        finally:
            self._lib.rally_free(p)

    def close(self):
        if self._h:
            self._lib.rally_snapshot_close(self._h)
            self._h = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_h", None):
            self.close()


def open(path):  # noqa: A001
    """Opens the snapshot at ``path``: a snapshot directory, or
    ``JOBDIR/latest``."""
    return Snapshot(path)
