"""data.py — a worker's shard of a LIBSVM or CSV file, read by rally's own
readers (rally/data.h, docs/data.md), as numpy arrays.

    shard = rally.data.read("blobs.csv", ["csv_label=0"], rank, world)
    x = shard.dense(d)      # rows x d float32, missing values 0

The shard depends only on the file's bytes, the world size and the rank, so
a restarted worker reads the rows it had; and these are the readers the C
programs use, so a Python job and a C job see the same numbers.
"""
import ctypes

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
