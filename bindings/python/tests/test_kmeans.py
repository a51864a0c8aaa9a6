"""test_kmeans.py — examples/kmeans.py against the C rally-kmeans on the same
data and world size: the same iteration lines and the same model digest,
also after a failure injected into the Python job."""
import os
import re
import subprocess

import pytest

from conftest import EXAMPLES, TOOL, run_job

KMEANS_PY = os.path.join(EXAMPLES, "kmeans.py")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("kmeans") / "blobs.csv")
    subprocess.run([TOOL["rally-datagen"], "--rows", "6000", "--features", "7", "--centers", "6",
                    "--spread", "4", "--seed", "7", "--format", "csv", "-o", path],
                   check=True, timeout=60, stdout=subprocess.DEVNULL)
    return path


def lines(out):
    """The lines both programs print alike (no timings, pids or file names)."""
    keep = [l for l in out.splitlines()
            if re.match(r"^\[\d+\] (iteration \d+ objective|result:|shard \d+ fingerprint)", l)]
    return sorted(re.sub(r" (time [0-9.]+ s|pid \d+)", "", l) for l in keep)


@pytest.mark.parametrize("n,args", [(1, ["-k", "5"]), (3, ["-k", "6", "--iters", "4"]),
                                    (4, ["-k", "9", "--seed", "3", "--fixed-iters",
                                         "--iters", "8"])])
def test_same_digest_as_c(data, n, args):
    common = ["--data", data, "--data-opt", "csv_label=0"] + args
    rc, c_out = run_job(n, TOOL["rally-kmeans"], *common)
    assert rc == 0, c_out
    rc, py_out = run_job(n, KMEANS_PY, *common)
    assert rc == 0, py_out
    assert re.search(r"result: model_digest=[0-9a-f]{16}", py_out), py_out
    assert lines(py_out) == lines(c_out)


def test_recovers_to_the_same_digest(data):
    common = ["--data", data, "--data-opt", "csv_label=0", "-k", "6", "--fixed-iters",
              "--iters", "6"]
    rc, c_out = run_job(3, TOOL["rally-kmeans"], *common)
    assert rc == 0, c_out
    want = re.search(r"result: .*", c_out).group(0)
    # rank 1 dies inside k-means++ (version 0), rank 2 in iteration 3's allreduce
    rc, out = run_job(3, KMEANS_PY, *common, "rally_mock=1,0,3,0", "rally_mock=2,3,0,0",
                      env={"RALLY_PYTHON_MOCK": "1"})
    assert rc == 0, out
    assert "summary: deaths=2 recovered=2" in out, out
    assert "rank 2 restarted: resuming after iteration 2" in out, out
    assert re.search(r"result: .*", out).group(0) == want
