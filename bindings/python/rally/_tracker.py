"""_tracker.py — a rally-tracker beside the driver of another engine's job
(rally.dask, rally.spark, rally.ray): started, and where it listens."""
import subprocess
from typing import Optional, Sequence

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
