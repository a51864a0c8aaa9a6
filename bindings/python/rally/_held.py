"""A lazily checkpointed model's values (Rally.lazy_checkpoint): copied at
the checkpoint into buffers reused from one checkpoint to the next, and
pickled in the canonical form (rally/_canon.py) only when a recovering
worker or a snapshot asks for them.

Holding a reference would not do: a recovery may ask for the model in any
collective until the next checkpoint, and training changes it in place
before then (torch's Adam and SGD update the parameters and their state in
place, a BatchNorm its running statistics in the forward pass, a numpy
update may write into its arrays).  So hold() copies every numpy array and
CPU tensor into a buffer of its own and rebuilds the containers around them
(dicts, OrderedDicts, lists, tuples); numbers, strings and other immutable
values are kept as they are, anything else is deep-copied.  A copy is one
memcpy per array, far cheaper than a pickle, and a buffer of the same type,
shape and dtype as last time is written over, so a steady state allocates
no array memory.
"""
from __future__ import annotations

import copy
import sys
from collections import OrderedDict
from typing import Any, List

import numpy as np

from . import _canon

_ATOMS = frozenset((int, float, bool, complex, str, bytes, type(None)))


class Held:
    """One checkpoint's values; hold() replaces them, blob() pickles them
    once."""

    def __init__(self) -> None:
        self.model: Any = None
        self._blob: Any = None
        self._bufs: List[Any] = []  # in the order hold() meets the arrays
        self._at = 0
        self._torch: Any = None

    def hold(self, model: Any) -> None:
        self._torch = sys.modules.get("torch")  # tensors only when torch is in use
        self._at = 0
        self._blob = None
        self.model = self._copy(model)
        del self._bufs[self._at:]  # a model that shrank frees what it no longer has

    def blob(self, what: str) -> bytes:
        """The held model in its canonical form, pickled on the first call
        after hold()."""
        if self._blob is None:
            self._blob = _canon.dumps(self.model, what)
        return self._blob

    def _copy(self, x: Any) -> Any:
        t = type(x)
        if t in _ATOMS or isinstance(x, np.generic):
            return x
        if t is dict or t is OrderedDict:
            out = t((k, self._copy(v)) for k, v in x.items())
            if t is OrderedDict and x.__dict__:  # a state_dict's _metadata
                out.__dict__.update(copy.deepcopy(x.__dict__))
            return out
        if t is list:
            return [self._copy(v) for v in x]
        if t is tuple:
            return tuple(self._copy(v) for v in x)
        if t is np.ndarray and not x.dtype.hasobject:
            b = self._buffer(x, lambda: np.empty(x.shape, x.dtype))
            np.copyto(b, x)
            return b
        torch = self._torch  # (its cheap properties first: is_cpu, not device.type)
        if (torch is not None and t is torch.Tensor and x.is_cpu and not x.requires_grad and
                x.layout is torch.strided and not x.is_quantized):
            b = self._buffer(x, lambda: torch.empty(x.shape, dtype=x.dtype))
            b.copy_(x)
            return b
        return copy.deepcopy(x)  # a Parameter, a GPU tensor, any other object

    def _buffer(self, x: Any, make: Any) -> Any:
        """The next buffer, last time's when it has x's type, shape and dtype."""
        at = self._at
        self._at += 1
        if at < len(self._bufs):
            b = self._bufs[at]
            # dtypes: torch's are singletons (== costs microseconds), numpy's are compared
            if type(b) is type(x) and b.shape == x.shape and (b.dtype is x.dtype or
                                                              b.dtype == x.dtype):
                return b
            self._bufs[at] = make()
        else:
            self._bufs.append(make())
        return self._bufs[at]
