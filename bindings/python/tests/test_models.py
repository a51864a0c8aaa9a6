"""test_models.py — the global models users checkpoint survive a kill -9:
torch with Adam, AdamW and RMSprop and an LR scheduler (and each rank's
random number generators, and an extra dict, through rally.torch), a numpy
dict {"W", "m", "v", "step"} whose arrays derive from the loaded checkpoint,
and a dataclass.  Each ends with the failure-free run's digest.  Before the
canonical form (rally/_canon.py) every one of them failed the checkpoint's
digest after the restart: pickle's bytes depend on object identity."""
import re

import pytest

from conftest import digest, run_job, summary

KINDS = ["adam", "adamw", "rmsprop", "numpy", "dataclass"]


@pytest.mark.parametrize("kind", KINDS)
def test_killed_rank_ends_with_the_failure_free_model(kind):
    rc, out = run_job(4, "models.py", kind, timeout=180)
    assert rc == 0, out
    assert summary(out) == (0, 0), out
    rc, killed = run_job(4, "models.py", kind, "--kill", "1:15", timeout=180)
    assert rc == 0, killed
    assert summary(killed) == (1, 1), killed
    assert "rank 1 died (killed by signal 9)" in killed, killed
    assert digest(killed) == digest(out), (killed, out)
    if kind not in ("numpy",):  # the extra state came back whole
        assert re.search(r"^\[0\] losses 30$", killed, re.M), killed


def test_lazy_adam_killed_inside_a_step_ends_with_the_failure_free_model():
    """rt.checkpoint(lazy=True) every step with Adam; rank 1 killed -9 in
    step 15 after the gradients' allreduce, so the survivors step Adam in
    place and wait in the loss's allreduce when the restarted rank asks for
    checkpoint 15: it must get the checkpoint's values, not the tensors as
    they are by then (a lazy checkpoint that held references would)."""
    rc, out = run_job(4, "models.py", "adam", "--lazy", timeout=180)
    assert rc == 0, out
    assert summary(out) == (0, 0), out
    rc, killed = run_job(4, "models.py", "adam", "--lazy", "--kill", "1:15", "--kill-after-grads",
                         timeout=180)
    assert rc == 0, killed
    assert summary(killed) == (1, 1), killed
    assert "rank 1 died (killed by signal 9)" in killed, killed
    assert digest(killed) == digest(out), (killed, out)
    assert re.search(r"^\[0\] losses 30$", killed, re.M), killed
