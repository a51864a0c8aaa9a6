"""ray_cluster.py — a real local Ray cluster for test_ray.py and
bench/ray.sh: each node a `ray start --block` of its own on its own
loopback address (127.0.0.2, 127.0.0.3, ...), 2 CPUs, its ports free ones.

Every process of a node carries RALLY_TEST_TAG=<the cluster's tag>-<node> in
its environment (a Ray worker inherits its raylet's): a node is killed -9 by
its tag, whole, and the tag tells whether anything is left.  No `ray stop`:
it would stop every Ray of this user."""
import os
import signal
import socket
import subprocess
import sys
import time
import uuid

RAY = os.path.join(os.path.dirname(sys.executable), "ray")  # the venv's, beside its python


def pids(prefix):
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


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def wait_until(cond, secs, what):
    end = time.monotonic() + secs
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("waited %g s: %s" % (secs, what()))
        time.sleep(0.1)


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


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
        p = free_ports(6)
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
        wait_until(lambda: "Ray runtime started" in read(log)
                   or self.procs[name].poll() is not None,
                   120, lambda: "node %s did not start" % name)
        assert self.procs[name].poll() is None, "node %s: %s" % (name, read(log)[-2000:])
        if self.address is None:
            self.address = "%s:%d" % (ip, p[4])

    def kill(self, name):
        """kill -9 of every process of the node, until none is left."""
        tag = "%s-%s" % (self.tag, name)
        end = time.monotonic() + 30
        while True:
            left = pids(tag)
            if not left:
                break
            assert time.monotonic() < end, "node %s's processes outlive SIGKILL: %s" % (name, left)
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        self.procs.pop(name).wait(10)

    def close(self):
        for name in sorted(self.procs, key=lambda n: n == "head"):  # the head last
            self.kill(name)
