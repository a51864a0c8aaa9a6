"""job.py -- running a case's jobs: each in a process group of its own,
bounded, its failure injected, judged against its failure-free run
(tests/chaos/matrix.py).
"""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from axes import COPY_LOSSES, LOSSES, N, arg


class Job:
    """A job in a process group of its own, its output in a file."""

    current = None  # the job running now

    def __init__(self, env, argv, extra_env, out):
        self.tag = f"chaos-{os.getpid()}-{time.monotonic_ns()}"
        e = dict(os.environ)
        e.update(extra_env)
        e["RALLY_TEST_TAG"] = self.tag
        e["RALLY_MOCK_SYNC"] = tempfile.mkdtemp(dir=env.tmp)
        if "mpirun" in argv[0] or "--launcher" in argv and "mpirun" in argv:
            e.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                     OMPI_MCA_plm_rsh_agent="false")
        self.out = out
        self.f = open(out, "w")
        self.p = subprocess.Popen(argv, stdout=self.f, stderr=subprocess.STDOUT, env=e,
                                  start_new_session=True)
        self.deadline = time.monotonic() + env.limit
        Job.current = self

    def text(self):
        with open(self.out, errors="replace") as f:
            return f.read()

    def wait_line(self, pattern, count=1):
        """Until pattern shows in the output (count times); False when the job
        ended or timed out first."""
        rx = re.compile(pattern, re.M)
        while time.monotonic() < self.deadline:
            if len(rx.findall(self.text())) >= count:
                return True
            if self.p.poll() is not None:
                return len(rx.findall(self.text())) >= count
            time.sleep(0.05)
        return False

    def finish(self, now=False):
        """(exit status or None for a hang, output, leftover pids); every
        process of the job is killed (the workers are in groups of their own:
        found by the tag)."""
        try:
            rc = self.p.wait(0 if now else max(0.1, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            rc = None
        Job.current = None
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.p.wait()
        self.f.close()
        if rc is None:  # a hang: its workers are no leftovers, only killed
            for p in tagged(self.tag):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        left = []
        for _ in range(1 if now else 30):
            left = tagged(self.tag)
            if not left:
                break
            time.sleep(0.1)
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return rc, self.text(), left


def tagged(tag):
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        for f in ("environ", "cmdline"):
            try:
                with open(f"/proc/{d}/{f}", "rb") as fh:
                    if tag.encode() in fh.read():
                        pids.append(int(d))
                        break
            except OSError:
                pass
    return pids


def worker_pid(tag, binary, rank, mpi=False):
    """The newest live worker of launched rank `rank` of the job `tag`: by
    RALLY_TASK_ID, which rally-run gives every worker under every launcher;
    for librally_mpi, mpirun's own rank (never under rally-run's mpirun
    launcher, where each worker is rank 0 of an mpirun of its own)."""
    best = None
    ids = (f"OMPI_COMM_WORLD_RANK={rank}" if mpi else f"RALLY_TASK_ID={rank}").encode()
    for p in tagged(tag):
        try:
            with open(f"/proc/{p}/environ", "rb") as f:
                e = f.read().split(b"\0")
            with open(f"/proc/{p}/cmdline", "rb") as f:
                exe = f.read().split(b"\0")[0].decode(errors="replace")
            with open(f"/proc/{p}/stat") as f:
                start = int(f.read().rsplit(")", 1)[1].split()[19])
        except OSError:
            continue
        if ids in e and os.path.basename(exe) == os.path.basename(binary):
            if best is None or start > best[0]:
                best = (start, p)
    return best[1] if best else None


def digest(text):
    m = re.findall(r"model_digest=([0-9a-f]+)|records: result digest=([0-9a-f]+)", text)
    return "".join(m[-1]) if m else None


def objective(text):
    m = re.findall(r"result: .*objective=([-+0-9.e]+)", text)
    return float(m[-1]) if m else None


# said by rank 0, whichever worker that is now (an elastic job renumbers)
EPOCH = re.compile(r"^\[\d+\] (epoch (\d+): consumed .*)$", re.M)


def epochs_differ(plain_lines, texts):
    """Why the epoch lines of texts are not the failure-free run's (None: they
    are): each epoch said at least once, and always with the same count of
    samples and digest of their ids."""
    want = {}
    for line in plain_lines:
        m = EPOCH.match(line)
        if m:
            want[m.group(2)] = m.group(1)
    got = {}
    for t in texts:
        for m in EPOCH.finditer(t):
            got.setdefault(m.group(2), set()).add(m.group(1))
    for e, line in sorted(want.items()):
        if e not in got:
            return f"epoch {e} never said (failure-free: {line})"
        if got[e] != {line}:
            return f"epoch {e}: {sorted(got[e])}, failure-free: {line}"
    return None if want else "the failure-free run said no epoch"


def launch_argv(env, pl, binary, extra, run_opts):
    if pl.mpi:
        root = ["--allow-run-as-root"] if os.getuid() == 0 else []
        return ["mpirun"] + root + ["--oversubscribe", "--bind-to", "none", "-n", str(N),
                                    binary] + pl.args + extra
    return [env.path("rally-run"), "-n", str(N)] + run_opts + [binary] + pl.args + extra


def plain_run(env, pl, work):
    """The failure-free digest and objective of the features (cached)."""
    if pl.key not in env.plain:
        args = [a for a in pl.args if not a.startswith(("lag=", "gate="))]
        saved, pl.args = pl.args, args
        j = Job(env, launch_argv(env, pl, pl.plain_bin, [], []), {}, os.path.join(work, "plain"))
        pl.args = saved
        rc, text, _ = j.finish()
        env.plain[pl.key] = (digest(text) if rc == 0 else None, objective(text),
                             text.strip().splitlines())
    return env.plain[pl.key]


def drive(env, pl, j):
    """Acts the failure from outside once the job holds; '' or what went wrong."""
    kind, pattern = pl.hold[0], pl.hold[1]
    victim = pl.hold[-1]
    failure = pl.failure
    if not j.wait_line(pattern):
        return f"the job never reached its hold ({pattern})"
    if failure in ("kill9", "rank0"):
        pid = worker_pid(j.tag, pl.mock_bin, victim, pl.mpi)
        if pid is None:
            return f"no pid for rank {victim}"
        os.kill(pid, signal.SIGKILL)
        if kind == "gate":  # let rank 0 go once the death was seen
            j.wait_line(rf"rally-run: rank {victim}( on host \S+)? died")
    elif failure == "sigterm":
        os.kill(j.p.pid, signal.SIGTERM)
    elif failure == "grow":  # three workers at once (k + 1 for rally_local_replica=2)
        for i in range(3):
            os.kill(j.p.pid, signal.SIGUSR2)
            if not j.wait_line(r"rally-run: SIGUSR2: ", i + 1):
                return f"rally-run did not answer SIGUSR2 number {i + 1}"
    if kind == "gate":
        open(pl.hold[2], "w").close()
    return ""


def run_case(env, c, pl, work):
    """(class, detail) of case c."""
    pl.failure = arg(c, "failure")
    for d in (pl.sdir, pl.tier):
        if d:
            shutil.rmtree(d, ignore_errors=True)
    if pl.hold and pl.hold[0] == "gate" and os.path.exists(pl.hold[2]):
        os.unlink(pl.hold[2])
    want, want_obj, plain_tail = plain_run(env, pl, work)
    if want is None and pl.either_refused:
        said = [l for l in plain_tail if re.search(pl.either_refused, l)]
        if said:  # refused at rally_init, before any failure: the documented refusal
            return "refusal", said[-1]
    if want is None:
        return "internal-error", "the failure-free run failed: " + " | ".join(plain_tail[-3:])
    extra = list(pl.points) + pl.mpi_snap
    j = Job(env, launch_argv(env, pl, pl.mock_bin, extra, pl.run_opts), pl.env,
            os.path.join(work, "job"))
    note = drive(env, pl, j) if pl.hold else ""
    rc, text, left = j.finish()
    seen = [text]  # every run's output of the case, the resumes' too
    verdict = "; ".join(l for l in text.splitlines() if l.startswith("rally-run:")
                        and "summary" not in l)[-400:]
    if left:
        return "internal-error", f"processes left behind: {left}"
    if rc is None:
        return "hang", f"no end within {env.limit} s ({note or 'held and released'})"
    if "never fired" in text:
        return "not-injected", re.search(r".*never fired.*", text).group(0)
    if note:
        return "internal-error", note
    if pl.either_refused and rc != 0 and re.search(pl.either_refused, text):
        return "refusal", text.strip().splitlines()[-1]
    if rc == 2:
        return "unexpected-refusal", text.strip().splitlines()[0] if text.strip() else "?"
    if pl.failure == "host" and not pl.mpi:
        for rx in COPY_LOSSES:  # mended by a resume or not, it must not happen
            m = re.search(rx + ".*", text)
            if m:
                return "internal-error", "a whole host took the last copy: " + m.group(0)[:300]
    if pl.failure == "sigterm":
        if pl.snaps == "off":
            return ("named-loss", "stopped by SIGTERM (no --snapshot-dir)") if rc == 143 \
                else ("internal-error", f"exit status {rc} after SIGTERM: {verdict}")
        if rc != 5:
            return "internal-error", f"exit status {rc} after SIGTERM, want 5 (preempted): {verdict}"
        # preempted after a snapshot: --resume latest goes on to the same bits
        j = Job(env, launch_argv(env, pl, pl.plain_bin, [],
                                 pl.run_opts + ["--resume", "latest"]), pl.env,
                os.path.join(work, "resumed"))
        rc, text, left = j.finish()
        seen.append(text)
        if left:
            return "internal-error", f"processes left behind after the resume: {left}"
        if rc is None:
            return "hang", "the resume did not end"
        if rc != 0:
            return "internal-error", f"the resume exited {rc}: " + " | ".join(
                text.strip().splitlines()[-3:])
    if pl.mpi and pl.mpi_snap and rc != 0 and pl.failure in ("kill9", "rank0"):
        # librally_mpi does not recover: the job resumes its newest snapshot
        j = Job(env, launch_argv(env, pl, pl.plain_bin, pl.mpi_snap, []),
                {"RALLY_RESUME": "latest"}, os.path.join(work, "resumed"))
        rc, text, left = j.finish()
        seen.append(text)
        if left or rc is None or rc != 0:
            return "internal-error", f"the resume under mpirun: status {rc}, left {left}: " + \
                " | ".join(text.strip().splitlines()[-3:])
    # a worker killed by another signal than the matrix's (SIGKILL, SIGTERM)
    # crashed, even when the job went on without it (elastic) or resumed
    crash = re.search(r"^rally-run: .*killed by signal (?!(?:9|15)\b)\d+.*", text, re.M)
    if crash:
        return "internal-error", "a worker crashed: " + crash.group(0)[:300]
    # --auto-resume mends losses; a resume after anything else hides a failure
    resumed = re.search(r"^rally-run: auto-resume: restarting", text, re.M)
    if resumed:
        before = text[:resumed.start()]
        if not any(re.search(rx, before) for rx in LOSSES):
            why = [l for l in before.splitlines() if l.startswith("rally-run: ")
                   and ("died" in l or "failed" in l or "aborted" in l)]
            return "internal-error", "resumed after no documented loss: " + \
                "; ".join(why[-2:])[:300]
    if rc != 0:
        for rx in LOSSES:
            m = re.search(rx + ".*", text)
            if m and pl.failure == "grow":
                return "internal-error", "a loss with no death: " + m.group(0)[:300]
            if m and pl.snaps != "off" and not pl.mpi:
                return "internal-error", "a loss --auto-resume did not mend: " + m.group(0)[:300]
            if m:
                return "named-loss", m.group(0)[:300]
        return "internal-error", f"exit status {rc}: {verdict or text.strip()[-300:]}"
    if pl.prog == "sgd":  # every sample once an epoch, as without the failure
        bad = epochs_differ(plain_tail, seen)
        if bad:
            return "wrong-result", bad
    got = digest(text)
    if got == want:
        return "equal", got
    changed = re.search(r"going on with \d+ workers|taken in|now \d+ workers", text)
    if not pl.nfree and changed and want_obj is not None:
        o = objective(text)  # the order of sums follows N: the objective agrees
        if o is not None and abs(o - want_obj) <= 1e-6 * abs(want_obj):
            return "equal-objective", f"{o} (N changed; failure-free {want_obj})"
    return "wrong-result", f"digest {got}, failure-free {want}"
