#!/usr/bin/env python3
"""matrix.py -- the combination matrix (docs/chaos.md): jobs over every
feature combined with every failure, each judged against its failure-free run.

    matrix.py BUILD_DIR [--pairwise SEED] [--shard I/K] [--only AXIS=VALUE,...]
                        [--list] [--limit S] [--keep-going]

Each case is one value of every axis (FEATURES, then the failure).  Its plan
(plan()) is one of:
  skip     the combination cannot run here, or an axis has no meaning in it;
           counted with its reason, never silent
  refuse   rally refuses it at the start with a documented sentence
  run      a job through rally-run (or mpirun for librally_mpi), with the
           failure injected, judged against the failure-free run of the same
           features (run once per program and arguments, cached)
and its end is one of the classes in CLASSES.  The axes and the ends are in
axes.py, the plans in plan.py, the jobs in job.py, the rigs in env.py.  A case passes when it ends
with its failure-free digest (equal, equal-objective), the documented refusal
at the start (refusal) or a documented named loss (named-loss); hang, wrong
result, unexpected refusal, failure not injected and internal error fail it.
Every job is bounded in time (--limit) in a process group and session of its
own, which is killed at its end; processes carrying the job's tag that
outlive it fail the case.

--pairwise SEED: a sample in which every pair of axis values that some
runnable case can hold is held by one case at least (greedy, candidates drawn
from SEED); without it, every case of the product.  Cases whose jobs are the
same (an axis that does not apply) run once.  The last line gives the counts;
the exit status is 1 when a case failed.
"""
import itertools
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time

from axes import AXES, BAD, CLASSES, N, arg
from env import Env
from job import Job, run_case
from plan import build, plan


# ---------------------------------------------------------------------------
# The cases: the whole product, or a seeded pairwise sample.

def pairs_of(c):
    return {(i, c[i], k, c[k]) for i in range(len(c)) for k in range(i + 1, len(c))}


def pairwise(cases, seed):
    """Every pair of values some case in `cases` holds, held by one case at
    least: greedily, each step the candidate (of 60 drawn from seed) that
    holds the most pairs not held yet."""
    rng = random.Random(seed)
    left = set()
    for c in cases:
        left |= pairs_of(c)
    chosen = []
    while left:
        # a pair not held yet, and the cases that hold it; pick among them
        target = min(left)
        holders = [c for c in cases if target[1] == c[target[0]] and target[3] == c[target[2]]]
        cand = [rng.choice(holders) for _ in range(60)]
        best = max(cand, key=lambda c: len(pairs_of(c) & left))
        chosen.append(best)
        left -= pairs_of(best)
    return chosen


def parse_only(s):
    only = {}
    for kv in filter(None, (s or "").split(",")):
        k, _, v = kv.partition("=")
        only.setdefault(k, set()).add(v)
    return only


def main():
    a = sys.argv[1:]
    if not a or a[0].startswith("-"):
        print(__doc__, end="")
        return 2
    build, opts = a[0], {}
    i = 1
    while i < len(a):
        if a[i] in ("--list", "--keep-going"):
            opts[a[i]] = True
            i += 1
        else:
            opts[a[i]] = a[i + 1]
            i += 2
    env = Env(build, int(opts.get("--limit", 90)))
    # a matrix stopped from outside (ctest's timeout, ^C) still ends its job
    # and its rigs: the finally below, and Job.current's processes
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))
    only = parse_only(opts.get("--only"))
    names = [n for n, _ in AXES]
    allc = [c for c in itertools.product(*[v for _, v in AXES])
            if all(c[names.index(k)] in vs for k, vs in only.items())]
    try:
        return run_all(env, allc, opts)
    finally:
        if Job.current is not None:
            Job.current.finish(now=True)
        env.close()


def run_all(env, allc, opts):
    # skips are decided first (cheaply: the rigs are probed on demand, once)
    plans = {}
    for c in allc:
        plans[c] = plan(c, env)
    runnable = [c for c in allc if plans[c].kind != "skip"]
    if "--pairwise" in opts:
        cases = pairwise(runnable, int(opts["--pairwise"]))
        skipped = [c for c in allc if plans[c].kind == "skip"]
        reasons = {}
        for c in skipped:
            reasons[plans[c].why] = reasons.get(plans[c].why, 0) + 1
        print(f"matrix: pairwise sample (seed {opts['--pairwise']}): {len(cases)} cases cover "
              f"every pair of the {len(runnable)} runnable cases; the product's skips:")
        for w, k in sorted(reasons.items(), key=lambda x: -x[1]):
            print(f"matrix:   skip x{k}: {w}")
    else:
        cases = allc
    if "--shard" in opts:
        i, k = map(int, opts["--shard"].split("/"))
        cases = cases[i - 1::k]
    names = [n for n, _ in AXES]
    if "--list" in opts:
        for c in cases:
            print(" ".join(f"{n}={v}" for n, v in zip(names, c)), "->", plans[c].kind,
                  plans[c].why)
        return 0
    counts = {k: 0 for k in CLASSES}
    done = {}  # a job's signature -> its class: the same job runs once
    for n, c in enumerate(cases, 1):
        pl = plans[c]
        label = " ".join(f"{k}={v}" for k, v in zip(names, c))
        if pl.kind == "skip":
            cls, detail = "skip", pl.why
        elif pl.kind == "refuse":
            cls, detail = refused(env, c, pl)
        else:
            sig = (pl.key, tuple(pl.points), tuple(pl.run_opts), pl.failure, pl.snaps)
            if sig in done:
                cls, detail = done[sig][0], "the same job as case " + done[sig][2]
            else:
                work = tempfile.mkdtemp(dir=env.tmp)
                t0 = time.monotonic()
                cls, detail = run_case(env, c, pl, work)
                detail += f" ({time.monotonic() - t0:.1f} s)"
                done[sig] = (cls, detail, str(n))
                out = os.path.join(work, "job")
                if cls in BAD and os.path.exists(out):
                    keep = os.path.join(env.tmp, "..", f"rally-chaos-case-{os.getpid()}-{n}.out")
                    shutil.copy(out, keep)
                    detail += f"; output kept in {os.path.normpath(keep)}"
                shutil.rmtree(work, ignore_errors=True)
        counts[cls] += 1
        print(f"matrix: case {n}/{len(cases)}: {label}: {cls}: {detail}", flush=True)
    bad = sum(counts[k] for k in BAD)
    print("matrix: counts: cases=%d " % len(cases) +
          " ".join(f"{k}={counts[k]}" for k in CLASSES))
    return 1 if bad else 0


def refused(env, c, pl):
    """A documented refusal at the start: the status and the sentence."""
    binary = env.path("tests/recover")  # refused before it runs
    argv = [env.path("rally-run"), "-n", str(N)]
    if arg(c, "elastic") == "max":
        argv += ["--max-workers", str(N + 3)]
    argv += ["--launcher", arg(c, "launcher"), "--hosts", f"localhost:{N}", binary, "1"]
    j = Job(env, argv, {}, os.path.join(env.tmp, "refused"))
    rc, text, left = j.finish()
    if rc == pl.status and re.search(pl.pattern, text) and not left:
        return "refusal", re.search(r".*" + pl.pattern + r".*", text).group(0)
    return "internal-error", f"want status {pl.status} and '{pl.pattern}', got {rc}: {text[-300:]}"


if __name__ == "__main__":
    sys.exit(main())
