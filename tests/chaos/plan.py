"""plan.py -- the plan of a case: which program, which arguments, which
failure; skipped or refused with its reason (tests/chaos/matrix.py).
"""
import os
import shutil
import uuid

from axes import N, arg


class Plan:
    def __init__(self, kind, why="", **kw):
        self.kind = kind  # skip | refuse | run
        self.why = why
        self.__dict__.update(kw)


def program(c):
    """The test program for the features: (name, N-independent digest?)."""
    local, repro, elastic = arg(c, "local"), arg(c, "reproducible"), arg(c, "elastic")
    if arg(c, "data") == "cursor":
        return "sgd", repro == "on"  # rally-linear --solver sgd: the data cursor
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
    if prog == "sgd" and local != "none":
        return Plan("skip", "rally-linear's SGD keeps no local model: the cursor rides in the "
                    "global one")
    if arg(c, "results") == "part" and prog in ("records", "kmeans", "sgd"):
        return Plan("skip", f"{prog} sums a few words: no result is kept in part")
    if failure == "mock_final" and prog != "recover" and prog != "recover_local":
        return Plan("skip", f"{prog}'s sums never run on the ring: no 'final' point")
    if elastic == "min" and failure in ("mock_recovery", "mock_load") and backend == "robust":
        return Plan("skip", "--min-workers runs with --max-restarts 0 here: a dead rank is not "
                    "restarted, so nobody is served a recovery or loads a checkpoint")
    if failure == "mock_wire" and not prog.startswith("recover"):
        return Plan("skip", f"{prog} cannot hold the dying rank back (recover.c's lag= can), so "
                    "where the survivors stand when they wire the next epoch is timing's")
    if failure == "mock_checkpoint" and prog in ("kmeans", "sgd") and nfree:
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
    elif prog == "sgd":  # 3 epochs of 16 steps; a step: gradient, count, checkpoint
        args = ["--data", env.sgd_data(), "--data-opt", "csv_label=0", "--solver", "sgd",
                "--epochs", "3", "--batch", "64"] + (["--reproducible"] if nfree else [])
        plain_bin, mock_bin = b("rally-linear"), b("rally-linear-mock")
        v, s_op, s_ck = 7, 0, 2
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
        elif prog == "sgd":  # 1.6 s an epoch: acted on in the second
            args = args + ["--pause-ms", "100"]
            hold = ("line", r"^\[0\] epoch 1: consumed")
        else:
            args = args + ["--pause-ms", "100"]
            hold = ("line", r"^\[0\] iteration 4 objective")
        hold = hold + (victim,)
    return Plan("run", prog=prog, nfree=nfree, mpi=mpi, args=args + common,
                plain_bin=plain_bin, mock_bin=mock_bin, points=points, run_opts=run_opts,
                snaps=snaps, sdir=sdir, tier=tier, env=extra_env, hold=hold,
                either_refused=either_refused, failure=failure, mpi_snap=mpi_snap,
                key=(prog, mpi, tuple(args + common)))
