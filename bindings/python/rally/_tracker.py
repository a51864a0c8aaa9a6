"""_tracker.py — what rally.dask, rally.spark and rally.ray share: a
rally-tracker beside the driver (started, drained, stopped), and a rank that
joins it from inside the engine's worker."""
import contextlib
import os
import subprocess
import sys
import tempfile
from typing import Iterator, Optional, Sequence

from . import _lib
from .errors import ConfigError


def start(who: str, n: int, bind: Optional[str], startup_ms: int, args: Sequence[str] = (),
          control: bool = False):
    """Starts rally-tracker for n workers (bound to bind, or every address)
    with its further args; control gives it a stdin pipe (--control-stdin).
    Returns the process, the address workers join and the secret's bytes;
    a tracker that ends first is a ConfigError naming who asked."""
    cmd = [_lib.tool("rally-tracker"), "-n", str(n), "--startup-timeout-ms", str(startup_ms)]
    cmd += list(args)
    if bind:
        cmd += ["--bind", bind]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE if control else None,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    env = {}
    while len(env) < 2:
        line = p.stdout.readline()
        if not line:
            p.wait()
            raise ConfigError("%s: rally-tracker exited %s before it said where it is"
                              % (who, p.returncode), 4)
        k, _, v = line.strip().partition("=")
        if k in ("RALLY_TRACKER", "RALLY_SECRET_FILE"):
            env[k] = v
    with open(env["RALLY_SECRET_FILE"], "rb") as f:
        secret = f.read()
    return p, env["RALLY_TRACKER"], secret


def drain(p, last, echo: bool) -> None:
    """Reads the tracker's output (its log and the ranks' tracker_print
    lines) so that it never blocks on a full pipe; keeps the last lines."""
    for line in p.stdout:
        last.append(line.rstrip("\n"))
        if echo:
            print(line, end="", file=sys.stderr, flush=True)


def stop(p) -> None:
    """Ends the tracker: SIGTERM, then SIGKILL after 10 s."""
    if p.poll() is None:
        p.terminate()
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


@contextlib.contextmanager
def joined(tracker: str, secret: bytes, task_id: int, settings: Sequence[str]) -> Iterator:
    """This process as the worker with task_id of the job at tracker: the
    secret in a 0600 file of its own for the job's time, the rally handle
    yielded."""
    from . import init

    fd, path = tempfile.mkstemp(prefix="rally-secret-")
    try:
        os.write(fd, secret)
        os.close(fd)
        argv = ["rally_tracker=" + tracker, "rally_secret_file=" + path,
                "rally_task_id=%d" % task_id] + list(settings)
        with init(argv) as r:
            yield r
    finally:
        os.unlink(path)
