"""test_torch.py — rally.torch: tensors reduced in place (the same memory),
clear errors for what it cannot take, gradient buckets, and the MLP example
under rally-run -n 4 with rank 1 killed by SIGKILL at step 50 (librally_mock's
kill point: raise(SIGKILL) there), whose final weights must be the
failure-free run's bits."""
import copy
import os
import re

import numpy as np
import pytest
import torch

import rally
import rally.torch as rt
from conftest import EXAMPLES, readme_program, run_job, summary
from test_local import served


@pytest.fixture
def r():
    h = rally.init(args=[])
    yield h
    rally.finalize()


def test_allreduce_in_place_shares_memory(r):
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    ptr = t.data_ptr()
    assert rt.allreduce_(t, rally.MAX) is t and t.data_ptr() == ptr
    p = torch.nn.Parameter(torch.ones(3))
    rt.broadcast_(p, 0)  # a leaf that requires grad, through its detached view
    assert p.tolist() == [1.0, 1.0, 1.0]


def test_what_it_cannot_take_is_a_clear_error(r):
    with pytest.raises(rally.ArgumentError, match="not contiguous"):
        rt.allreduce_(torch.zeros(4, 4).t())
    with pytest.raises(rally.ArgumentError, match="takes a torch.Tensor"):
        rt.allreduce_(np.zeros(3))
    with pytest.raises(rally.ArgumentError, match="element type|dtype"):
        rt.allreduce_(torch.zeros(3, dtype=torch.complex64))


def test_buckets_split_by_size_and_dtype_and_reuse_their_buffers(r):
    m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 2))  # 72 + 18 floats
    g = rt.GradientBuckets(m.parameters(), bucket_bytes=64 * 4)
    assert [len(b[1]) for b in g.buckets] == [1, 3]  # 64 | 8 + 16 + 2
    m(torch.ones(1, 8)).sum().backward()
    want = [p.grad.clone() for p in m.parameters()]
    bufs = [b[0].data_ptr() for b in g.buckets]
    g.allreduce_()
    g.allreduce_()
    assert all(torch.equal(p.grad, w) for p, w in zip(m.parameters(), want))  # a mean over 1 rank
    assert [b[0].data_ptr() for b in g.buckets] == bufs


def test_a_fresh_start_has_no_state_and_no_extra(r):
    """(The whole state through a restart: test_models.py's torch jobs, whose
    batches come from the restored generators and whose scheduler changes
    the learning rate, so a lost piece changes the digest.)"""
    m = torch.nn.Linear(4, 2)
    opt = torch.optim.AdamW(m.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 1)
    assert rt.load_checkpoint(m, opt, sched, rng=True, with_extra=True) == (0, None)


def test_a_snapshot_of_numpy_arrays_still_loads():
    """Checkpoints taken before the canonical form held numpy arrays where
    the state_dicts hold tensors: they load as tensors."""
    torch.manual_seed(1)
    m = torch.nn.Linear(4, 2)
    old = {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}
    m2 = torch.nn.Linear(4, 2)
    m2.load_state_dict(rt._to_torch(old))
    assert torch.equal(m2.weight, m.weight)



def test_a_lazy_checkpoint_pickles_nothing_and_keeps_the_values_of_its_step(r, monkeypatch):
    """rt.checkpoint(lazy=True) after every Adam step: nothing pickled in 20
    steps (the checkpoint pickled the state every step before), and what a
    recovering rank would get after the next step is the checkpoint's
    state, though the step changed every tensor in place since (the
    parameters, Adam's moments and step counts, BatchNorm's statistics)."""
    pickles = []
    dumps = rally._canon.dumps
    monkeypatch.setattr(rally._canon, "dumps", lambda *a, **k: pickles.append(1) or dumps(*a, **k))
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 1))
    opt = torch.optim.Adam(m.parameters(), lr=0.1)

    def step():
        opt.zero_grad()
        m(torch.randn(16, 4)).pow(2).mean().backward()
        opt.step()

    for s in range(20):
        step()
        rt.checkpoint(m, opt, s + 1, lazy=True)
    assert pickles == []
    want = copy.deepcopy({"module": m.state_dict(), "optimizer": opt.state_dict()})
    step()
    got = served(r)
    assert len(pickles) == 1 and got["step"] == 20
    m2 = copy.deepcopy(m)
    m2.load_state_dict(got["module"])
    for k, v in want["module"].items():
        assert torch.equal(m2.state_dict()[k], v), k
        assert not torch.equal(m.state_dict()[k], v), k
    for i, st in want["optimizer"]["state"].items():
        for k, v in st.items():
            assert torch.equal(torch.as_tensor(got["optimizer"]["state"][i][k]), v), (i, k)
    with pytest.raises(rally.ArgumentError, match="rng=True needs lazy=False"):
        rt.checkpoint(m, opt, 21, lazy=True, rng=True)

def weights(out):
    m = re.findall(r"^\[0\] weights ([0-9a-f]+)$", out, re.M)
    assert len(m) == 1, out
    return m[0]


def test_mlp_killed_at_step_50_ends_with_the_same_weights():
    """Failure-free, a mock death of rank 1 at version 50 and a SIGKILL of
    rank 1 before step 50: the same final weights, bit for bit."""
    prog = os.path.join(EXAMPLES, "torch_mlp.py")
    rc, out = run_job(4, prog, "--steps", "100", timeout=180)
    assert rc == 0, out
    assert summary(out) == (0, 0)
    rc, killed = run_job(4, prog, "--steps", "100", "rally_mock=1,50,0,0",
                         env={"RALLY_PYTHON_MOCK": "1"}, timeout=180)
    assert rc == 0, killed
    assert summary(killed) == (1, 1), killed
    assert weights(killed) == weights(out), (killed, out)
    rc, nine = run_job(4, prog, "--steps", "100", "--kill", "1:50", timeout=180)
    assert rc == 0, nine
    assert summary(nine) == (1, 1), nine
    assert "rank 1 died (killed by signal 9)" in nine, nine
    assert weights(nine) == weights(out), (nine, out)


def test_the_readme_program_trains_the_examples_model(tmp_path):
    """bindings/python/README.md's rally.torch program, as pasted, ends with
    examples/torch_mlp.py's weights (the same model, steps and batches)."""
    prog = readme_program("examples/torch_mlp.py", tmp_path)
    rc, pasted = run_job(4, prog, timeout=180)
    assert rc == 0, pasted
    rc, out = run_job(4, os.path.join(EXAMPLES, "torch_mlp.py"), "--steps", "100", timeout=180)
    assert rc == 0, out
    assert weights(pasted) == weights(out), (pasted, out)
