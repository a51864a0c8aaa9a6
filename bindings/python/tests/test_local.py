"""test_local.py — the package in this process, a job of one (no launcher):
life cycle, clear errors for bad arguments and closed handles, C messages
carried by rally.Error, checkpoints of objects."""
import ctypes
import pickle
import sys

import numpy as np
import pytest

import rally


@pytest.fixture
def r():
    h = rally.init(args=[])
    yield h
    rally.finalize()


def test_alone_is_rank_0_of_1(r):
    assert (r.rank(), r.world_size(), r.is_distributed()) == (0, 1, False)
    assert rally.rank() == 0 and rally.world_size() == 1
    assert r.processor_name()


def test_context_manager_finalizes():
    with rally.init(args=[]) as h:
        a = np.arange(4.0)
        assert h.allreduce(a, rally.SUM) is a
    assert h.closed
    with pytest.raises(rally.StateError, match="closed"):
        h.allreduce(a, rally.SUM)
    with pytest.raises(rally.StateError, match="rally.init"):
        rally.allreduce(a, rally.SUM)


def test_a_failing_block_does_not_finalize():
    with pytest.raises(ZeroDivisionError):
        with rally.init(args=[]) as h:
            1 / 0
    assert h.closed  # dropped: the launcher sees a worker that failed
    with pytest.raises(rally.StateError):
        rally.rank()
    with pytest.raises(rally.ArgumentError):
        with rally.init(args=[]) as h:
            h.broadcast(np.zeros(1), 3)
    assert h.closed  # a rally.Error: finalized


def test_closed_handle_everywhere(r):
    r.finalize()
    r.finalize()  # a second finalize does nothing
    for call in (lambda: r.rank(), lambda: r.broadcast(np.zeros(2)), lambda: r.allgather(1),
                 lambda: r.checkpoint(1), lambda: r.load_checkpoint(), lambda: r.version(),
                 lambda: r.tracker_print("x"), lambda: r.lazy_checkpoint(1)):
        with pytest.raises(rally.StateError) as e:
            call()
        assert e.value.status == 10 and e.value.status_name == "RALLY_ESTATE"


def test_init_twice_is_refused(r):
    with pytest.raises(rally.StateError, match="already"):
        rally.init(args=[])


@pytest.mark.parametrize("dtype", [np.bool_, np.float16, np.complex64, np.complex128, object,
                                   np.dtype("U3"), np.dtype([("a", np.int32), ("b", np.float32)])])
def test_wrong_dtype(r, dtype):
    a = np.zeros(3, dtype)
    with pytest.raises(rally.ArgumentError) as e:
        r.allreduce(a, rally.SUM)
    assert str(np.dtype(dtype)) in str(e.value) or "object" in str(e.value)
    assert isinstance(e.value, ValueError) and e.value.status == 1


def test_every_rally_dtype_is_taken(r):
    for dt in rally.DTYPES:
        a = np.arange(5).astype(dt)
        r.allreduce(a, rally.MAX)
        assert np.array_equal(a, np.arange(5).astype(dt))
    for name in ("intc", "uintc", "int_", "longlong", "ulonglong", "single", "double"):
        r.allreduce(np.zeros(2, getattr(np, name)), rally.SUM)


def test_bad_arrays(r):
    with pytest.raises(rally.ArgumentError, match="C-contiguous"):
        r.allreduce(np.arange(10.0)[::2], rally.SUM)
    with pytest.raises(rally.ArgumentError, match="C-contiguous"):
        r.broadcast(np.zeros((3, 4)).T, 0)
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(rally.ArgumentError, match="read-only"):
        r.allreduce(ro, rally.SUM)
    with pytest.raises(rally.ArgumentError, match="numpy.ndarray"):
        r.allreduce([1.0, 2.0], rally.SUM)
    with pytest.raises(rally.ArgumentError, match="byte order"):
        r.allreduce(np.zeros(3, ">f8" if sys.byteorder == "little" else "<f8"), rally.SUM)


def test_bad_operators(r):
    with pytest.raises(rally.ArgumentError, match="operator"):
        r.allreduce(np.zeros(2), 7)
    with pytest.raises(rally.ArgumentError, match="BITOR"):
        r.allreduce(np.zeros(2), rally.BITOR)
    red = r.register_reducer(np.maximum, np.float32)
    with pytest.raises(rally.ArgumentError, match="float32"):
        r.allreduce(np.zeros(2), red)


def test_c_message_and_status(r):
    with pytest.raises(rally.ArgumentError) as e:
        r.broadcast(np.zeros(2), 5)
    # the sentence is the C library's (rally_errmsg), the status its code
    assert "root 5 is not a rank" in e.value.message
    assert (e.value.status, e.value.status_name) == (1, "RALLY_EINVAL")
    with pytest.raises(rally.ArgumentError, match="id in 0..255"):
        r.register_reducer(np.add, np.int32, id=256)


def test_unknown_setting_is_config_error():
    with pytest.raises(rally.ConfigError) as e:
        rally.init(args=["rally_no_such_key=1"])
    assert "not a known rally_key=value setting" in e.value.message
    assert e.value.status == 4
    rally.finalize()


def test_settings_are_taken_from_sys_argv(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["train.py", "--lr", "0.1", "rally_spin_us=10"])
    with rally.init():
        assert sys.argv == ["train.py", "--lr", "0.1"]


def test_callback_exceptions_reach_the_caller(r):
    def prepare(a):
        raise KeyError("from prepare")
    with pytest.raises(KeyError, match="from prepare"):
        r.allreduce(np.zeros(3), rally.SUM, prepare=prepare)
    filled = np.zeros(3)
    r.allreduce(filled, rally.SUM, prepare=lambda a: a.fill(2.5))
    assert filled.tolist() == [2.5] * 3


def test_objects_alone(r):
    obj = {"a": np.arange(3), "b": [1, "x"]}
    got = r.broadcast(obj, 0)
    assert got["b"] == obj["b"] and np.array_equal(got["a"], obj["a"])
    assert r.allgather(("x", 1)) == [("x", 1)]


def test_checkpoint_versions_and_pickles(r):
    assert r.load_checkpoint() == (0, None)
    model = {"w": np.linspace(0, 1, 5), "note": "any picklable object"}
    r.checkpoint(model)
    assert r.version() == 1
    with pytest.raises(rally.ArgumentError, match="local model always or never"):
        r.checkpoint(model, local_model=[1, 2, 3])
    r.lazy_checkpoint(model)
    r.checkpoint(model)
    assert rally.version() == 3

    class Unpicklable:
        def __reduce__(self):
            raise TypeError("cannot pickle this")
    with pytest.raises(TypeError):
        r.checkpoint(Unpicklable())
    assert r.version() == 3
    assert pickle.DEFAULT_PROTOCOL <= rally.PICKLE_PROTOCOL == 5



def served(r):
    """What a recovering worker would get of the newest lazy checkpoint:
    the serialize callback rally calls, asked for the size, then the bytes."""
    at = r._held_at + 1
    n = r._lazy_cfn(at, None, 0)
    buf = ctypes.create_string_buffer(n)
    assert r._lazy_cfn(at, buf, n) == n
    return pickle.loads(buf.raw)


def test_a_lazy_checkpoint_holds_its_values_and_pickles_only_when_asked(r, monkeypatch):
    """A numpy Adam updating its arrays in place, a lazy checkpoint a step:
    no pickle in 20 steps (the old lazy checkpoint pickled nothing either
    but served the arrays as they are now), the arrays copied into the same
    two sets of buffers every step, and a recovery after the next in-place
    update gets the checkpoint's values, pickled once however often asked."""
    pickles = []
    dumps = rally._canon.dumps
    monkeypatch.setattr(rally._canon, "dumps", lambda *a, **k: pickles.append(1) or dumps(*a, **k))
    rng = np.random.default_rng(3)
    model = {"W": np.zeros((16, 4)), "m": np.zeros((16, 4)), "v": np.zeros((16, 4)), "step": 0}

    def step():
        g = rng.standard_normal((16, 4))
        model["m"] *= 0.9
        model["m"] += 0.1 * g
        model["v"] *= 0.999
        model["v"] += 0.001 * g * g
        model["W"] -= 0.01 * model["m"] / (np.sqrt(model["v"]) + 1e-8)
        model["step"] += 1

    bufs = []
    for _ in range(20):
        step()
        r.lazy_checkpoint(model)
        bufs.append([id(b) for b in r._held[r._held_at]._bufs])
    assert pickles == []
    assert bufs[2:] == bufs[:-2] and len(bufs[0]) == 3  # two sets, written over
    want = {k: np.copy(v) for k, v in model.items()}
    step()
    for _ in range(2):
        got = served(r)
        assert got["step"] == want["step"] == 20
        assert all(np.array_equal(got[k], want[k]) for k in "Wmv")
        assert not np.array_equal(model["W"], want["W"])
    assert len(pickles) == 1

def test_digest64_is_the_bytes_digest():
    b = bytes(range(200)) * 3
    d = rally.digest64(b)
    assert d == rally.digest64(bytearray(b)) == rally.digest64(np.frombuffer(b, np.uint8))
    assert d == rally.digest64(np.frombuffer(b, np.uint8).reshape(30, 20))
    assert d != rally.digest64(b[:-1]) and 0 <= d < 2 ** 64
    assert rally.digest64(b"") == rally.digest64(np.zeros(0, np.uint8))
    with pytest.raises(rally.ArgumentError, match="contiguous"):
        rally.digest64(np.arange(10.0)[::2])


def test_attempt_and_abort_alone(r):
    assert r.attempt() == 0 and rally.attempt() == 0
    r.abort("bad input line 17", 3)
    with pytest.raises(rally.StateError, match="bad input line 17 \\(rally_abort code 3\\)"):
        r.allreduce(np.arange(2.0), rally.SUM)


def test_report_alone(r):
    """Alone (rank 0 of 1) a report has nobody to go to: checked, nothing
    else; a bad key or value is ArgumentError (RALLY_EINVAL) and spends
    nothing."""
    r.report_total(10)
    rally.report_total(0)
    for it in range(3):
        r.report("objective", 1.5 * it)
        rally.report("train.loss:mean-1", np.float32(0.25))
    for key in ("", "two words", "a/b", "é", "k" * 65):
        with pytest.raises(rally.ArgumentError, match="report: the key") as e:
            rally.report(key, 1.0)
        assert e.value.status_name == "RALLY_EINVAL"
    r.report("k" * 64, 1.0)
    for bad in (float("nan"), float("inf"), -np.inf):
        with pytest.raises(rally.ArgumentError, match="not a finite number"):
            r.report("loss", bad)
    with pytest.raises(rally.ArgumentError):
        r.report(7, 1.0)
    with pytest.raises(rally.ArgumentError):
        r.report("loss", "low")
    with pytest.raises(rally.ArgumentError):
        r.report_total(-1)
    a = np.arange(3.0)
    assert r.allreduce(a, rally.SUM) is a  # nothing was spent


def test_every_public_call_is_typed_and_documented():
    """py.typed promises hints: every public function and method has a
    docstring and annotations that resolve (typing.get_type_hints)."""
    import inspect
    import typing

    calls = [getattr(rally, n) for n in rally.__all__ if inspect.isfunction(getattr(rally, n))]
    calls += [f for n, f in vars(rally.Rally).items() if inspect.isfunction(f) and not n.startswith("_")]
    assert len(calls) > 40
    for f in calls:
        assert f.__doc__ and f.__doc__.strip(), f.__qualname__
        assert "return" in typing.get_type_hints(f), f.__qualname__


def test_allreduce_object_alone():
    with rally.init([]) as r:
        assert r.allreduce_object({"a": [1]}, lambda a, b: a) == {"a": [1]}
        assert rally.allreduce_object(2.5, rally.SUM_EXACT) == 2.5
        with pytest.raises(rally.ArgumentError):
            r.allreduce_object(1, "sum")
        with pytest.raises(rally.ArgumentError):
            r.allreduce_object("x", rally.SUM_EXACT)
