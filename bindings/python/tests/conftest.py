"""conftest.py — where the tests find the build (ctest passes RALLY_TEST_RUN,
RALLY_LIBRARY, RALLY_MOCK_LIBRARY, RALLY_TEST_KMEANS and RALLY_TEST_DATAGEN;
by hand they default to the build directory at the top of the source tree,
or RALLY_TEST_BUILD: a RALLY_* variable that is not a setting would be
refused by every worker, RALLY_TEST_* is reserved for tests), and a job runner
that bounds every job in time and leaves no process behind."""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGS = os.path.join(HERE, "progs")
PACKAGE_DIR = os.path.dirname(HERE)  # bindings/python
ROOT = os.path.dirname(os.path.dirname(PACKAGE_DIR))
BUILD = os.environ.get("RALLY_TEST_BUILD") or os.path.join(ROOT, "build")
RALLY_RUN = os.environ.get("RALLY_TEST_RUN") or os.path.join(BUILD, "rally-run")
TOOL = {t: os.environ.get(t.upper().replace("-", "_").replace("RALLY_", "RALLY_TEST_", 1))
        or os.path.join(BUILD, t)
        for t in ("rally-kmeans", "rally-kmeans-mock", "rally-datagen", "rally-snapshot")}
EXAMPLES = os.path.join(PACKAGE_DIR, "examples")
os.environ.setdefault("RALLY_LIBRARY", os.path.join(BUILD, "librally.so"))
os.environ.setdefault("RALLY_MOCK_LIBRARY", os.path.join(BUILD, "librally_mock.so"))
os.environ["PYTHONPATH"] = PACKAGE_DIR + os.pathsep + os.environ.get("PYTHONPATH", "")
if PACKAGE_DIR not in sys.path:
    sys.path.insert(0, PACKAGE_DIR)


def _tagged(tag):
    """Pids of processes whose environment carries RALLY_TEST_TAG=tag."""
    needle = ("RALLY_TEST_TAG=%s" % tag).encode()
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                if needle in f.read().split(b"\0"):
                    pids.append(int(d))
        except OSError:
            pass
    return pids


class Job:
    """rally-run -n N python3 PROG ARGS..., in the background; its output
    (stdout and stderr) goes to a file.  Every process carries a tag in its
    environment; finish() fails the test if any is left."""

    def __init__(self, n, prog, *args, launcher=(), env=None, timeout=120):
        self.tag = "py-%d-%s" % (os.getpid(), uuid.uuid4().hex[:8])
        self.out = tempfile.NamedTemporaryFile(prefix="rally-pytest-", suffix=".out", delete=False)
        e = dict(os.environ, RALLY_TEST_TAG=self.tag, PYTHONUNBUFFERED="1")
        e.update(env or {})
        if prog.endswith(".py"):  # a Python program, by default one of progs/
            argv0 = [sys.executable, prog if os.path.isabs(prog) else os.path.join(PROGS, prog)]
        else:
            argv0 = [prog]
        cmd = [RALLY_RUN, "-n", str(n)] + list(launcher) + argv0
        cmd += [str(a) for a in args]
        self.cmd = cmd
        self.deadline = time.monotonic() + timeout
        self.p = subprocess.Popen(cmd, stdout=self.out, stderr=subprocess.STDOUT, env=e,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
        _started.append(self)

    def text(self):
        with open(self.out.name, errors="replace") as f:
            return f.read()

    def wait_for(self, pattern, seconds=30):
        end = min(time.monotonic() + seconds, self.deadline)
        while time.monotonic() < end:
            m = re.search(pattern, self.text(), re.M)
            if m:
                return m
            if self.p.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError("no %r in the output:\n%s" % (pattern, self.text()))

    def finish(self):
        """(exit status, output) once the job has ended; kills it (and fails)
        when it outlives its time."""
        try:
            rc = self.p.wait(timeout=max(1.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()
            self._sweep()
            raise AssertionError("job timed out: %s\n%s" % (" ".join(self.cmd), self.text()))
        self._sweep()
        text = self.text()
        os.unlink(self.out.name)
        return rc, text

    def _sweep(self):
        time.sleep(0.2)
        left = _tagged(self.tag)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        assert not left, "processes left behind: %s" % left


_started = []


@pytest.fixture(autouse=True)
def _no_job_outlives_its_test():
    """A test that fails half-way leaves no job running: its launcher's
    group and every tagged process are killed."""
    yield
    while _started:
        j = _started.pop()
        if j.p.poll() is None:
            os.killpg(j.p.pid, signal.SIGKILL)
            j.p.wait()
        for pid in _tagged(j.tag):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def run_job(n, prog, *args, **kw):
    return Job(n, prog, *args, **kw).finish()


def digest(text):
    m = re.findall(r"^\[0\] digest ([0-9a-f]+)", text, re.M)
    assert len(m) == 1, text
    return m[0]


def summary(text):
    m = re.search(r"summary: deaths=(\d+) recovered=(\d+)", text)
    assert m, text
    return int(m.group(1)), int(m.group(2))


def readme_program(after, tmpdir):
    """The first ```python block after the line of bindings/python/README.md
    that starts with after, written to tmpdir/readme_prog.py (the README's
    examples are run as pasted, so they cannot rot)."""
    lines = open(os.path.join(PACKAGE_DIR, "README.md")).read().split("\n")
    at = next(i for i, l in enumerate(lines) if l.startswith(after))
    start = next(i for i in range(at, len(lines)) if lines[i] == "```python") + 1
    end = next(i for i in range(start, len(lines)) if lines[i] == "```")
    path = os.path.join(str(tmpdir), "readme_prog.py")
    with open(path, "w") as f:
        f.write("\n".join(lines[start:end]) + "\n")
    return path
