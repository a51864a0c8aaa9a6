"""test_dask.py — rally.dask on a LocalCluster of 4 worker processes: the
k-means of examples/dask_kmeans.py failure-free (the same bits as the same job
under rally-run), with rank 1's Dask worker killed by SIGKILL mid-job (its
nanny starts a new one, the rank is run again there and recovers in place:
the same digest), and a cluster too small for the job (a clear error, no
hang); and the same job on a dask.dataframe."""
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest

from conftest import EXAMPLES, PROGS, readme_program, run_job

import distributed  # noqa: E402,F401 - python3-distributed, installed by make deps
import dask.array as da  # noqa: E402

import rally  # noqa: E402
import rally.dask  # noqa: E402

# the workers import the example and the test's kill point
os.environ["PYTHONPATH"] = os.pathsep.join([EXAMPLES, PROGS, os.environ["PYTHONPATH"]])
sys.path[:0] = [EXAMPLES, PROGS]
import dask_job  # noqa: E402
import dask_kmeans  # noqa: E402
import models  # noqa: E402

K, ITERS = dask_kmeans.K, dask_kmeans.ITERS


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=4, processes=True, threads_per_worker=1, dashboard_address=None,
                      silence_logs=40) as c, Client(c) as client:
        yield c, client


def run(client, **kw):
    x = da.from_array(dask_kmeans.points(), chunks=(dask_kmeans.CHUNK, 2))  # 8 partitions
    return rally.dask.run(client, dask_kmeans.kmeans, K, ITERS, data=x, n_workers=4,
                          timeout=240, **kw)


def test_failure_free_equals_the_same_job_under_rally_run(cluster):
    _, client = cluster
    a, b = run(client), run(client)
    assert a == b and a["world"] == 4 and a["version"] == ITERS, (a, b)
    rc, out = run_job(4, os.path.join(PROGS, "dask_job.py"))
    assert rc == 0, out
    assert re.search(r"^\[0\] result %s$" % a["digest"], out, re.M), (a, out)


def kmeans_frames(r, parts, k, iters):
    return dask_kmeans.kmeans(r, [p.to_numpy() for p in parts], k, iters)


def test_a_dataframe_gives_the_arrays_bits(cluster):
    """A dask.dataframe's partitions (pandas frames, as xgboost.dask's
    DaskDMatrix takes them) reach the ranks in the same blocks as the
    array's chunks: the same digest."""
    import dask.dataframe as dd
    import pandas as pd

    _, client = cluster
    want = run(client)
    frame = dd.from_pandas(pd.DataFrame(dask_kmeans.points(), columns=["a", "b"]),
                           npartitions=len(dask_kmeans.points()) // dask_kmeans.CHUNK, sort=False)
    assert frame.npartitions == 8
    got = rally.dask.run(client, kmeans_frames, K, ITERS, data=frame, n_workers=4, timeout=240)
    assert got == want, (got, want)


def test_killed_dask_worker_recovers_in_place(cluster):
    c, client = cluster
    want = run(client)
    path = os.path.join(tempfile.mkdtemp(), "pid")
    pids_before = set(client.run(os.getpid).values())
    killed = []

    def killer():
        end = time.monotonic() + 120
        while not os.path.exists(path) and time.monotonic() < end:
            time.sleep(0.05)
        if os.path.exists(path):
            pid = int(open(path).read())
            killed.append(pid)
            os.kill(pid, signal.SIGKILL)

    t = threading.Thread(target=killer)
    t.start()
    got = run(client, on_iteration=dask_job.KillAt(1, 5, path))
    t.join()
    assert killed and killed[0] in pids_before, (killed, pids_before)
    assert got["digest"] == want["digest"], (got, want)
    assert got["version"] == ITERS
    lines = "\n".join(rally.dask.run.last_lines)
    assert "rank 1 failed" in lines and "recovered" in lines, lines
    client.wait_for_workers(4, timeout=60)  # the nanny's new worker is in
    assert killed[0] not in set(client.run(os.getpid).values())


def killer_of(path, killed):
    """A thread that kills the process whose pid KillAt writes to path."""
    def kill():
        end = time.monotonic() + 120
        while not os.path.exists(path) and time.monotonic() < end:
            time.sleep(0.05)
        if os.path.exists(path):
            killed.append(int(open(path).read()))
            os.kill(killed[0], signal.SIGKILL)
    t = threading.Thread(target=kill)
    t.start()
    return t


def test_a_multi_array_model_recovers_in_place(cluster):
    """A dict of arrays derived from the loaded checkpoint ({"W", "m", "v",
    "step"}: Adam in numpy, tests/progs/models.py) through rally.dask, rank
    2's Dask worker killed -9 at step 10: the failure-free weights, which
    are also the same job's under rally-run.  (Pickled plainly, the
    restarted rank's equal arrays were other bytes: MismatchError.)"""
    _, client = cluster
    x = da.from_array(models.rows(), chunks=(models.CHUNK, models.IN + models.OUT))

    def go(on_step=None):
        return rally.dask.run(client, models.dict_adam, 30, on_step, data=x, n_workers=4,
                              timeout=240)
    want = go()
    path, killed = os.path.join(tempfile.mkdtemp(), "pid"), []
    t = killer_of(path, killed)
    got = go(dask_job.KillAt(2, 10, path))
    t.join()
    assert killed, "the kill point was never reached"
    assert got == want, (got, want)
    assert "rank 2 failed" in "\n".join(rally.dask.run.last_lines)
    client.wait_for_workers(4, timeout=60)
    rc, out = run_job(4, "models.py", "numpy", timeout=120)
    assert rc == 0, out
    assert re.search(r"^\[0\] digest %s$" % want, out, re.M), (want, out)


def test_a_failed_job_resumes_from_its_snapshots(cluster, tmp_path):
    """Snapshots every 4 versions; rank 1's own code fails at step 14, which
    ends the job (rally.dask.run raises it); run again with resume="latest",
    it continues from version 12 to the failure-free weights, and a fresh
    start over the failed run's snapshots is refused."""
    _, client = cluster
    x = da.from_array(models.rows(), chunks=(models.CHUNK, models.IN + models.OUT))
    snaps = str(tmp_path / "snaps")

    def go(on_step=None, **kw):
        return rally.dask.run(client, models.dict_adam, 30, on_step, data=x, n_workers=4,
                              timeout=240, snapshot_dir=snaps, snapshot_every=4, **kw)
    want = rally.dask.run(client, models.dict_adam, 30, None, data=x, n_workers=4, timeout=240)
    with pytest.raises(RuntimeError, match="rank 1 fails at step 14"):
        go(models.FailOnce(1, 14, str(tmp_path / "failed")))
    assert os.path.isdir(os.path.join(snaps, "dict_adam", "snap-00000012")), os.listdir(snaps)
    with pytest.raises(rally.Error, match="snapshot"):
        go()  # a fresh start into a directory with another run's snapshots
    assert go(resume="latest") == want


def test_too_few_workers_is_a_clear_error(cluster):
    _, client = cluster
    t = time.monotonic()
    with pytest.raises(rally.ConfigError, match="the cluster has 4 workers, the job needs 6"):
        rally.dask.run(client, dask_kmeans.kmeans, K, ITERS, n_workers=6, wait_for_workers=2)
    assert time.monotonic() - t < 30


def script(path, *args, cwd=None):
    """Runs a Python program that starts a cluster of its own, in a session
    of its own so that its processes go with it; returns (stdout, stderr)
    and asserts it exited 0."""
    p = subprocess.Popen([sys.executable, path] + list(args), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=cwd, start_new_session=True)
    try:
        out, err = p.communicate(timeout=240)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 0, err
    return out, err


def test_the_example_with_a_kill_prints_the_failure_free_digest(cluster):
    """examples/dask_kmeans.py as a user runs it (its own LocalCluster):
    --kill 1 makes rank 1's Dask worker SIGKILL itself at iteration 5, and
    the centroids printed are the failure-free job's."""
    _, client = cluster
    want = run(client)["digest"]
    out, err = script(os.path.join(EXAMPLES, "dask_kmeans.py"), "--kill", "1")
    assert "k-means on 4 Dask workers: 12 iterations, centroids %s" % want in out, (out, err)
    assert "rank 1 failed" in err and "recovered" in err, err


def test_the_readme_program_prints_the_examples_digest(cluster, tmp_path):
    """bindings/python/README.md's rally.dask program, run as pasted (its own
    LocalCluster), prints the centroids the example's job gives."""
    _, client = cluster
    want = run(client)["digest"]
    prog = readme_program("examples/dask_kmeans.py", tmp_path)
    out, err = script(prog, cwd=str(tmp_path))
    assert "k-means on 4 Dask workers: 12 iterations, centroids %s" % want in out, (out, err)
