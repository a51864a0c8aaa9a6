"""Exact sums of numpy arrays: rally.XSum, an accumulator per element whose
sum does not depend on the order or the partition of what was added
(rally.h, "exact sums of many values"; docs/determinism.md)."""

import ctypes

import numpy as np

from . import _lib
from .errors import ArgumentError


def _library():
    import os
    mock = _lib.loaded_mock() if _lib.loaded() else \
        os.environ.get("RALLY_PYTHON_MOCK", "").lower() in ("1", "yes", "true", "on")
    return _lib.load(mock)


def _values(what, v):
    a = np.ascontiguousarray(v, dtype=np.float64)  # float32 and ints convert exactly
    if a.dtype != np.float64:
        raise ArgumentError("%s needs numbers" % what)
    return a


class XSum:
    """count exact accumulators, all the empty sum.  add() rows or slices,
    add_at() into bins, round() for this worker's sums alone, and
    Rally.allreduce_xsum() for the sum over every rank, rounded once: the
    same bits for any number of workers and any order of the additions.
    An element takes 561 bytes."""

    def __init__(self, count):
        count = int(count)
        if count < 0:
            raise ArgumentError("XSum needs count >= 0, not %d" % count)
        self._lib = _library()
        self._s = self._lib.rally_xsum_new(count)
        if not self._s:
            raise MemoryError("XSum(%d): out of memory" % count)
        self.count = count

    def __del__(self):
        s, self._s = getattr(self, "_s", None), None
        if s:
            self._lib.rally_xsum_free(s)

    def __len__(self):
        return self.count

    def clear(self):
        """Every element back to the empty sum (the memory is kept)."""
        self._lib.rally_xsum_clear(self._s)
        return self

    def add(self, values, first=0):
        """Adds values into elements first, first + 1, ...: a 1-D array into
        that slice, or each row of a 2-D array into it."""
        a = _values("XSum.add", values)
        if a.ndim == 1:
            a = a.reshape(1, -1)
        if a.ndim != 2:
            raise ArgumentError("XSum.add takes a 1-D or 2-D array, not %d-D" % a.ndim)
        first = int(first)
        if first < 0 or first + a.shape[1] > self.count:
            raise ArgumentError("XSum.add: elements %d .. %d pass the end (%d elements)"
                                % (first, first + a.shape[1] - 1, self.count))
        if a.shape[1] == 0:
            return self
        if a.shape[0] > 1 and a.shape[1] < 64:  # many short rows: one call through bins
            idx = np.tile(np.arange(first, first + a.shape[1], dtype=np.uint64), a.shape[0])
            return self.add_at(idx, a.reshape(-1))
        add = self._lib.rally_xsum_add
        if isinstance(values, np.ndarray) and values.dtype == np.float32:
            a = np.ascontiguousarray(values).reshape(a.shape)  # added as floats, not converted
            add = self._lib.rally_xsum_add_float
        for row in a:
            add(self._s, first, row.ctypes.data, row.size)
        return self

    def add_at(self, index, values):
        """Adds values[k] into element index[k] (as numpy.add.at)."""
        v = _values("XSum.add_at", values).reshape(-1)
        i = np.ascontiguousarray(index, dtype=np.uint64).reshape(-1)
        if i.size != v.size:
            raise ArgumentError("XSum.add_at: %d indices for %d values" % (i.size, v.size))
        if i.size and int(i.max()) >= self.count:
            raise ArgumentError("XSum.add_at: index %d is out of range (%d elements)"
                                % (int(i.max()), self.count))
        if v.size:
            self._lib.rally_xsum_add_at(self._s, i.ctypes.data, v.ctypes.data, v.size)
        return self

    def merge(self, other):
        """Adds every element of other (the same count) into this one's."""
        if not isinstance(other, XSum) or other.count != self.count:
            raise ArgumentError("XSum.merge needs an XSum of %d elements" % self.count)
        self._lib.rally_xsum_merge(self._s, other._s)
        return self

    def round(self, dtype=np.float64):
        """This worker's sums alone, rounded once, as a new array."""
        out = np.empty(self.count, dtype=_float_dtype("XSum.round", dtype))
        self._lib.rally_xsum_round(self._s, _RALLY_FLOAT[out.dtype], out.ctypes.data)
        return out


_RALLY_FLOAT = {np.dtype(np.float32): 8, np.dtype(np.float64): 9}


def _float_dtype(what, dtype):
    d = np.dtype(dtype)
    if d not in _RALLY_FLOAT:
        raise ArgumentError("%s rounds to float32 or float64, not %s" % (what, d))
    return d


def declare(lib):
    """The C signatures (called by _lib when it loads the library)."""
    P, I, Z = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    sigs = {
        "rally_xsum_new": (P, [Z]),
        "rally_xsum_free": (None, [P]),
        "rally_xsum_clear": (None, [P]),
        "rally_xsum_add": (I, [P, Z, P, Z]),
        "rally_xsum_add_float": (I, [P, Z, P, Z]),
        "rally_xsum_add_at": (I, [P, P, P, Z]),
        "rally_xsum_merge": (I, [P, P]),
        "rally_xsum_round": (I, [P, I, P]),
        "rally_allreduce_xsum": (I, [P, P, I, P, _lib.PREPARE_FN, P]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
