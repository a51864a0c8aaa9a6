"""test_spark.py — rally.spark on a real Spark: master local-cluster[2,1,1024],
each executor a JVM of its own (pyspark from PyPI in the checkout's .venv;
tests/python.cmake runs this with that interpreter).  A rank's worker
killed -9 is restarted in place by its task (one stage attempt, the
failure-free digest); an executor JVM killed -9 fails the barrier stage,
Spark runs it again and the job resumes from the shared tier's snapshot
(two stage attempts, the failure-free digest); a second job with other
parameters in a directory holding a failed job's snapshots starts fresh;
too few slots is a clear error; rally-gbdt as a Spark ML estimator, with a
worker killed -9; and docs/spark.md's program as pasted.  Every process
started carries a tag in its environment; none may be left at the end."""
import glob
import os
import re
import signal
import sys
import tempfile
import threading
import time
import uuid

import pytest

from conftest import BUILD, PROGS, ROOT, _tagged

# The workers import this build's package and the test's job.
sys.path[:0] = [os.path.join(BUILD, "python"), PROGS]
os.environ["PYTHONPATH"] = os.pathsep.join([os.path.join(BUILD, "python"), PROGS,
                                            os.environ["PYTHONPATH"]])
os.environ["PYSPARK_PYTHON"] = sys.executable  # the executors' Python: this one
os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # loopback only

import rally  # noqa: E402
import rally.spark  # noqa: E402
import spark_job  # noqa: E402

STEPS = 24


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    tag = "spark-%d-%s" % (os.getpid(), uuid.uuid4().hex[:8])
    os.environ["RALLY_TEST_TAG"] = tag  # every JVM, worker and tracker inherits it
    s = (SparkSession.builder.master("local-cluster[2,1,1024]").appName("rally-test")
         .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
         .config("spark.scheduler.barrier.maxConcurrentTasksCheck.interval", "1s")
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    try:
        yield s
    finally:
        from pyspark import SparkContext

        s.stop()
        gw = SparkContext._gateway  # the driver's JVM: it ends when its stdin does
        gw.shutdown()
        gw.proc.stdin.close()
        gw.proc.wait(60)
        SparkContext._gateway = SparkContext._jvm = None
        del os.environ["RALLY_TEST_TAG"]
        end = time.monotonic() + 30
        while _tagged(tag) and time.monotonic() < end:
            time.sleep(0.2)
        left = {}
        for pid in _tagged(tag):
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    left[pid] = f.read().replace(b"\0", b" ")[:200]
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        assert not left, "processes left behind: %s" % left


def frame(s):
    return s.createDataFrame(spark_job.rows(), ["y"] + ["x%d" % i for i in range(6)])


def job(s, **kw):
    return rally.spark.run(s, spark_job.fit, STEPS, data=frame(s), n_workers=2, timeout=240,
                           **kw)


@pytest.fixture(scope="module")
def want(spark):
    a = job(spark)
    assert rally.spark.run.info["stage_attempts"] == 1, rally.spark.run.info
    assert a["version"] == STEPS and a["world"] == 2, a
    return a


def jvm_of(pid):
    while pid > 1:
        with open("/proc/%d/comm" % pid) as f:
            if f.read().strip() == "java":
                return pid
        with open("/proc/%d/stat" % pid) as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    raise AssertionError("no JVM above the worker")


def killer(path, which):
    """A thread that waits for the pid in path, then kills which(pid) -9."""
    killed = []

    def go():
        end = time.monotonic() + 180
        while not os.path.exists(path) and time.monotonic() < end:
            time.sleep(0.05)
        if os.path.exists(path):
            killed.append(which(int(open(path).read())))
            os.kill(killed[0], signal.SIGKILL)
    t = threading.Thread(target=go)
    t.start()
    return t, killed


def test_a_killed_worker_recovers_in_place(spark, want, tmp_path):
    path = str(tmp_path / "pid")
    t, killed = killer(path, lambda pid: pid)
    got = job(spark, rank_at=1, step_at=8, marker=path)
    t.join()
    info = rally.spark.run.info
    assert killed, "the kill point was never reached"
    assert got == want, (got, want)
    assert info["stage_attempts"] == 1 and info["trackers"] == 1, info
    assert info["restarts"] == {0: 0, 1: 1}, info
    lines = "\n".join(rally.spark.run.last_lines)
    assert "restarting it in place" in lines and "recovered" in lines, lines


def test_a_lost_executor_resumes_from_the_snapshot(spark, want, tmp_path):
    path, snaps = str(tmp_path / "pid"), str(tmp_path / "snaps")
    t, killed = killer(path, jvm_of)
    got = job(spark, rank_at=1, step_at=12, marker=path, snapshots=snaps, snapshot_dir=snaps,
              snapshot_every=4)
    t.join()
    info = rally.spark.run.info
    assert killed, "the kill point was never reached"
    assert got == want, (got, want)
    assert info["stage_attempts"] == 2 and info["trackers"] == 2, info
    lines = "\n".join(rally.spark.run.last_lines)
    # the newest complete snapshot when the JVM died: the kill lands at step
    # 12 once one is complete, and the snapshot of 12 may complete before it
    assert re.search(r"\[0\] .*resuming from \S+/snap-000000(04|08|12)\b", lines), lines
    assert os.listdir(snaps) == [], "the job's snapshots stay after success"
    assert not glob.glob(os.path.join(tempfile.gettempdir(), "rally-spark-snap-%s-*"
                                      % info["job"]))


def test_another_job_in_the_same_directory_starts_fresh(spark, want, tmp_path):
    """A job that failed for good (its own code raised) leaves snapshots; a
    job with other parameters in the same directory starts fresh, leaves
    them alone and gets its own failure-free bits; the first job run again
    resumes them."""
    snaps = str(tmp_path / "snaps")
    first = dict(rank_at=1, step_at=9, fail=str(tmp_path / "failed"), snapshot_dir=snaps,
                 snapshot_every=4)
    t0 = time.monotonic()
    with pytest.raises(rally.Error, match="rank 1 fails at step 9"):
        job(spark, **first)
    assert time.monotonic() - t0 < 120
    (left,) = os.listdir(snaps)
    before = sorted(os.listdir(os.path.join(snaps, left)))
    complete = sorted(os.path.basename(os.path.dirname(m)) for m in
                      glob.glob(os.path.join(snaps, left, "snap-*", "MANIFEST.json")))
    assert complete and complete[-1] in ("snap-00000004", "snap-00000008"), before

    other = job(spark, snapshot_dir=snaps, snapshot_every=4, pause=0.04)  # another parameter
    lines = "\n".join(rally.spark.run.last_lines)
    assert "resuming" not in lines, lines
    assert other == want, (other, want)
    assert os.listdir(snaps) == [left] and sorted(os.listdir(os.path.join(snaps, left))) == before

    again = job(spark, **first)
    lines = "\n".join(rally.spark.run.last_lines)
    assert re.search(r"resuming from \S+/%s\b" % complete[-1], lines), lines
    assert again == want and os.listdir(snaps) == []


def test_too_few_slots_is_a_clear_error(spark):
    t = time.monotonic()
    with pytest.raises(rally.ConfigError, match="runs 2 tasks at once, the job needs 3"):
        rally.spark.run(spark, spark_job.fit, STEPS, data=frame(spark), n_workers=3,
                        wait_for_slots=2)
    assert time.monotonic() - t < 30


def test_the_gbdt_estimator_with_a_killed_worker(spark, tmp_path):
    """GBDTClassifier fits rally-gbdt over a DataFrame (a vector column,
    3 partitions for 2 ranks); rank 1's rally-gbdt killed -9 once the first
    snapshot is in the shared tier: the same model, bit for bit, and its
    predictions fit the labels."""
    from pyspark.ml.feature import VectorAssembler

    rows = [(1.0 if r[0] > 0 else 0.0,) + r[1:] for r in spark_job.rows(3000)]
    df = spark.createDataFrame(rows, ["label"] + ["x%d" % i for i in range(6)]).repartition(3)
    df = VectorAssembler(inputCols=["x%d" % i for i in range(6)],
                         outputCol="features").transform(df).select("label", "features")

    def fit(shared):
        return rally.spark.GBDTClassifier(num_workers=2, n_estimators=30, max_depth=4,
                                          shared_dir=shared, snapshot_every=5, timeout=240,
                                          program_args=["--pause-ms", "50"]).fit(df)
    m = fit(str(tmp_path / "a"))
    assert rally.spark.run.info["stage_attempts"] == 1
    shared = str(tmp_path / "b")
    found = []

    def kill():
        end = time.monotonic() + 180
        while time.monotonic() < end and not found:
            if glob.glob(os.path.join(shared, "snapshots", "*", "snap-*", "MANIFEST.json")):
                for d in os.listdir("/proc"):
                    try:
                        argv = open("/proc/%s/cmdline" % d, "rb").read().split(b"\0")
                    except OSError:
                        continue
                    if argv[0].endswith(b"rally-gbdt") and b"rally_task_id=1" in argv:
                        found.append(int(d))
                        os.kill(int(d), signal.SIGKILL)
                        break
            time.sleep(0.02)
    t = threading.Thread(target=kill)
    t.start()
    m2 = fit(shared)
    t.join()
    assert found, "rank 1's rally-gbdt was never seen"
    assert rally.spark.run.info["restarts"][1] == 1, rally.spark.run.info
    assert m2.model["model_digest"] == m.model["model_digest"]
    p = m.transform(df)
    assert p.columns == ["label", "features", "prediction", "probability"]
    right = p.filter(p.prediction == p.label).count()
    assert right > 0.9 * 3000, right


def doc_program(tmpdir):
    """The ```python block of docs/spark.md, written to tmpdir (run as
    pasted, so that it cannot rot), and the lines the doc says it prints
    without and with a failure."""
    text = open(os.path.join(ROOT, "docs", "spark.md")).read()
    prog = re.search(r"^```python\n(.*?)^```$", text, re.S | re.M).group(1)
    path = os.path.join(str(tmpdir), "least_squares.py")
    with open(path, "w") as f:
        f.write(prog)
    shown = re.findall(r"^```\n(weights .*?)^```$", text, re.S | re.M)
    return path, [s.strip().splitlines() for s in shown]


def test_the_doc_program_prints_what_the_doc_says(spark, tmp_path, capsys):
    """docs/spark.md's program, as pasted, in this process (its
    getOrCreate() finds this session): once as it is, once with the
    executor of rank 1 killed -9 once the first snapshot is committed; it
    prints what the doc shows for each."""
    import runpy

    path, (plain, failed) = doc_program(tmp_path)

    def go(snaps):
        argv = sys.argv
        sys.argv = [path, snaps]
        try:
            runpy.run_path(path, run_name="__main__")
        finally:
            sys.argv = argv
        return capsys.readouterr().out.strip().splitlines()

    assert go(str(tmp_path / "a")) == plain
    snaps = str(tmp_path / "b")
    killed = []

    def kill():
        end = time.monotonic() + 180
        while time.monotonic() < end and not killed:
            if glob.glob(os.path.join(snaps, "*", "snap-*", "MANIFEST.json")):
                for d in os.listdir("/proc"):
                    try:
                        argv = open("/proc/%s/cmdline" % d, "rb").read().split(b"\0")
                    except OSError:
                        continue
                    if b"rally_task_id=1" in argv:
                        killed.append(jvm_of(int(d)))
                        os.kill(killed[0], signal.SIGKILL)
                        break
            time.sleep(0.02)
    t = threading.Thread(target=kill)
    t.start()
    out = go(snaps)
    t.join()
    assert killed, "rank 1's worker was never seen"
    assert out == failed
