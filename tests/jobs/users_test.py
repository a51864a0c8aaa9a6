"""users_test.py — the programs of examples/users/, written as users write
them, each killed -9 from outside mid-job: the job ends with the digest of
a run without failures, and rally-run counts the death and its recovery.

The kill is made certain to land mid-job: the test waits for a progress
line of an early step, stops the rank (SIGSTOP: the job cannot finish
without it), checks that no final line was printed, then sends SIGKILL.
Run by ctest (tests/users_py.cmake) with the build's rally-run and
libraries; every job is bounded in time and leaves no process behind."""
import os
import re
import signal
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python", "tests"))
from conftest import Job, _no_job_outlives_its_test, run_job, summary  # noqa: E402,F401

USERS = os.path.join(ROOT, "examples", "users")


def prog(name):
    return os.path.join(USERS, name)


def digest(text):
    m = re.findall(r"^\[0\] digest ([0-9a-f]{16})$", text, re.M)
    assert len(m) == 1, text
    return m[0]


def children(parent, what):
    """(pid, /proc/PID/what as bytes) of each child of parent."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) != parent:
                    continue
            with open("/proc/%s/%s" % (d, what), "rb") as f:
                yield int(d), f.read()
        except (OSError, ValueError, IndexError):
            pass


def worker_pid(job, rank):
    """The pid of the worker rally-run started as rank (its child, not the
    worker's own children, which carry the same environment)."""
    needle = b"RALLY_TASK_ID=%d" % rank
    for pid, env in children(job.p.pid, "environ"):
        if needle in env.split(b"\0"):
            return pid
    raise AssertionError("no worker of rank %d:\n%s" % (rank, job.text()))


def kill9_mid_job(job, rank, early, final=r"^\[0\] digest "):
    job.wait_for(early, seconds=120)
    pid = worker_pid(job, rank)
    os.kill(pid, signal.SIGSTOP)
    assert not re.search(final, job.text(), re.M), "the job ended before the kill"
    os.kill(pid, signal.SIGKILL)
    return pid


def failure_free_and_killed(name, rank, early, *args, n=4, timeout=240, env=None):
    rc, clean = run_job(n, prog(name), *args, timeout=timeout, env=env)
    assert rc == 0, clean
    assert summary(clean) == (0, 0), clean
    job = Job(n, prog(name), *args, timeout=timeout, env=env)
    kill9_mid_job(job, rank, early)
    rc, killed = job.finish()
    assert rc == 0, killed
    assert "rank %d died (killed by signal 9)" % rank in killed, killed
    assert summary(killed) == (1, 1), killed
    assert digest(killed) == digest(clean), (killed, clean)
    return clean, killed


def test_torch_adam_with_a_scheduler_and_a_dataloader():
    """torchrun's variables, Adam, OneCycleLR, DataLoader workers."""
    failure_free_and_killed("torch_adam.py", 1, r"^\[0\] epoch 1 step 40 ")


def test_adam_lazy_checkpoint_rank0_lost():
    """The same loop with a lazy checkpoint every step (Adam changes the
    tensors in place after it), rank 0 killed -9."""
    failure_free_and_killed("torch_adam.py", 0, r"^\[0\] epoch 1 step 40 ", "--lazy")


def test_numpy_dict_model():
    failure_free_and_killed("numpy_logreg.py", 2, r"^\[0\] epoch 5 loss ")


def test_sklearn_partial_fit_loop():
    """The estimator itself is the checkpoint (its arrays inside)."""
    failure_free_and_killed("sgd_partial_fit.py", 3, r"^\[0\] batch 50 accuracy ")


def test_a_script_that_reports_progress(tmp_path):
    """--progress counts to the end through the restart; the events say who
    died and that the job recovered."""
    events = str(tmp_path / "events.jsonl")
    rc, clean = run_job(4, prog("progress.py"), "--iterations", "300", timeout=240)
    assert rc == 0, clean
    job = Job(4, prog("progress.py"), "--iterations", "300", launcher=("--progress", "--events",
                                                                       events), timeout=240)
    kill9_mid_job(job, 1, r"^rally-run: progress: iteration \d+ of 300")
    rc, killed = job.finish()
    assert rc == 0, killed
    assert summary(killed) == (1, 1), killed
    assert digest(killed) == digest(clean), (killed, clean)
    assert re.search(r"^rally-run: progress: iteration 300 of 300 \(100%\)", killed, re.M), killed
    text = open(events).read()
    assert '"event":"death"' in text and '"rank":1' in text, text


def dask_workers(parent):
    """The Dask worker processes a script's LocalCluster started: its
    children that multiprocessing spawned."""
    return [pid for pid, cmd in children(parent, "cmdline") if b"spawn_main" in cmd]


def test_dask_with_a_dataframe():
    """The script starts its own cluster; one of its Dask worker processes
    (each runs a rank) is killed -9 mid-job."""
    import subprocess
    import tempfile
    import uuid

    from conftest import RALLY_RUN, _tagged

    def start():
        tag = "users-%s" % uuid.uuid4().hex[:8]
        out = tempfile.NamedTemporaryFile(prefix="rally-users-", delete=False)
        env = dict(os.environ, RALLY_TEST_TAG=tag, PYTHONUNBUFFERED="1",
                   PATH=os.path.dirname(RALLY_RUN) + os.pathsep + os.environ["PATH"])
        p = subprocess.Popen([sys.executable, prog("dask_frame.py")], stdout=out,
                             stderr=subprocess.STDOUT, env=env, start_new_session=True)
        return p, out.name, tag

    def finish(p, path, tag):
        try:
            p.wait(timeout=240)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            deadline = time.monotonic() + 15
            while _tagged(tag) and time.monotonic() < deadline:
                time.sleep(0.2)
            left = _tagged(tag)
            for pid in left:
                os.kill(pid, signal.SIGKILL)
        text = open(path, errors="replace").read()
        os.unlink(path)
        assert not left, "processes left behind: %s\n%s" % (left, text)
        assert p.returncode == 0, text
        m = re.findall(r"^digest ([0-9a-f]{16})$", text, re.M)
        assert len(m) == 1, text
        return m[0], text

    want, _ = finish(*start())
    p, path, tag = start()
    end = time.monotonic() + 120
    while not re.search(r"iteration 50 mse", open(path, errors="replace").read()):
        assert time.monotonic() < end and p.poll() is None, open(path).read()
        time.sleep(0.05)
    workers = dask_workers(p.pid)
    assert len(workers) == 4, workers
    os.kill(workers[1], signal.SIGSTOP)
    assert not re.search(r"^digest ", open(path).read(), re.M), "the job ended before the kill"
    os.kill(workers[1], signal.SIGKILL)
    got, text = finish(p, path, tag)
    assert got == want, text
    assert "recovered" in text, text
