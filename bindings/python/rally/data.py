"""data.py — a worker's shard of a LIBSVM or CSV file, read by rally's own
readers (rally/data.h, docs/data.md), as numpy arrays; and the data cursor of
a minibatch job (Cursor), every sample once per epoch at any world size.

    shard = rally.data.read("blobs.csv", ["csv_label=0"], rank, world)
    x = shard.dense(d)      # rows x d float32, missing values 0

The shard depends only on the file's bytes, the world size and the rank, so
a restarted worker reads the rows it had; and these are the readers the C
programs use, so a Python job and a C job see the same numbers.
"""
import ctypes
import struct

import numpy as np

from . import _lib
from .errors import from_status


class Shard:
    """One worker's rows in CSR form: row_ptr (rows + 1), indices, values
    (float32), plus num_features (the highest index + 1 in this shard, or
    the column count), the shard's fingerprint and how the input was
    partitioned (for Rally.set_input)."""

    def __init__(self, row_ptr, indices, values, num_features, fingerprint, partition):
        self.row_ptr, self.indices, self.values = row_ptr, indices, values
        self.num_rows = len(row_ptr) - 1
        self.num_features = num_features
        self.fingerprint = fingerprint
        self.partition = partition

    def dense(self, d=None):
        """rows x d float32 (d defaults to num_features), missing values 0."""
        d = self.num_features if d is None else d
        x = np.zeros((self.num_rows, d), np.float32)
        rows = np.repeat(np.arange(self.num_rows), np.diff(self.row_ptr).astype(np.int64))
        x[rows, self.indices] = self.values
        return x


def read(path, options=(), rank=0, world=1, mock=None):
    """Reads this rank's shard of path; options are "key=value" strings
    (docs/data.md).  Raises rally.Error with the reader's sentence."""
    lib = _lib.load(_lib.loaded_mock() if mock is None else mock)
    err = ctypes.create_string_buffer(8192)
    opts = ctypes.c_void_p()
    ds = ctypes.c_void_p()
    rc = lib.rally_data_opts_new(ctypes.byref(opts))
    if rc != 0:
        raise from_status(rc, "out of memory for data options")
    try:
        for o in options:
            rc = lib.rally_data_opts_parse(opts, o.encode(), err, len(err))
            if rc != 0:
                raise from_status(rc, "data option %s: %s" % (o, err.value.decode(errors="replace")))
        rc = lib.rally_data_read(path.encode(), opts, rank, world, ctypes.byref(ds), err, len(err))
        if rc != 0:
            raise from_status(rc, err.value.decode(errors="replace"))
    finally:
        lib.rally_data_opts_free(opts)
    try:
        rows = lib.rally_data_num_rows(ds)
        rp = ctypes.POINTER(ctypes.c_uint64)()
        ix = ctypes.POINTER(ctypes.c_uint32)()
        va = ctypes.POINTER(ctypes.c_float)()
        lib.rally_data_csr(ds, ctypes.byref(rp), ctypes.byref(ix), ctypes.byref(va))
        row_ptr = np.ctypeslib.as_array(rp, (rows + 1,)).copy()
        nnz = int(row_ptr[-1])
        indices = np.ctypeslib.as_array(ix, (nnz,)).copy() if nnz else np.zeros(0, np.uint32)
        values = np.ctypeslib.as_array(va, (nnz,)).copy() if nnz else np.zeros(0, np.float32)
        fp = ctypes.create_string_buffer(17)
        lib.rally_data_fingerprint(ds, fp, len(fp))
        return Shard(row_ptr, indices, values, int(lib.rally_data_num_features(ds)),
                     fp.value.decode(), lib.rally_data_partition(ds).decode())
    finally:
        lib.rally_data_free(ds)


# --- the data cursor ---------------------------------------------------------
#
# The same cursor as rally/data.h's (src/data/cursor.c says why it is built
# this way; docs/data.md gives it exactly), in numpy: a Python job and a C job
# of the same seed, count and batch take the same ids at every step, and
# their saved bytes are interchangeable.

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_ROUNDS = 6
_MAGIC = b"RALLYCUR"
CURSOR_NBYTES = 64


def _mix(z):
    """splitmix64's finaliser over a uint64 array (wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _fnv1a(b):
    """64-bit FNV-1a (the saved cursor's checksum)."""
    h = 0xCBF29CE484222325
    for c in b:
        h = ((h ^ c) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def ids_digest(ids):
    """The order-free digest of a multiset of ids (rally_ids_digest): the sum
    modulo 2^64 of a 64-bit hash of each."""
    a = np.asarray(ids, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return int(np.sum(_mix(a + _GOLDEN), dtype=np.uint64)) if a.size else 0


class Cursor:
    """The data position of a minibatch job, the same on every rank: epoch
    e visits the ids 0 .. count-1 in an order from (seed, e) alone; a step
    takes the next ``batch`` of them (the epoch's last step what is left) and
    rank r of w takes [b r // w, b (r + 1) // w) of the b it took.  Call
    ``next(rank, world)`` once per step on every rank, and keep ``state()``
    (bytes) in the checkpoint with the model; ``load(bytes)`` after loading
    it.  A resume at another world size goes on with the same epoch."""

    def __init__(self, count, batch, seed=0):
        if not 1 <= count < 1 << 62 or batch < 1:
            raise ValueError("rally.data.Cursor: want 1 <= count < 2^62 and batch >= 1")
        self.count, self.batch, self.seed = int(count), int(batch), int(seed)
        self.epoch = self.position = 0
        half = 1
        while (1 << (2 * half)) < self.count:
            half += 1
        self._half, self._mask = np.uint64(half), np.uint64((1 << half) - 1)

    def _keys(self, epoch):
        with np.errstate(over="ignore"):
            base = _mix(np.array([self.seed], np.uint64) + _GOLDEN * np.uint64(epoch + 1))
            return _mix(base + _GOLDEN * np.arange(1, _ROUNDS + 1, dtype=np.uint64))

    def ids(self, epoch, first, stop):
        """Positions [first, stop) of epoch's order, as uint64."""
        key = self._keys(epoch)
        x = np.arange(first, stop, dtype=np.uint64)
        todo = np.ones(x.size, bool)
        with np.errstate(over="ignore"):
            while todo.any():  # cycle walking: again where the value is >= count
                l, r = x[todo] >> self._half, x[todo] & self._mask
                for k in key:
                    l, r = r, l ^ (_mix(r ^ k) & self._mask)
                x[todo] = (l << self._half) | r
                todo[todo] = x[todo] >= np.uint64(self.count)
        return x

    def share(self, rank, world):
        """This step's [lo, hi) positions of rank's share, and the step's size."""
        if not 0 <= rank < world:
            raise ValueError("rally.data.Cursor: rank %d outside a world of %d" % (rank, world))
        b = min(self.batch, self.count - self.position)
        return self.position + b * rank // world, self.position + b * (rank + 1) // world, b

    def next(self, rank, world):
        """rank's ids of the step (uint64 array); moves past the whole step."""
        lo, hi, _ = self.share(rank, world)
        out = self.ids(self.epoch, lo, hi)
        self.advance()
        return out

    def advance(self):
        """Moves past one step without computing its ids (every rank's
        share), to the next epoch's start after its last step."""
        self.position += min(self.batch, self.count - self.position)
        if self.position == self.count:
            self.epoch, self.position = self.epoch + 1, 0

    def copy(self):
        """A cursor at the same place that moves on its own."""
        c = Cursor(self.count, self.batch, self.seed)
        c.epoch, c.position = self.epoch, self.position
        return c

    def state(self):
        """The cursor's 64 bytes (rally_cursor_save's)."""
        head = _MAGIC + struct.pack("<II5Q", 1, 0, self.seed, self.count, self.batch,
                                    self.epoch, self.position)
        return head + struct.pack("<Q", _fnv1a(head))

    def load(self, state):
        """Epoch and position from state() bytes (C's or Python's)."""
        b = bytes(state)
        if len(b) != CURSOR_NBYTES or b[:8] != _MAGIC:
            raise ValueError("rally.data.Cursor: the saved cursor is no cursor (size or magic)")
        ver, _, seed, count, batch, epoch, pos, check = struct.unpack("<II6Q", b[8:])
        if ver != 1:
            raise ValueError("rally.data.Cursor: the saved cursor has an unknown version")
        if check != _fnv1a(b[:56]):
            raise ValueError("rally.data.Cursor: the saved cursor fails its checksum")
        if (seed, count, batch) != (self.seed, self.count, self.batch):
            raise ValueError("rally.data.Cursor: the saved cursor is of %d samples, batch %d, "
                             "seed %d; this one of %d, %d, %d"
                             % (count, batch, seed, self.count, self.batch, self.seed))
        if pos >= count:
            raise ValueError("rally.data.Cursor: the saved cursor has a position past its count")
        self.epoch, self.position = epoch, pos
