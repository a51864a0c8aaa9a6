"""The canonical form of a model: a pickle stream whose bytes depend on the
model's values alone, never on object identity or memory layout.

rally compares the global model's digest across the ranks at every
checkpoint (a restarted rank must hold what the survivors hold), so two
ranks holding equal models must produce equal bytes.  Plain pickle does not
promise that: it writes a second reference to one object as a back
reference (a memo), so a dict whose keys are one shared string (a
restored ``torch.optim.Adam`` state) differs from one whose keys are equal,
distinct strings; an ndarray carries its memory order; a torch tensor
carries an address in its storage key.  Here:

- no memo (the pickler's fast mode): every value is written out in full,
  wherever it appears; a model that refers to itself is refused;
- a numpy array (any dtype without Python objects, any memory order) is
  its dtype's string, its shape and its bytes in C order; a numpy scalar
  and a dtype likewise;
- a torch tensor (any dtype, on any device) is its dtype's name, its
  shape, its bytes in C order and whether it is a Parameter needing a
  gradient: it comes back on the CPU (``load_state_dict`` moves it);
- everything else (dicts in insertion order, lists, tuples, numbers,
  strings, dataclasses and other objects through their ``__reduce__``)
  as pickle writes it.

The stream is an ordinary pickle: ``pickle.loads`` reads it, so snapshots
of earlier versions load as before.  What it gives up: shared references
come back as equal copies, and a set is written in its iteration order
(hold a sorted list instead, or the ranks may disagree).
"""
from __future__ import annotations

import io
import pickle
import sys
from typing import Any

import numpy as np

from .errors import ArgumentError

PROTOCOL = 5


def _spec(dtype: np.dtype) -> Any:
    """A dtype as a value: its string, or its field list when structured."""
    return dtype.str if dtype.fields is None and dtype.subdtype is None else dtype.descr


def _ndarray(spec: Any, shape: tuple, data: bytearray) -> np.ndarray:
    dtype = np.dtype(spec)
    if not len(data):
        return np.empty(shape, dtype)
    return np.frombuffer(data, dtype).reshape(shape)  # writable: data is a bytearray


def _scalar(spec: Any, data: bytes) -> np.generic:
    return np.frombuffer(data, np.dtype(spec))[0]


def _tensor(dtype: str, shape: tuple, data: bytearray, parameter: bool, grad: bool) -> Any:
    import torch

    dt = getattr(torch, dtype)
    if len(data):
        t = torch.frombuffer(data, dtype=torch.uint8).view(dt).reshape(shape)
    else:
        t = torch.empty(shape, dtype=dt)
    if parameter:
        return torch.nn.Parameter(t, requires_grad=grad)
    return t.requires_grad_(grad) if grad else t


def _buffer(contiguous: np.ndarray) -> pickle.PickleBuffer:
    """The array's bytes, always written as a bytearray (a read-only buffer
    would be written as bytes: another opcode, other bytes)."""
    if not contiguous.flags.writeable:
        contiguous = contiguous.copy()
    return pickle.PickleBuffer(contiguous.reshape(-1).view(np.uint8))


class _Pickler(pickle.Pickler):
    def __init__(self, f: io.BytesIO) -> None:
        super().__init__(f, protocol=PROTOCOL)
        self.fast = True  # no memo: equal values, equal bytes
        torch = sys.modules.get("torch")
        self._tensor_type = getattr(torch, "Tensor", None)

    def reducer_override(self, obj: Any) -> Any:
        t = type(obj)
        if t is np.ndarray and not obj.dtype.hasobject:
            return _ndarray, (_spec(obj.dtype), obj.shape, _buffer(np.ascontiguousarray(obj)))
        if isinstance(obj, np.generic) and not isinstance(obj, np.object_):
            return _scalar, (_spec(obj.dtype), obj.tobytes())
        if isinstance(obj, np.dtype):
            return np.dtype, (_spec(obj),)
        if self._tensor_type is not None and isinstance(obj, self._tensor_type):
            return self._reduce_tensor(obj)
        return NotImplemented

    def _reduce_tensor(self, obj: Any) -> Any:
        import torch

        if obj.layout != torch.strided or obj.is_quantized or obj.device.type == "meta":
            return NotImplemented  # torch's own form
        t = obj.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        t = t.resolve_conj().resolve_neg().contiguous()
        raw = t.reshape(-1).view(torch.uint8).numpy()
        return _tensor, (str(t.dtype).replace("torch.", ""), tuple(t.shape), _buffer(raw),
                         isinstance(obj, torch.nn.Parameter), bool(obj.requires_grad))


def dumps(obj: Any, what: str = "checkpoint") -> bytes:
    """obj in its canonical form (module docstring); ArgumentError for a
    model that refers to itself."""
    f = io.BytesIO()
    try:
        _Pickler(f).dump(obj)
    except ValueError as e:
        if "cyclic" not in str(e):
            raise
        kind = str(e).split("object type ")[-1].split(" ")[0]
        raise ArgumentError("%s: the model refers to itself (through a %s); rally keeps a "
                            "model as a tree of values, so that equal models are equal bytes on "
                            "every rank (a bound method of an object in the model refers to "
                            "that object)" % (what, kind)) from None
    return f.getvalue()


loads = pickle.loads
