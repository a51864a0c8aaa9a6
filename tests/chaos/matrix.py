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
and its end is one of the classes in CLASSES.  A case passes when it ends
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
import socket
import subprocess
import sys
import tempfile
import time
import uuid

N = 4  # workers in every job; rally_host_group=2 makes two hosts of two

FEATURES = [
    ("transport", ["shm", "tcp"]),
    ("backend", ["robust", "mpi"]),
    ("local", ["none", "opaque", "records"]),
    ("snapshots", ["off", "dir", "tier2_dir", "tier2_s3"]),
    ("elastic", ["off", "min", "max"]),
    ("hier", ["off", "on"]),
    ("verify", ["off", "on"]),
    ("reproducible", ["off", "on"]),
    ("results", ["whole", "part"]),
    ("launcher", ["local", "ssh", "mpirun"]),
]
FAILURES = ["mock_op", "mock_checkpoint", "mock_recovery", "mock_load", "mock_wire",
            "mock_final", "kill9", "adjacent2", "host", "sigterm", "grow", "rank0"]
AXES = FEATURES + [("failure", FAILURES)]

CLASSES = ["equal", "equal-objective", "refusal", "named-loss",  # the good ends
           "skip",
           "hang", "wrong-result", "unexpected-refusal", "not-injected", "internal-error"]
BAD = set(CLASSES[5:])

# The documented sentences of a loss (docs/recovery.md, "What --auto-resume
# mends" and "Limits, for now"; mpirun's own for librally_mpi, which does not
# recover).  A job that ends with one of these, and a non-zero status, lost
# what only a snapshot holds, or could not go on, and said so.
LOSSES = [
    r"cannot recover: the result of .* is lost",
    r"cannot recover: the local models of ranks [0-9, ]+ are lost",
    r"cannot go on with \d+ workers?: ",
    r"lost for good \(.*\): going on would leave \d+ workers?, fewer than",
    r"exited on signal 9",  # mpirun: a librally_mpi job ends with a death
]
# SIGTERM without --snapshot-dir stops the job: the workers get the signal
# and --grace-ms (docs/config.md, exit status 128+15); no snapshot to go on from.
STOPPED = r"rally-run: .*(signal 15|SIGTERM)"
# The losses a whole host of the robust engine never takes: its copies go to
# the other host's ranks (docs/recovery.md, "Failure domains").
COPY_LOSSES = [
    r"cannot recover: the result of .* is lost in part",
    r"cannot recover: the local models of ranks [0-9, ]+ are lost",
    r"the local-model records of old ranks? [0-9, ]+ (is|are) lost",
]


def arg(c, axis):
    return c[[a for a, _ in AXES].index(axis)]


class Env:
    """What the build and the machine offer; rigs started once, on demand."""

    def __init__(self, build, limit):
        self.build = os.path.abspath(build)
        self.limit = limit
        self.tmp = tempfile.mkdtemp(prefix="rally-chaos-")
        self.sshd = None  # (proc, options) or a reason string
        self.s3 = None  # environment dict or a reason string
        self.plain = {}

    def path(self, name):
        return os.path.join(self.build, name)

    def has(self, name):
        return os.access(self.path(name), os.X_OK)

    # -- the ssh "hosts" 127.0.0.2 and 127.0.0.3 (tests/launch_remote_test.sh)
    def ssh(self):
        if self.sshd is None:
            self.sshd = self._start_sshd()
        return self.sshd

    def _start_sshd(self):
        if not os.access("/usr/sbin/sshd", os.X_OK) or shutil.which("ssh-keygen") is None:
            return "no /usr/sbin/sshd or ssh-keygen here (scripts/deps.sh installs openssh-server)"
        d = os.path.join(self.tmp, "sshd")
        os.makedirs(d)
        os.chmod(self.tmp, 0o755)
        os.makedirs("/run/sshd", exist_ok=True)
        for k in ("host_key", "id"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", f"{d}/{k}"],
                           check=True)
        shutil.copy(f"{d}/id.pub", f"{d}/authorized_keys")
        s = socket.socket()
        s.bind(("127.0.0.2", 0))
        port = s.getsockname()[1]
        s.close()
        with open(f"{d}/sshd_config", "w") as f:
            f.write(f"Port {port}\nListenAddress 127.0.0.2\nListenAddress 127.0.0.3\n"
                    f"HostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n"
                    "PubkeyAuthentication yes\nPasswordAuthentication no\n"
                    "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                    f"PermitRootLogin yes\nPidFile {d}/sshd.pid\nMaxStartups 64:30:128\n"
                    "LogLevel ERROR\n")
        proc = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", f"{d}/sshd_config"],
                                stderr=open(f"{d}/sshd.log", "w"))
        opts = [f"Port={port}", f"IdentityFile={d}/id", "IdentitiesOnly=yes",
                "UserKnownHostsFile=/dev/null", "StrictHostKeyChecking=no", "LogLevel=ERROR"]
        for _ in range(100):
            if subprocess.run(["ssh", "-o", "BatchMode=yes"] + sum([["-o", o] for o in opts], [])
                              + ["127.0.0.3", "true"], capture_output=True).returncode == 0:
                return (proc, sum([["--ssh-option", o] for o in opts], []))
            if proc.poll() is not None:
                break
            time.sleep(0.1)
        proc.kill()
        proc.wait()
        return "sshd on 127.0.0.2/127.0.0.3 did not let us in"

    # -- an S3 bucket on the Swift rig (tests/swift_rig.sh)
    def bucket(self):
        if self.s3 is None:
            self.s3 = self._start_s3()
        return self.s3

    def _start_s3(self):
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        rig = os.path.join(self.tmp, "rig")
        r = subprocess.run(["sh", f"{here}/swift_rig.sh", "start", rig], capture_output=True,
                           text=True, timeout=300)
        if r.returncode != 0:
            last = (r.stdout + r.stderr).strip().splitlines()[-1:] or ["?"]
            return f"the Swift rig (tests/swift_rig.sh) did not start: {last[0]}"
        self.rig = rig
        env = {}
        out = subprocess.run(["sh", "-c", f". {rig}/env && env"], capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            k, _, v = line.partition("=")
            if k.startswith("AWS_") or k == "SWIFT_RIG_NETRC":
                env[k] = v
        code = subprocess.run(
            ["curl", "-sS", "-m", "30", "-o", "/dev/null", "-w", "%{http_code}", "--netrc-file",
             env["SWIFT_RIG_NETRC"], "--aws-sigv4", f"aws:amz:{env['AWS_DEFAULT_REGION']}:s3",
             "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-X", "PUT",
             env["AWS_ENDPOINT_URL"] + "/tier"], capture_output=True, text=True).stdout
        if code != "200":
            return f"cannot make the bucket on the Swift rig: HTTP {code}"
        return env

    def close(self):
        if isinstance(self.sshd, tuple):
            self.sshd[0].kill()
            self.sshd[0].wait()
        if isinstance(self.s3, dict):
            here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            subprocess.run(["sh", f"{here}/swift_rig.sh", "stop", self.rig], capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


# ---------------------------------------------------------------------------
# The plan of a case: which program, which arguments, which failure.

class Plan:
    def __init__(self, kind, why="", **kw):
        self.kind = kind  # skip | refuse | run
        self.why = why
        self.__dict__.update(kw)


def program(c):
    """The test program for the features: (name, N-independent digest?)."""
    local, repro, elastic = arg(c, "local"), arg(c, "reproducible"), arg(c, "elastic")
    if local == "records":
        return "records", True  # tests/progs/records.c: its bits do not depend on N
    if local == "opaque":
        return "recover_local", False  # tests/progs/recover.c local
    if repro == "on" or elastic != "off":
        return "kmeans", repro == "on"  # rally-kmeans handles a change of N
    return "recover", False


def plan(c, env):
    """What to do with case c (a tuple of axis values)."""
    backend, launcher, failure = arg(c, "backend"), arg(c, "launcher"), arg(c, "failure")
    local, snaps, elastic = arg(c, "local"), arg(c, "snapshots"), arg(c, "elastic")
    prog, nfree = program(c)
    # axes that have no meaning in a combination: counted as skips
    if arg(c, "reproducible") == "on" and local == "opaque":
        return Plan("skip", "--reproducible is a trainer's (rally-kmeans); recover.c's opaque "
                    "local models have no reproducible form")
    if arg(c, "results") == "part" and prog in ("records", "kmeans"):
        return Plan("skip", f"{prog} sums a few words: no result is kept in part")
    if failure == "mock_final" and prog != "recover" and prog != "recover_local":
        return Plan("skip", f"{prog}'s sums never run on the ring: no 'final' point")
    if elastic == "min" and failure in ("mock_recovery", "mock_load") and backend == "robust":
        return Plan("skip", "--min-workers runs with --max-restarts 0 here: a dead rank is not "
                    "restarted, so nobody is served a recovery or loads a checkpoint")
    if failure == "mock_wire" and not prog.startswith("recover"):
        return Plan("skip", f"{prog} cannot hold the dying rank back (recover.c's lag= can), so "
                    "where the survivors stand when they wire the next epoch is timing's")
    if failure == "mock_checkpoint" and prog == "kmeans" and nfree:
        return Plan("skip", "an exact sum (--reproducible) takes as many collectives as the "
                    "layout needs: no fixed seq for a checkpoint point")
    if backend == "mpi":
        if launcher != "mpirun":
            return Plan("skip", "a librally_mpi job is started by mpirun itself, not by rally-run")
        if not env.has("tests/recover_mpi") or shutil.which("mpirun") is None:
            return Plan("skip", "no librally_mpi build or no mpirun here")
        if prog != "recover" and prog != "recover_local":
            return Plan("skip", f"{prog} has no librally_mpi build among the test programs")
        if elastic != "off":
            return Plan("skip", "--min-workers/--max-workers are rally-run's; mpirun has none")
        if snaps == "tier2_s3":
            return Plan("skip", "the S3 second tier under mpirun: covered by mpi_snapshot_copy "
                        "(directory) only")
        if failure.startswith("mock_") or failure in ("adjacent2", "host"):
            return Plan("skip", "librally_mpi has no kill points (rally_mock is librally_mock's)")
        if failure in ("sigterm", "grow"):
            return Plan("skip", "preemption (SIGTERM) and growth (SIGUSR2) are rally-run's")
    if launcher == "ssh" and isinstance(env.ssh(), str):
        return Plan("skip", env.ssh())
    if snaps == "tier2_s3" and isinstance(env.bucket(), str):
        return Plan("skip", env.bucket())
    # refusals at the start (tools/run/options.c, docs/config.md)
    if elastic == "max" and launcher == "mpirun" and backend == "robust":
        return Plan("refuse", pattern=r"--max-workers above -n is for --launcher local and ssh",
                    status=2)
    if backend == "mpi" and arg(c, "verify") == "on":
        # rally_verify_every on librally_mpi: refused at rally_init (RALLY_ECONFIG)
        return build(c, env, prog, nfree,
                     either_refused=r"rally_verify_every=1: librally_mpi does not verify")
    return build(c, env, prog, nfree)


def build(c, env, prog, nfree, either_refused=None):
    """The run plan: the failure-free job (argv) and the job with the failure."""
    b = env.path
    backend, failure = arg(c, "backend"), arg(c, "failure")
    mpi = backend == "mpi"
    common = [f"rally_transport={arg(c, 'transport')}"]
    if arg(c, "hier") == "on":
        common.append("rally_host_group=2")
    elif failure == "host":  # two hosts all the same, the hierarchy off
        common += ["rally_host_group=2", "rally_hier=off"]
    if arg(c, "verify") == "on":
        common.append("rally_verify_every=1")
    if prog.startswith("recover"):
        size = "131072" if arg(c, "results") == "part" else "2000"
        args = [size, "8"] + (["local"] if prog == "recover_local" else [])
        if arg(c, "results") == "part":
            common.append("rally_hd_threshold_bytes=0")  # the ring: pieces
        plain_bin = b("tests/recover_mpi") if mpi else b("tests/recover")
        mock_bin = b("tests/recover_mpi") if mpi else b("tests/recover_mock")
        v, s_op, s_ck = 3, 5, 7  # version 3: seq 5 the sum, 7 the checkpoint
    elif prog == "records":
        args = ["1000", "30"]
        plain_bin = mock_bin = b("tests/records_mock")
        v, s_op, s_ck = 7, 0, 1
    else:
        args = ["--data", env.kmeans_data(), "--data-opt", "csv_label=0", "-k", "6",
                "--iters", "16", "--fixed"] + (["--reproducible"] if nfree else [])
        plain_bin, mock_bin = b("rally-kmeans"), b("rally-kmeans-mock")
        v, s_op, s_ck = 7, 0, 1
    if failure == "mock_final":
        common += ["rally_ring_threshold_bytes=1024", "rally_hd_threshold_bytes=0",
                   "rally_chunk_bytes=512"]
    points = {
        "mock_op": [f"rally_mock=1,{v},{s_op},0"],
        "mock_checkpoint": [f"rally_mock=1,{v},{s_ck},0,checkpoint"],
        "mock_recovery": [f"rally_mock=2,{v},{s_op},0,op,g", f"rally_mock=1,{v},{s_op},0,recovery,g"],
        "mock_load": [f"rally_mock=2,{v},{s_op},0", "rally_mock=2,0,0,1,load"],
        "mock_wire": [f"rally_mock=2,{v},{s_op},0", f"rally_mock=1,{v},{s_op},0,wire"],
        "mock_final": [f"rally_mock=1,{v},{s_op},0,final"],
        "adjacent2": [f"rally_mock=1,{v},{s_op},0,op,adj", f"rally_mock=2,{v},{s_op},0,op,adj"],
        # a whole host: with rally_host_group=2 (and under ssh) ranks 2 and 3
        # are one host; all its workers die at once
        "host": [f"rally_mock=2,{v},{s_op},0,op,host", f"rally_mock=3,{v},{s_op},0,op,host"],
    }.get(failure, [])
    run_opts = []
    elastic = arg(c, "elastic")
    if elastic == "min":
        run_opts += ["--min-workers", "2", "--max-restarts", "0"]
    elif elastic == "max":
        run_opts += ["--max-workers", str(N + 3)]
    snaps = arg(c, "snapshots")
    sdir = tier = None
    extra_env = {}
    if snaps != "off":
        sdir = os.path.join(env.tmp, "snap")
        # --auto-resume: a loss only a snapshot mends is mended (docs/recovery.md)
        run_opts += ["--snapshot-dir", sdir, "--job", "m", "--auto-resume"]
        if snaps == "dir":
            run_opts += ["--snapshot-every", "2"]
        else:  # every version copied, retention at its default (2) beside it
            run_opts += ["--snapshot-every", "1", "--snapshot-required"]
        if snaps == "tier2_dir":
            tier = os.path.join(env.tmp, "tier")
            run_opts += ["--snapshot-copy", tier]
        elif snaps == "tier2_s3":
            extra_env.update(env.bucket())
            # a prefix of the case's own: a tier holding another run's
            # snapshots of the job is refused at the start
            run_opts += ["--snapshot-copy", "s3://tier/chaos/" + uuid.uuid4().hex[:12]]
    launcher = arg(c, "launcher")
    if launcher == "ssh":
        run_opts += ["--launcher", "ssh", "--hosts", "127.0.0.2:2,127.0.0.3:2"] + env.ssh()[1]
        if snaps == "tier2_s3":  # ssh carries no environment: the workers' credentials
            run_opts += sum([["-x", k] for k in sorted(env.bucket()) if k.startswith("AWS_")], [])
    elif launcher == "mpirun" and not mpi:
        run_opts += ["--launcher", "mpirun", "--hosts", f"localhost:{N}"]
    # librally_mpi takes the snapshot settings as its own (no rally-run)
    mpi_snap = []
    if mpi and snaps != "off":
        mpi_snap = [f"rally_snapshot_dir={sdir}", "rally_snapshot_every=2"]
        if tier:
            mpi_snap.append(f"rally_snapshot_copy={tier}")
    if failure == "mock_wire":  # the others wait at the point before rank 2 dies there
        args = args + [f"lag=2,{v},{s_op},1000"]
    # the hold for a failure from outside (a kill, a signal, a growth): the
    # job waits at a known point until the matrix has acted
    hold = None
    if failure in ("kill9", "rank0", "sigterm", "grow"):
        victim = 0 if failure == "rank0" else 1
        if prog.startswith("recover"):
            if failure in ("sigterm", "grow"):
                args = args[:1] + ["40"] + args[2:] + ["100"]  # 100 ms an iteration
                hold = ("line", r"^\[0\] rally: rank 0: snapshot: committed" if snaps != "off"
                        else r"^\[0\] pid 0 ")
            else:  # held 60 s in its first incarnation before version 3's seq 0
                args = args + [f"lag={victim},3,0,60000"]
                hold = ("line", rf"^(\[{victim}\] )?rank {victim} lags")
        elif prog == "records":
            gate = os.path.join(env.tmp, "gate")
            args = args + [f"gate=7,{gate}"]
            hold = ("gate", r"records: at the gate", gate)
        else:
            args = args + ["--pause-ms", "100"]
            hold = ("line", r"^\[0\] iteration 4 objective")
        hold = hold + (victim,)
    return Plan("run", prog=prog, nfree=nfree, mpi=mpi, args=args + common,
                plain_bin=plain_bin, mock_bin=mock_bin, points=points, run_opts=run_opts,
                snaps=snaps, sdir=sdir, tier=tier, env=extra_env, hold=hold,
                either_refused=either_refused, failure=failure, mpi_snap=mpi_snap,
                key=(prog, mpi, tuple(args + common)))


# ---------------------------------------------------------------------------
# Running jobs.

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
    got = digest(text)
    if got == want:
        return "equal", got
    changed = re.search(r"going on with \d+ workers|taken in|now \d+ workers", text)
    if not pl.nfree and changed and want_obj is not None:
        o = objective(text)  # the order of sums follows N: the objective agrees
        if o is not None and abs(o - want_obj) <= 1e-6 * abs(want_obj):
            return "equal-objective", f"{o} (N changed; failure-free {want_obj})"
    return "wrong-result", f"digest {got}, failure-free {want}"


def kmeans_data(env):
    p = os.path.join(env.tmp, "d.csv")
    if not os.path.exists(p):
        subprocess.run([env.path("rally-datagen"), "--rows", "20000", "--features", "8",
                        "--centers", "6", "--spread", "5", "--seed", "7", "--format", "csv",
                        "-o", p], check=True, capture_output=True)
    return p


Env.kmeans_data = kmeans_data


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
            sig = (pl.key, tuple(pl.points), tuple(pl.run_opts), pl.failure
                   if hasattr(pl, "failure") else arg(c, "failure"), pl.snaps)
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
    binary = pl_bin(env, c)
    argv = [env.path("rally-run"), "-n", str(N)]
    if arg(c, "elastic") == "max":
        argv += ["--max-workers", str(N + 3)]
    argv += ["--launcher", arg(c, "launcher"), "--hosts", f"localhost:{N}", binary, "1"]
    j = Job(env, argv, {}, os.path.join(env.tmp, "refused"))
    rc, text, left = j.finish()
    if rc == pl.status and re.search(pl.pattern, text) and not left:
        return "refusal", re.search(r".*" + pl.pattern + r".*", text).group(0)
    return "internal-error", f"want status {pl.status} and '{pl.pattern}', got {rc}: {text[-300:]}"


def pl_bin(env, c):
    return env.path("tests/recover")


if __name__ == "__main__":
    sys.exit(main())
