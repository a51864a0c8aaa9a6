"""test_canon.py — the canonical form of a model (rally/_canon.py): equal
values are equal bytes, whatever the objects' identities and memory order,
and every kind of value comes back as it went."""
import dataclasses
import pickle

import numpy as np
import pytest

import rally
from rally import _canon


def same(a, b):
    assert _canon.dumps(a) == _canon.dumps(b)


def test_shared_and_distinct_equal_objects_are_the_same_bytes():
    k1, k2 = "".join(["st", "ep"]), "".join(["st", "ep"])
    assert k1 is not k2
    shared = [{k1: 1}, {k1: 2}]
    distinct = [{k1: 1}, {k2: 2}]
    assert pickle.dumps(shared, protocol=5) != pickle.dumps(distinct, protocol=5)
    same(shared, distinct)
    a = np.arange(3.0)
    same([a, a], [a, a.copy()])


def test_arrays_in_any_memory_order_and_after_a_round_trip():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    same(a, np.asfortranarray(a))
    same(a, a[:, ::-1][:, ::-1])          # a strided view
    ro = a.copy()
    ro.flags.writeable = False
    same(a, ro)
    same(a, pickle.loads(pickle.dumps(a)))  # another dtype object
    same({"W": a, "step": np.int64(3)}, _canon.loads(_canon.dumps({"W": a, "step": np.int64(3)})))
    assert _canon.dumps(a) != _canon.dumps(a.astype(np.float64))
    assert _canon.dumps(a) != _canon.dumps(a.reshape(6, 4))


@pytest.mark.parametrize("value", [
    np.zeros((0, 3)), np.array(2.5), np.arange(6, dtype=">i4"),
    np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8", (2,))]), np.array(["ab", "c"]),
    np.float32(1.5), np.bool_(True), np.dtype("u2"), np.array([1, "x", None], dtype=object),
])
def test_numpy_values_come_back_equal_and_writable(value):
    back = _canon.loads(_canon.dumps(value))
    assert type(back) is type(value)
    if isinstance(value, np.ndarray):
        assert back.dtype == value.dtype and back.shape == value.shape
        assert back.tobytes() == value.tobytes() if value.dtype != object else \
            back.tolist() == value.tolist()
        assert back.flags.writeable
    else:
        assert back == value


def test_torch_tensors_and_optimizer_state():
    import torch  # python3-torch: scripts/deps.sh installs it
    t = torch.arange(6, dtype=torch.bfloat16).reshape(2, 3)
    for v in (t, t.t(), torch.tensor(3.0), torch.empty(0, 4), torch.ones(3, dtype=torch.bool),
              torch.nn.Parameter(torch.ones(2))):
        back = _canon.loads(_canon.dumps(v))
        assert type(back) is type(v) and back.dtype == v.dtype and torch.equal(back, v)
        assert back.requires_grad == v.requires_grad
    same(t.t(), t.t().contiguous())

    def make():
        torch.manual_seed(0)
        m = torch.nn.Linear(4, 2)
        o = torch.optim.Adam(m.parameters(), lr=0.01)
        return m, o, torch.optim.lr_scheduler.StepLR(o, 2)

    def step(m, o, s):
        o.zero_grad()
        m(torch.ones(3, 4)).sum().backward()
        o.step()
        s.step()

    def state(m, o, s):
        return {"m": m.state_dict(), "o": o.state_dict(), "s": s.state_dict()}

    a = make()
    for _ in range(3):
        step(*a)
    b = make()
    loaded = _canon.loads(_canon.dumps(state(*a)))
    b[0].load_state_dict(loaded["m"])
    b[1].load_state_dict(loaded["o"])
    b[2].load_state_dict(loaded["s"])
    # plain pickle tells the restored state from the original; the canonical form does not
    assert pickle.dumps(state(*a), protocol=5) != pickle.dumps(state(*b), protocol=5)
    same(state(*a), state(*b))
    step(*a)
    step(*b)
    same(state(*a), state(*b))


@dataclasses.dataclass
class Model:
    w: np.ndarray
    step: int
    history: list = dataclasses.field(default_factory=list)


def test_a_dataclass_is_its_fields():
    w = np.arange(4.0).reshape(2, 2)
    same(Model(w, 1, [0.5]), Model(np.asfortranarray(w), 1, [0.5]))
    back = _canon.loads(_canon.dumps(Model(w, 1, [0.5])))
    assert isinstance(back, Model) and back.step == 1 and np.array_equal(back.w, w)


def test_a_model_that_holds_itself_is_refused_clearly():
    loop = [1]
    loop.append(loop)
    with pytest.raises(rally.ArgumentError, match="refers to itself \\(through a list\\)"):
        _canon.dumps(loop)
