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

Every process of the cluster, the driver and the workers carries
RALLY_TEST_TAG=<the test's tag>-<node> in its environment (a Ray worker
inherits its raylet's): a node is killed by its tag, and none may be left at
the end.  No `ray stop`: it would stop every Ray of this user."""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

from conftest import BUILD, PROGS, ROOT

DOC = os.path.join(ROOT, "docs", "ray.md")
RAY = os.path.join(os.path.dirname(sys.executable), "ray")  # the venv's, beside its python
HEAD = "127.0.0.2"


def _pids(prefix):
    """Pids of processes whose RALLY_TEST_TAG starts with prefix."""
    needle = ("RALLY_TEST_TAG=" + prefix).encode()
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                if any(v.startswith(needle) for v in f.read().split(b"\0")):
                    out.append(int(d))
        except OSError:
            pass
    return out


def _free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _wait(cond, secs, what):
    end = time.monotonic() + secs
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("waited %g s: %s" % (secs, what()))
        time.sleep(0.1)


def _read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def _gist(out):
    """The driver's output without Ray's raylet log lines, its last lines."""
    return "\n".join([x for x in out.splitlines() if "(raylet)" not in x][-60:])


def doc_program():
    """docs/ray.md's program: the first ```python block after '## The program'."""
    text = _read(DOC)
    m = re.search(r"^## The program\n.*?```python\n(.*?)```", text, re.S | re.M)
    assert m, "docs/ray.md has no ```python block under '## The program'"
    return m.group(1)


def doc_line(kind):
    """The result line docs/ray.md shows for a run of kind ('failure-free',
    'kill'): the line after '<!-- kind -->'."""
    m = re.search(r"<!-- %s -->\n(?:.*\n)*?(k-means on .*)\n" % kind, _read(DOC))
    assert m, "docs/ray.md shows no output for %s" % kind
    return m.group(1)


class Cluster:
    def __init__(self, tmp, pythonpath):
        self.tag = "ray-%d-%s" % (os.getpid(), uuid.uuid4().hex[:8])
        self.tmp, self.procs, self.address = tmp, {}, None
        # a lost node is known in about 2 s (Ray's default is 15 s or more:
        # 5 health checks 3 s apart)
        self.env = dict(os.environ, PYTHONPATH=pythonpath, RAY_USAGE_STATS_ENABLED="0",
                        RAY_health_check_period_ms="500", RAY_health_check_failure_threshold="4",
                        RAY_health_check_initial_delay_ms="1000")

    def start(self, name, ip):
        p = _free_ports(6)
        cmd = [RAY, "start", "--block", "--node-ip-address", ip, "--num-cpus", "2",
               "--temp-dir", os.path.join(self.tmp, name), "--disable-usage-stats",
               "--dashboard-agent-listen-port", str(p[0]), "--dashboard-agent-grpc-port", str(p[1]),
               "--metrics-export-port", str(p[2]), "--runtime-env-agent-port", str(p[3])]
        if self.address is None:
            cmd += ["--head", "--port", str(p[4]), "--include-dashboard=false",
                    "--dashboard-port", str(p[5])]
        else:
            cmd += ["--address", self.address]
        log = os.path.join(self.tmp, name + ".log")
        with open(log, "w") as f:
            self.procs[name] = subprocess.Popen(
                cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True,
                env=dict(self.env, RALLY_TEST_TAG="%s-%s" % (self.tag, name)))
        _wait(lambda: "Ray runtime started" in _read(log) or self.procs[name].poll() is not None,
              120, lambda: "node %s did not start" % name)
        assert self.procs[name].poll() is None, "node %s: %s" % (name, _read(log)[-2000:])
        if self.address is None:
            self.address = "%s:%d" % (ip, p[4])

    def kill(self, name):
        """kill -9 of every process of the node, until none is left."""
        tag = "%s-%s" % (self.tag, name)
        end = time.monotonic() + 30
        while True:
            pids = _pids(tag)
            if not pids:
                break
            assert time.monotonic() < end, "node %s's processes outlive SIGKILL: %s" % (name, pids)
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        self.procs.pop(name).wait(10)

    def close(self):
        for name in sorted(self.procs, key=lambda n: n == "head"):  # the head last
            self.kill(name)


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
        return _read(self.out)

    def wait_for(self, pattern, secs=120):
        _wait(lambda: re.search(pattern, self.text(), re.M) or self.p.poll() is not None, secs,
              lambda: "no '%s' in the driver's output:\n%s" % (pattern, _gist(self.text())))
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
        _wait(lambda: not _pids(c.tag), 30, lambda: "left behind: %s" % _pids(c.tag))
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
    _wait(lambda: markers(cluster, "pid"), 120, lambda: _gist(d.text()))
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
    _wait(lambda: markers(cluster, "shrink"), 120, lambda: _gist(d.text()))
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
    _wait(lambda: markers(cluster, "resume"), 120, lambda: _gist(d.text()))
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
    rc, out = job(cluster, "resume", "none", os.path.join(cluster.tmp, "none"), "-", 5).finish()
    assert rc != 0, out
    assert "rally.ray.run: the cluster has no room for 5 ranks" in out, _gist(out)
