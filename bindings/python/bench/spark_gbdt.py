"""spark_gbdt.py SHARED_DIR ROUNDS ROWS TREES — rally.spark's GBDTClassifier
beside xgboost.spark's SparkXGBClassifier on one Spark (local-cluster[2,1,1024],
two executors, 2 workers), the same DataFrame (ROWS x 16, two overlapping
Gaussian blobs, label = the blob; a test set of ROWS / 4 more), TREES trees
of depth 6.  Each round runs, in ABBA order over the rounds: each side
failure-free, then each side with an executor JVM killed -9 halfway.
Prints lines "ROUND KEY VALUE" (bench/lib.sh's format):

  rally_fit, xgb_fit            seconds to a model, failure-free
  rally_tree, xgb_tree          those over TREES (seconds per tree)
  rally_acc, xgb_acc            test accuracy (threshold 0.5)
  rally_logloss, xgb_logloss    test log-loss
  rally_kill, xgb_kill          seconds to a model with the kill: rally's
                                job resumes from its snapshot (every 10 trees)
                                in a retried stage; xgboost.spark's fit fails
                                (a failed barrier result stage is not retried)
                                and is run again from the start, as a user
                                would
The kill: rally's at the first snapshot past half the trees (rank 1's
executor); xgboost's once its training reaches half the trees (a callback
makes a file)."""
import glob
import math
import os
import shutil
import signal
import sys
import threading
import time

import numpy as np
import xgboost

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ["PYSPARK_PYTHON"] = sys.executable

from pyspark.ml.feature import VectorAssembler  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

import rally.spark  # noqa: E402

shared, rounds, rows, trees = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
spark = (SparkSession.builder.master("local-cluster[2,1,1024]").appName("rally-bench")
         .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
         .config("spark.scheduler.barrier.maxConcurrentTasksCheck.interval", "1s")
         .getOrCreate())
spark.sparkContext.setLogLevel("OFF")


def blobs(n, seed):
    g = np.random.default_rng(seed)
    y = g.integers(0, 2, n)
    x = g.normal(size=(n, 16)) * 8 + y[:, None] * 6.0
    df = spark.createDataFrame([(float(y[i]),) + tuple(map(float, x[i])) for i in range(n)],
                               ["label"] + ["f%d" % i for i in range(16)])
    return VectorAssembler(inputCols=["f%d" % i for i in range(16)], outputCol="features") \
        .transform(df).select("label", "features").repartition(2).cache()


train, test = blobs(rows, 1), blobs(rows // 4, 2)
train.count(), test.count()


def quality(model, prob):
    p = model.transform(test).select("label", prob).collect()
    y = np.array([r[0] for r in p])
    q = np.array([float(r[1][1]) if hasattr(r[1], "toArray") else float(r[1]) for r in p])
    q = np.clip(q, 1e-15, 1 - 1e-15)
    return float(np.mean((q > 0.5) == y)), float(-np.mean(y * np.log(q) + (1 - y) * np.log(1 - q)))


def jvm_of(pid):
    while pid > 1:
        with open("/proc/%d/comm" % pid) as f:
            if f.read().strip() == "java":
                return pid
        with open("/proc/%d/stat" % pid) as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    return None


def executors():
    """This application's executor JVMs (not another Spark's on the machine)."""
    app = spark.sparkContext.applicationId.encode()
    out = []
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in argv and app in argv:
            out.append(int(d))
    return out


def wait_slots():
    end = time.monotonic() + 120
    while rally.spark.slots(spark) < 2 and time.monotonic() < end:
        time.sleep(0.2)


def rally_fit(kill):
    d = os.path.join(shared, "rally")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    done = []

    def killer():  # rank 1's executor, once a snapshot past half the trees is in
        half = "snap-%08d" % (int(math.ceil(trees / 20.0)) * 10)
        while not done:
            snaps = glob.glob(os.path.join(d, "snapshots", "*", "snap-*", "MANIFEST.json"))
            if any(os.path.basename(os.path.dirname(s)) >= half for s in snaps):
                for p in os.listdir("/proc"):
                    try:
                        with open("/proc/%s/cmdline" % p, "rb") as f:
                            argv = f.read().split(b"\0")
                    except OSError:
                        continue
                    if argv[0].endswith(b"rally-gbdt") and b"rally_task_id=1" in argv:
                        os.kill(jvm_of(int(p)), signal.SIGKILL)
                        return
            time.sleep(0.01)
    t = threading.Thread(target=killer, daemon=True)
    if kill:
        t.start()
    t0 = time.monotonic()
    m = rally.spark.GBDTClassifier(num_workers=2, n_estimators=trees, max_depth=6,
                                   shared_dir=d, snapshot_every=10, timeout=1800).fit(train)
    s = time.monotonic() - t0
    done.append(1)
    if kill:
        assert rally.spark.run.info["stage_attempts"] == 2, rally.spark.run.info
    return s, m


class Half(xgboost.callback.TrainingCallback):
    """Makes a file once training reaches a tree: the kill's known point."""

    def __init__(self, path, at):
        super().__init__()
        self.path, self.at = path, at

    def after_iteration(self, model, epoch, evals_log):
        if epoch == self.at and not os.path.exists(self.path):
            open(self.path, "w").close()
        return False


def xgb(**kw):
    from xgboost.spark import SparkXGBClassifier

    return SparkXGBClassifier(features_col="features", label_col="label", num_workers=2,
                              n_estimators=trees, max_depth=6, learning_rate=0.3,
                              tree_method="hist", max_bin=255, **kw)


def xgb_fit(kill):
    """Failure-free, or with an executor killed -9 once training reaches half
    the trees: the fit fails and is run again from the start."""
    t0 = time.monotonic()
    if kill:
        mark = os.path.join(shared, "xgb-half")
        if os.path.exists(mark):
            os.unlink(mark)

        def killer():
            while not os.path.exists(mark):
                time.sleep(0.01)
            os.kill(executors()[0], signal.SIGKILL)
        threading.Thread(target=killer, daemon=True).start()
        try:
            xgb(callbacks=[Half(mark, trees // 2)]).fit(train)
            raise AssertionError("xgboost.spark's fit survived an executor's kill")
        except Exception as e:  # noqa: BLE001 - the stage's failure, as Spark raises it
            if isinstance(e, AssertionError):
                raise
        wait_slots()
    m = xgb().fit(train)
    return time.monotonic() - t0, m


def side(name, rnd):
    wait_slots()
    if name == "rally":
        s, m = rally_fit(False)
    else:
        s, m = xgb_fit(False)
    acc, ll = quality(m, "probability")
    print("%d %s_fit %.3f\n%d %s_tree %.5f\n%d %s_acc %.3f\n%d %s_logloss %.2f"
          % (rnd, name, s, rnd, name, s / trees, rnd, name, 100 * acc, rnd, name, 1000 * ll),
          flush=True)
    wait_slots()
    k = rally_fit(True)[0] if name == "rally" else xgb_fit(True)[0]
    print("%d %s_kill %.3f" % (rnd, name, k), flush=True)


for rnd in range(1, rounds + 1):
    order = ("rally", "xgb") if rnd % 2 else ("xgb", "rally")
    for name in order:
        side(name, rnd)
spark.stop()
