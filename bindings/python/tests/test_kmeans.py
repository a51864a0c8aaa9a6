"""test_kmeans.py — examples/kmeans.py against the C rally-kmeans on the same
data and world size: the same iteration lines and the same model digest,
also after a failure injected into the Python job; its snapshots keep its
name, options and input fingerprints."""
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


def test_elastic_as_c(data):
    """A rank lost for good (rally-run --min-workers, --max-restarts 0): the
    Python job goes on with 3 workers as the C one does, to the same bits."""
    common = ["--data", data, "--data-opt", "csv_label=0", "-k", "6", "--fixed-iters",
              "--iters", "6", "rally_mock=1,3,0,0"]
    elastic = ["--min-workers", "3", "--max-restarts", "0"]
    rc, c_out = run_job(4, TOOL["rally-kmeans-mock"], *common, launcher=elastic)
    assert rc == 0, c_out
    rc, out = run_job(4, KMEANS_PY, *common, launcher=elastic, env={"RALLY_PYTHON_MOCK": "1"})
    assert rc == 0, out
    assert "rank 1 lost for good: going on with 3 workers from version 3" in out, out
    assert "[2] rank 1 of 3 now: reading its shard again" in out, out
    assert re.search(r"result: .*", out).group(0) == re.search(r"result: .*", c_out).group(0)


def test_elastic_records():
    """Local models as records in Python: a shrink 4 -> 3 moves every
    record to its new owner, and the job ends with the digest of a run on
    3 workers without failures (the job's bits do not depend on N)."""
    rc, plain = run_job(3, "records.py", 600, 12)
    assert rc == 0, plain
    want = re.search(r"digest ([0-9a-f]+)", plain).group(1)
    rc, out = run_job(4, "records.py", 600, 12, "rally_mock=1,4,0,0",
                      launcher=["--min-workers", "3", "--max-restarts", "0"],
                      env={"RALLY_PYTHON_MOCK": "1"})
    assert rc == 0, out
    assert "rank 1 lost for good: going on with 3 workers from version 4" in out, out
    assert re.search(r"digest ([0-9a-f]+)", out).group(1) == want, out


def test_snapshots_keep_app_and_inputs(data, tmp_path):
    common = ["--data", data, "--data-opt", "csv_label=0", "-k", "6", "--fixed-iters",
              "--iters", "4"]
    rc, out = run_job(2, KMEANS_PY, *common, launcher=["--snapshot-dir", str(tmp_path), "--job",
                                                       "km", "--snapshot-every", "2",
                                                       "--keep-snapshots"])
    assert rc == 0, out
    snaps = sorted((tmp_path / "km").glob("snap-*"))
    assert snaps, out
    show = subprocess.run([TOOL["rally-snapshot"], "show", str(snaps[-1])], capture_output=True,
                          text=True, check=True, timeout=60).stdout
    assert re.search(r"^app +kmeans\.py$", show, re.M), show
    assert re.search(r"^app config +--data .* --iters 4$", show, re.M), show
    assert re.search(r"^partitioning +range$", show, re.M), show
    for r in (0, 1):
        fp = re.search(r"^\[%d\] shard %d fingerprint ([0-9a-f]{16}) " % (r, r), out, re.M)
        assert fp, out
        assert re.search(r"^rank %d .* input %s$" % (r, fp.group(1)), show, re.M), show


def test_snapshot_job_is_the_scripts_name(data, tmp_path):
    """Without --job, a Python job's directory is its script's name, not the
    interpreter's, so two scripts do not share one."""
    common = ["--data", data, "--data-opt", "csv_label=0", "-k", "6", "--fixed-iters",
              "--iters", "2"]
    rc, out = run_job(2, KMEANS_PY, *common, launcher=["--snapshot-dir", str(tmp_path),
                                                       "--snapshot-every", "1",
                                                       "--keep-snapshots"])
    assert rc == 0, out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kmeans.py"], out
    assert sorted((tmp_path / "kmeans.py").glob("snap-*")), out


def test_restarted_rank_with_other_input_fails(data, tmp_path):
    """Rank 1 dies in iteration 2 and its replacement reads other rows (a
    wrapper picks the file by a marker the first incarnation left): the job
    fails with rally-run's exit status 4 and one line naming rank 1 and both
    fingerprints; rally_input_check=0 lets the same job finish."""
    import sys
    edited = tmp_path / "edited.csv"
    with open(data) as f:
        rows = f.read().splitlines()
    rows[2500] = ",".join(["0.5"] + rows[2500].split(",")[1:])  # in rank 1's third
    edited.write_text("\n".join(rows) + "\n")
    pick = tmp_path / "pick.sh"
    pick.write_text('#!/bin/sh\n'
                    'm=%s/started.$RALLY_TASK_ID\n'
                    'if [ -e "$m" ]; then d=%s; else d=%s; fi\n'
                    'touch "$m"\n'
                    'exec %s %s --data "$d" "$@"\n' % (tmp_path, edited, data, sys.executable,
                                                       KMEANS_PY))
    pick.chmod(0o755)
    common = ["--data-opt", "csv_label=0", "-k", "6", "--fixed-iters", "--iters", "4",
              "rally_mock=1,2,0,0"]
    rc, out = run_job(3, str(pick), *common, env={"RALLY_PYTHON_MOCK": "1"})
    assert rc == 4, out
    fps = re.findall(r"^\[1\] shard 1 fingerprint ([0-9a-f]{16}) ", out, re.M)
    assert len(fps) == 2 and fps[0] != fps[1], out
    want = ("rank 1 read another input after its restart: incarnation 2 has fingerprint %s "
            "(scheme range), incarnation 1 had %s (scheme range)" % (fps[1], fps[0]))
    assert out.count(want) == 1, out
    assert re.search(r"^rally-run: " + re.escape(want), out, re.M), out
    assert "model_digest=" not in out, out
    for m in tmp_path.glob("started.*"):
        m.unlink()
    rc, out = run_job(3, str(pick), *common, "rally_input_check=0",
                      env={"RALLY_PYTHON_MOCK": "1"})
    assert rc == 0, out
    assert "model_digest=" in out, out


def test_snapshot_reader(data, tmp_path):
    """rally.snapshot reads what the job left, with no job running: the
    listing, the manifest's fields, the global model's bytes (those of
    global.bin after its 72-byte header, docs/snapshot-format.md), and a
    flipped byte found and named."""
    import rally
    import rally.snapshot

    common = ["--data", data, "--data-opt", "csv_label=0", "-k", "6", "--fixed-iters",
              "--iters", "4"]
    rc, out = run_job(2, KMEANS_PY, *common, launcher=["--snapshot-dir", str(tmp_path), "--job",
                                                       "km", "--snapshot-every", "2",
                                                       "--keep-snapshots"])
    assert rc == 0, out
    entries = rally.snapshot.list(tmp_path / "km")
    assert [e.state for e in entries] == ["complete"] * len(entries) and entries, entries
    assert [e.latest for e in entries].count(True) == 1, entries
    newest = [e for e in entries if e.latest][0]
    with rally.snapshot.open(tmp_path / "km" / "latest") as s:
        assert s.path.endswith(newest.name)
        assert s.version == newest.version and s.world == 2 and not s.has_local
        assert s.meta["app_name"] == "kmeans.py"
        assert s.meta["app_config"].endswith("--iters 4")
        assert s.meta["job"] == "km"
        for r in (0, 1):
            fp = re.search(r"^\[%d\] shard %d fingerprint ([0-9a-f]{16}) " % (r, r), out, re.M)
            assert s.fingerprints[r] == fp.group(1)
        assert [f[0] for f in s.files] == ["global.bin"]
        s.verify()
        model = s.read()
        with open(os.path.join(s.path, "global.bin"), "rb") as f:
            assert model == f.read()[72:]
        with pytest.raises(rally.ArgumentError):
            s.read(rank=0)  # a global-only snapshot
        path = s.path
    with open(os.path.join(path, "global.bin"), "r+b") as f:
        f.seek(80)
        b = f.read(1)
        f.seek(80)
        f.write(bytes([b[0] ^ 1]))
    with rally.snapshot.open(path) as s:
        with pytest.raises(rally.Error) as e:
            s.verify()
        assert "global.bin" in str(e.value)
        with pytest.raises(rally.Error):
            s.read()
