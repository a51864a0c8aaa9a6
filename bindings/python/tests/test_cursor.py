"""test_cursor.py — the data cursor from Python: rally.data.Cursor (numpy)
takes the ids librally's rally_cursor_* take and saves the same bytes; a
plain numpy loop sees every id once per epoch across a change of the world
size (and not without the cursor restored); and rally.torch.CursorSampler
under a DataLoader with worker processes, in jobs that lose a rank to
SIGKILL (restarted; or lost for good: a shrink 4 -> 3), take one in (a grow
3 -> 4) and resume a snapshot at another N, all mid-epoch: every epoch line
says the whole epoch, as the tally of the ids the training loop was handed.
Its negative control: the same shrink with the sampler's state not loaded
must not."""
import ctypes
import os
import re
import signal

import numpy as np
import pytest

from rally import _lib
from rally.data import CURSOR_NBYTES, Cursor, ids_digest
from conftest import Job, run_job, _tagged


COUNT, BATCH, EPOCHS = 1000, 64, 3  # 16 steps an epoch, the last of 40 ids
WANT = "consumed 1000 samples, ids digest %016x" % ids_digest(range(COUNT))


def c_cursor(lib, count, batch, seed):
    c = ctypes.c_void_p()
    assert lib.rally_cursor_new(count, batch, seed, ctypes.byref(c)) == 0
    return c


def test_numpy_cursor_takes_the_ids_of_the_c_cursor():
    lib = _lib.load()
    for count, batch, world in ((1000, 64, 3), (17, 5, 4), (4097, 100, 7), (1, 1, 2)):
        cs = [c_cursor(lib, count, batch, 11) for _ in range(world)]
        mine = [Cursor(count, batch, 11) for _ in range(world)]
        ids = (ctypes.c_uint64 * (batch // world + 1))()
        n = ctypes.c_size_t()
        buf = ctypes.create_string_buffer(CURSOR_NBYTES)
        for _ in range(3 * (count // batch + 1)):
            for rank in range(world):
                assert lib.rally_cursor_next(cs[rank], rank, world, ids, len(ids),
                                             ctypes.byref(n)) == 0
                assert list(ids[:n.value]) == mine[rank].next(rank, world).tolist()
                assert lib.rally_cursor_save(cs[rank], buf, CURSOR_NBYTES) == 0
                assert buf.raw == mine[rank].state()
        arr = np.arange(count, dtype=np.uint64)
        assert lib.rally_ids_digest(arr.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64)),
                                    count) == ids_digest(arr)
        for c in cs:
            lib.rally_cursor_free(c)


def test_a_numpy_loop_sees_each_id_once_across_a_change_of_world():
    for restore in (True, False):
        seen = np.zeros(COUNT, int)
        ranks = [Cursor(COUNT, BATCH, 3) for _ in range(4)]
        for _ in range(5):  # 5 steps at 4 ranks, then the job goes on with 3
            for r, c in enumerate(ranks):
                np.add.at(seen, c.next(r, 4).astype(np.int64), 1)
        saved = ranks[0].state()
        ranks = [Cursor(COUNT, BATCH, 3) for _ in range(3)]
        for c in ranks:
            if restore:
                c.load(saved)
        while ranks[0].epoch == 0:
            for r, c in enumerate(ranks):
                np.add.at(seen, c.next(r, 3).astype(np.int64), 1)
        assert (seen == 1).all() == restore  # not restored: 320 ids twice


def test_load_refuses_another_cursor():
    c = Cursor(100, 8, 3)
    with pytest.raises(ValueError, match="of 100 samples, batch 8, seed 3"):
        Cursor(100, 9, 3).load(c.state())
    bad = bytearray(c.state())
    bad[40] ^= 1
    with pytest.raises(ValueError, match="checksum"):
        c.load(bytes(bad))


def epochs_said(out, first=1):
    """The epoch lines from first on, each said alike every time."""
    for e in range(first, EPOCHS + 1):
        lines = set(re.findall(r"^\[0\] epoch %d: (.*)$" % e, out, re.M))
        assert lines, "no line for epoch %d\n%s" % (e, out)
        assert lines == {WANT}, "epoch %d: %s; want %s" % (e, lines, WANT)


def job(n, *args, **kw):
    return run_job(n, "cursor_torch.py", COUNT, BATCH, EPOCHS, *args, timeout=240, **kw)


MOCK = {"RALLY_PYTHON_MOCK": "1"}
# rank 2 dies in the ids' allreduce of step 21 (epoch 2, position 256)
DEATH = "rally_mock=2,20,1,0"


def test_sampler_with_workers_whole_epochs_at_n2():
    rc, out = job(2)
    assert rc == 0, out
    epochs_said(out)


def test_sampler_after_a_sigkill_mid_epoch():
    rc, out = job(4, DEATH, env=MOCK)
    assert rc == 0, out
    assert "rank 2 died (killed by signal 9)" in out, out
    assert re.search(r"^\[2\] rank 2 restarted: resuming after step 20 at epoch 2 position 256$",
                     out, re.M), out
    epochs_said(out)


def shrink(*args):
    rc, out = run_job(4, "cursor_torch.py", COUNT, BATCH, EPOCHS, *args, DEATH, env=MOCK,
                      launcher=("--min-workers", "3", "--max-restarts", "0"), timeout=240)
    assert rc == 0, out
    assert "rank 2 lost for good: going on with 3 workers from version 20" in out, out
    return out


def test_sampler_after_a_shrink_mid_epoch():
    epochs_said(shrink())


def test_negative_control_sampler_not_restored():
    """The survivors' samplers stand past step 21, which the job redoes from
    version 20: its ids are never trained on."""
    with pytest.raises(AssertionError, match="epoch 2: .*consumed 936 samples.*want consumed 1000"):
        epochs_said(shrink("--forget"))


def test_sampler_after_a_grow_mid_epoch(tmp_path):
    go = tmp_path / "go"
    j = Job(3, "cursor_torch.py", COUNT, BATCH, EPOCHS, "--gate", 20, go,
            launcher=("--max-workers", "4"), timeout=240)
    j.wait_for(r"^\[0\] at the gate before step 20$", 200)
    j.p.send_signal(signal.SIGUSR2)
    j.wait_for(r"^rally-run: tracker: the worker with task id '3' waits to join", 200)
    go.touch()
    rc, out = j.finish()
    assert rc == 0, out
    assert re.search(r"^rally-run: taking in 1 worker: going on with 4 workers from version 2\d$",
                     out, re.M), out
    assert re.search(r"^\[3\] rank 3 restarted: resuming after step 2\d at epoch 2 position",
                     out, re.M), out
    epochs_said(out)


def test_sampler_resumes_a_snapshot_at_another_n(tmp_path):
    d = str(tmp_path / "snaps")
    j = Job(4, "cursor_torch.py", COUNT, BATCH, EPOCHS, "--pause-ms", 30,
            launcher=("--snapshot-dir", d, "--snapshot-every", "5"), timeout=240)
    j.wait_for(r"^\[0\] rally: rank 0: snapshot: committed .*/snap-00000025 ", 200)
    pids = _tagged(j.tag)
    for p in pids:
        os.kill(p, signal.SIGSTOP)
    for p in pids:
        os.kill(p, signal.SIGKILL)
    j.finish()
    rc, out = run_job(2, "cursor_torch.py", COUNT, BATCH, EPOCHS, "--pause-ms", 30,
                      launcher=("--snapshot-dir", d, "--snapshot-every", "5", "--resume", "latest"),
                      timeout=240)
    assert rc == 0, out
    m = re.search(r"^\[0\] rank 0 restarted: resuming after step (\d+) at epoch", out, re.M)
    assert m and int(m.group(1)) in (25, 30, 35, 40, 45), out
    epochs_said(out, int(m.group(1)) // 16 + 1)
