"""_tools.py — the console scripts of a pip-installed package: ``rally-run``
and ``rally-tracker`` run the programs the wheel bundles (_lib.tool)."""
import os
import sys

from . import _lib


def _exec(name):
    p = _lib.tool(name)
    os.execv(p, [p] + sys.argv[1:])


def rally_run():
    """``rally-run``: the launcher (docs/launch.md)."""
    _exec("rally-run")


def rally_tracker():
    """``rally-tracker``: the standalone tracker (docs/launch.md)."""
    _exec("rally-tracker")
