"""test_jobs.py — Python workers under rally-run: every dtype and operator
against numpy at several world sizes, errors across ranks, and recovery —
kill points of librally_mock and a kill -9 — giving the same model digest
as the run without failures."""
import os
import re
import signal
import time

import pytest

from conftest import Job, digest, run_job, summary


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_every_dtype_and_operator(n):
    rc, out = run_job(n, "ops.py", 37)
    assert rc == 0, out
    for q in range(n):
        assert re.search(r"^\[%d\] ops_ok rank %d checked 38$" % (q, q), out, re.M), out


def test_large_arrays_take_the_ring():
    rc, out = run_job(3, "ops.py", 5000, "rally_ring_threshold_bytes=1024",
                      "rally_chunk_bytes=512")
    assert rc == 0 and out.count("ops_ok") == 3, out


def test_mismatch_is_a_clear_error_on_every_rank():
    rc, out = run_job(3, "mismatch.py")
    for q in range(3):
        line = re.search(r"^\[%d\] mismatch_ok rank %d: (.*)$" % (q, q), out, re.M)
        assert line, out
        assert "RALLY_EMISMATCH" in line.group(1) and "int32" in line.group(1), line.group(1)


def test_worker_exception_is_a_failed_worker():
    # an uncaught exception exits 1 without finalizing: the job's failure, not
    # a crash to recover (docs/recovery.md), so nobody is restarted, rally-run
    # exits with the worker's status and says why once; the survivors' own
    # PeerError lines repeat that cause and are counted, not shown
    rc, out = run_job(3, "boom.py", launcher=["--max-restarts", "1"], timeout=60)
    assert rc == 1, out
    assert out.count("RuntimeError: a bug in the worker's own code") == 1, out  # not restarted
    assert "restarting" not in out, out
    assert re.search(r"^rally-run: rank 1 exited with status 1 \(2 worker lines repeating the "
                     r"abort left out\)$", out, re.M), out


@pytest.fixture(scope="module")
def baseline():
    """The digest of the failure-free run (librally), 4 workers, 6 iterations."""
    rc, out = run_job(4, "ckpt.py", 6)
    assert rc == 0, out
    assert summary(out) == (0, 0)
    return digest(out)


@pytest.mark.parametrize("variant", [[], ["--local"], ["--lazy"]])
def test_checkpoint_kinds_agree(baseline, variant):
    rc, out = run_job(4, "ckpt.py", 6, *variant)
    assert rc == 0, out
    assert digest(out) == baseline


# (program arguments, kill points, deaths); rally_mock=rank,version,seq,ndeath
MOCK_CASES = {
    "allreduce": ([], ["rally_mock=1,2,0,0"], 1),
    "broadcast_then_again": ([], ["rally_mock=2,1,2,0", "rally_mock=2,1,2,1"], 2),
    "two_ranks": ([], ["rally_mock=0,3,1,0", "rally_mock=3,4,3,0"], 2),
    "bootstrap": ([], ["rally_mock=1,0,0,0"], 1),
    "local": (["--local"], ["rally_mock=1,2,1,0", "rally_mock=2,3,0,0"], 2),
    "lazy": (["--lazy"], ["rally_mock=3,2,2,0"], 1),
}


@pytest.mark.parametrize("case", sorted(MOCK_CASES))
def test_mock_failures_recover(baseline, case):
    args, points, deaths = MOCK_CASES[case]
    rc, out = run_job(4, "ckpt.py", 6, *args, *points, launcher=["--max-restarts", "4"],
                      env={"RALLY_PYTHON_MOCK": "1"})
    assert rc == 0, out
    assert out.count("rally mock: killing rank") == deaths, out
    assert summary(out) == (deaths, deaths), out
    assert digest(out) == baseline, out


def test_mock_chosen_by_init(baseline):
    """rally.init(mock=True) loads librally_mock without the setting."""
    rc, out = run_job(4, "ckpt.py", 6, "--mock", "rally_mock=2,2,0,0")
    assert rc == 0, out
    assert summary(out) == (1, 1) and digest(out) == baseline, out


def test_mock_points_need_the_mock_library():
    """Every worker's rally.init raises ConfigError, and each reported it to
    the tracker first: the job's error, printed once by rally-run (the
    workers' tracebacks repeating it are left out), exit status 4, no death."""
    rc, out = run_job(2, "ckpt.py", 2, "rally_mock=1,1,0,0", timeout=60)
    assert rc == 4, out
    cause = "rally_mock=1,1,0,0 needs the failure-injection library"
    assert out.count(cause) == 1, out
    assert re.search(r"^rally-run: .*" + re.escape(cause), out, re.M), out
    assert summary(out) == (0, 0), out


def test_kill9_recovers():
    rc, out = run_job(4, "ckpt.py", 12)
    assert rc == 0, out
    want = digest(out)
    job = Job(4, "ckpt.py", 12, "--pause-ms", 200)  # 2.4 s of iterations
    pid = int(job.wait_for(r"^\[1\] pid 1 (\d+)$").group(1))
    job.wait_for(r"^\[0\] pid 0 ")
    time.sleep(0.5)  # a few iterations in
    os.kill(pid, signal.SIGKILL)
    job.wait_for(r"recovered: epoch")
    time.sleep(0.2)
    pid3 = int(job.wait_for(r"^\[3\] pid 3 (\d+)$").group(1))
    os.kill(pid3, signal.SIGKILL)
    rc, out = job.finish()
    assert rc == 0, out
    assert summary(out) == (2, 2), out
    assert len(re.findall(r"^\[1\] pid 1 ", out, re.M)) == 2, out
    assert digest(out) == want, out


def test_abort_stops_every_rank_and_restarts_nobody():
    rc, out = run_job(3, "abort.py", timeout=60)
    assert rc != 0, out
    assert out.count("saw the abort") == 2, out
    assert out.count("attempt 0") == 3 and "restarting" not in out, out
