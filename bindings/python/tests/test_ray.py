"""test_ray.py — rally.ray on a real local Ray cluster: a head node and a
second node, each a `ray start` of its own on its own loopback address
(127.0.0.2, 127.0.0.3; a third, 127.0.0.4, comes in as a replacement), 2
CPUs each, so a job of 4 ranks fills both.  docs/ray.md's program, as
pasted there, prints what the doc says with and without a rank's actor
killed -9; an actor's process killed -9 from outside recovers in place; a
whole node killed -9 (its raylet, its workers, every process of it) shrinks
the job to 2 ranks or, the default, resumes it from its snapshot once a
replacement node comes in: the failure-free digest each time; a cluster
too small is a clear error.

The cluster is progs/ray_cluster.py's: every process of a node, and the
driver, carries a tag in its environment by which a node is killed and by
which none may be left at the end."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid

import pytest

from conftest import BUILD, PROGS, ROOT

sys.path.insert(0, PROGS)
from ray_cluster import Cluster, pids, read, wait_until  # noqa: E402

DOC = os.path.join(ROOT, "docs", "ray.md")
HEAD = "127.0.0.2"


def _gist(out):
    """The driver's output without Ray's raylet log lines, its last lines."""
    return "\n".join([x for x in out.splitlines() if "(raylet)" not in x][-60:])


def doc_program():
    """docs/ray.md's program: the first ```python block after '## The program'."""
    text = read(DOC)
    m = re.search(r"^## The program\n.*?```python\n(.*?)```", text, re.S | re.M)
    assert m, "docs/ray.md has no ```python block under '## The program'"
    return m.group(1)


def doc_line(kind):
    """The result line docs/ray.md shows for a run of kind ('failure-free',
    'kill'): the line after '<!-- kind -->'."""
    m = re.search(r"<!-- %s -->\n(?:.*\n)*?(k-means on .*)\n" % kind, read(DOC))
    assert m, "docs/ray.md shows no output for %s" % kind
    return m.group(1)


class Driver:
    """A driver program (python3 PROG ARGS...) in the background, tagged;
    its output in a file."""

    def __init__(self, cluster, prog, *args, timeout=300):
        self.out = os.path.join(cluster.tmp, "driver-%s.out" % uuid.uuid4().hex[:6])
        env = dict(cluster.env, RALLY_TEST_TAG=cluster.tag + "-driver", PYTHONUNBUFFERED="1")
        with open(self.out, "w") as f:
            self.p = subprocess.Popen(["timeout", "-s", "KILL", str(timeout), sys.executable, prog]
                                      + [str(a) for a in args], stdout=f,
                                      stderr=subprocess.STDOUT, env=env)

    def text(self):
        return read(self.out)

    def wait_for(self, pattern, secs=120):
        wait_until(lambda: re.search(pattern, self.text(), re.M) or self.p.poll() is not None,
                   secs, lambda: "no '%s' in the driver's output:\n%s"
                   % (pattern, _gist(self.text())))
        assert re.search(pattern, self.text(), re.M), _gist(self.text())

    def finish(self):
        rc = self.p.wait()
        return rc, self.text()


@pytest.fixture(scope="module")
def cluster():
    tmp = tempfile.mkdtemp(prefix="rray-")  # short: Ray's socket paths live under it
    with open(os.path.join(tmp, "ray_kmeans.py"), "w") as f:
        f.write(doc_program())
    # drivers and workers import rally (this build's copy, which finds its
    # rally-tracker), the doc's program and ray_job.py
    c = Cluster(tmp, os.pathsep.join([os.path.join(BUILD, "python"), tmp, PROGS]))
    try:
        c.start("head", HEAD)
        c.start("n2", "127.0.0.3")
        yield c
    finally:
        c.close()
        wait_until(lambda: not pids(c.tag), 30, lambda: "left behind: %s" % pids(c.tag))
        shutil.rmtree(tmp, ignore_errors=True)


def ensure_two_nodes(c):
    """head and n2 up, nothing else (a test before may have changed that)."""
    for name in [n for n in c.procs if n not in ("head", "n2")]:
        c.kill(name)
    if "n2" not in c.procs:
        c.start("n2", "127.0.0.3")


def job(c, *args, timeout=300):
    return Driver(c, os.path.join(PROGS, "ray_job.py"), c.address, *args, timeout=timeout)


def markers(c, name):
    return [f for f in os.listdir(c.tmp) if f.startswith(name + ".")
            and not f.endswith(".tmp")]


def test_doc_program_with_and_without_a_kill(cluster):
    """The doc's program prints the doc's line, failure-free and with rank
    1's actor killing itself (SIGKILL) at iteration 5: the same digest, at
    4 ranks, restarted by Ray and recovered in place."""
    prog = os.path.join(cluster.tmp, "ray_kmeans.py")
    for kind, extra in (("failure-free", []), ("kill", ["--kill", "1"])):
        rc, out = Driver(cluster, prog, "--address", cluster.address, *extra).finish()
        assert rc == 0, _gist(out)
        assert out.rstrip("\n").splitlines()[-1] == doc_line(kind), (kind, _gist(out))
        assert "rally.ray:" not in out, out  # no rank lost: no shrink, no resume


def test_actor_process_kill9_recovers_in_place(cluster):
    """An actor's process killed -9 from outside, at a known point (rank 1's
    first incarnation waits at iteration 5 after writing its pid)."""
    ensure_two_nodes(cluster)
    d = job(cluster, "resume", "rank1", os.path.join(cluster.tmp, "pid"))
    wait_until(lambda: markers(cluster, "pid"), 120, lambda: _gist(d.text()))
    pid = int(markers(cluster, "pid")[0].split(".")[1])
    os.kill(pid, signal.SIGKILL)
    rc, out = d.finish()
    want = doc_line("failure-free").split()[-1]
    assert rc == 0 and re.search(r"^result %s world 4$" % want, out, re.M), _gist(out)
    assert "rally.ray:" not in out, out


def test_node_lost_shrinks(cluster):
    """on_node_loss="shrink": n2 killed -9 whole while its ranks wait at
    iteration 5; Ray has nowhere to restart them, so the job goes on with
    the head's 2 ranks from the newest checkpoint: the same digest (exact
    sums), at 2 ranks."""
    ensure_two_nodes(cluster)
    d = job(cluster, "shrink", "n2", os.path.join(cluster.tmp, "shrink"))
    wait_until(lambda: markers(cluster, "shrink"), 120, lambda: _gist(d.text()))
    cluster.kill("n2")
    rc, out = d.finish()
    want = doc_line("failure-free").split()[-1]
    assert rc == 0, _gist(out)
    assert re.search(r"^rally\.ray: ranks \d, \d lost for good \(Ray brought them back nowhere "
                     r"in 5 s\): going on with 2 ranks$", out, re.M), _gist(out)
    assert re.search(r"^result %s world 2$" % want, out, re.M), _gist(out)


def test_node_lost_resumes_from_the_snapshot(cluster):
    """on_node_loss="resume" (the default): n2 killed -9 whole; the job
    stops, says it waits for room, and a replacement node (n3) comes in:
    the job resumes from its newest snapshot at 4 ranks, ends with the
    failure-free digest, and leaves no snapshot behind."""
    from rally import snapshot

    ensure_two_nodes(cluster)
    snap = os.path.join(cluster.tmp, "snap")
    d = job(cluster, "resume", "n2", os.path.join(cluster.tmp, "resume"), snap)
    wait_until(lambda: markers(cluster, "resume"), 120, lambda: _gist(d.text()))
    cluster.kill("n2")
    d.wait_for(r"^rally\.ray: ranks \d, \d lost for good: resuming from the newest snapshot "
               r"at 4 ranks once the cluster has room")
    cluster.start("n3", "127.0.0.4")
    rc, out = d.finish()
    want = doc_line("failure-free").split()[-1]
    assert rc == 0 and re.search(r"^result %s world 4$" % want, out, re.M), _gist(out)
    assert snapshot.list(os.path.join(snap, "kmeans")) == [], os.listdir(snap)


def test_a_cluster_too_small_is_an_error(cluster):
    """5 ranks of 1 CPU on 4 CPUs: a sentence naming it, no hang."""
    ensure_two_nodes(cluster)
    rc, out = job(cluster, "resume", "none", os.path.join(cluster.tmp, "none"), "-", 5,
                  10).finish()
    assert rc != 0, out
    assert "rally.ray.run: the cluster has no room for 5 ranks" in out, _gist(out)
