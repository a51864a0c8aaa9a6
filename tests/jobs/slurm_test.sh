#!/bin/sh
# slurm_test.sh CASE BUILD_DIR — rally jobs on a real one-node Slurm that the
# test starts itself as root (tests/rigs/slurm_rig.sh: munged, slurmctld and
# slurmd on private sockets, ports and files), and the srun command lines
# that `rally-run --launcher slurm` makes (docs/slurm-test.md).
#   rig       the rig comes up; in an allocation of 4 tasks a rally-kmeans
#             job whose 4 workers are 4 one-task steps (the srun words of
#             the launch interface; joined through rally-tracker) gives the
#             digest of the same job under rally-run on this host; a kill -9
#             of one worker, started again as a new step with the same
#             RALLY_TASK_ID, recovers to the same digest
#   launcher  inside `salloc -n 4`, `rally-run --launcher slurm -n 4
#             rally-kmeans ...` gives the local digest; a kill -9 of one
#             worker mid-run (the job frozen with SIGSTOP from iteration 2
#             until the kill) recovers (same digest, one death recovered);
#             while it runs no srun, rally-agent or worker carries the job's
#             key in its argv or environment
#   dryrun    `rally-run --launcher slurm --dry-run` with SLURM_JOB_NODELIST
#             and SLURM_TASKS_PER_NODE set by the test: one line per rank,
#             every srun word the launch interface lists (and --overlap or
#             --exact, without which steps wait for each other), the rank's
#             --nodelist in allocation order, the agent (beside rally-run, or
#             --agent's), `--` and the program's words last, no secret;
#             outside an allocation it is an error
#   preempt   a batch job (sbatch, its script handing the batch signal to
#             rally-run) signalled as --signal=B:TERM does (scancel
#             --signal=TERM --batch) at iteration 5: a snapshot, exit 5, and
#             --resume latest gives the uninterrupted digest
#   requeue   rally-run's machine lost: a batch job (sbatch --requeue) runs
#             rally-run --launcher slurm with a node-local first tier, a
#             shared second tier and --resume latest-if-any (a fresh start
#             the first time); once a snapshot is copied to the second tier
#             the machine goes (the batch shell frozen, rally-run and its
#             guard killed -9, the node-local directory removed): no worker,
#             agent or srun of that run is left, and after scontrol requeue
#             (what Slurm does when it finds the node down) the same script
#             resumes from the second tier to the uninterrupted digest
# When Slurm cannot start here (a container without what slurmd needs), rig
# and launcher print why (the daemon and its log's last lines); rig fails,
# and launcher checks the dry-run lines instead (RALLY_SLURM_REQUIRED=1
# makes that a failure too).  The test bounds itself (it runs under timeout) and stops every
# process it started, the daemons too, and removes their files.
set -u
case_=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
limit=${SLURM_TEST_LIMIT:-240}
[ -z "${SLURM_TEST_INNER:-}" ] &&
    SLURM_TEST_INNER=1 exec timeout -k 20 "$limit" sh "$0" "$@"
run=$build/rally-run km=$build/rally-kmeans tracker=$build/rally-tracker
py=/usr/bin/python3
[ -x "$py" ] || py=python3
tmp=$(mktemp -d)
. "$here/../rigs/slurm_rig.sh"
. "$here/../rigs/trainer_lib.sh"
cleanup() {
    trap '' TERM INT HUP # timeout signals us and then our group: finish this
    slurm_rig_stop
    [ -n "${tag:-}" ] && kill -9 $(grep -lzx "RALLY_TEST_TAG=$tag" /proc/[0-9]*/environ 2>/dev/null |
        cut -d/ -f3 | grep -vx "$$") 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP
fail() {
    echo "slurm_test $case_: $*"
    for f in "$tmp"/out*; do [ -f "$f" ] && { echo "--- ${f##*/}:"; tail -40 "$f"; }; done
    exit 1
}
tag=

has_launcher() {
    "$run" --help 2>&1 | grep -q -- '--launcher' && return 0
    echo "slurm_test $case_: this rally-run has no --launcher"
    exit 1
}

# start_rig: 0 when Slurm runs; else says why (and fails when it must run)
start_rig() {
    for try in 1 2 3; do # a port picked free may be taken before a daemon binds it
        slurm_rig_start "$tmp" && { echo "slurm rig: node $slurm_rig_node idle, srun works"; return 0; }
        case $slurm_rig_why in *"Address already in use"*) ;; *) break ;; esac
        echo "slurm rig: try $try: a port was taken; again"
        slurm_rig_stop
    done
    echo "slurm_test $case_: Slurm cannot start here: $slurm_rig_why"
    [ "${RALLY_SLURM_REQUIRED:-0}" = 1 ] && fail "RALLY_SLURM_REQUIRED=1 and the rig did not start"
    slurm_rig_stop
    return 1
}

# 20,000 rows x 8 features around 6 centres (as kmeans_test.sh)
data=$tmp/d.csv
KM="--data $data --data-opt csv_label=0 -k 6"
# 20 iterations whatever converges: after iteration 2, 1.8 s of --pause-ms 100
# to freeze the job in (workers_signal), so the kill lands mid-run
KM="$KM --iters 20 --fixed-iters"
make_data() {
    "$build/rally-datagen" --rows 20000 --features 8 --centers 6 --spread 2 --seed 7 --format csv \
        -o "$data" >/dev/null 2>&1 || fail "rally-datagen failed"
}
digest() { grep -o 'model_digest=[0-9a-f]*' "$1"; }
workers_signal() { # SIG tag: signal every worker (rally-kmeans) of the job
    for p in $(grep -lzx "RALLY_TEST_TAG=$2" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = rally-kmeans ] && kill "-$1" "$p"
    done
}
same_digest() { # out plain
    d=$(digest "$1")
    [ -n "$d" ] && [ "$d" = "$(digest "$2")" ] || fail "digest '$d', want $(digest "$2")"
    echo "digest: $d (as on this host)"
}

# key_of_worker pid: the hex key of the job's secret, from the file the
# worker was given
key_of_worker() {
    f=$(tr '\0' '\n' <"/proc/$1/environ" | sed -n 's/^RALLY_SECRET_FILE=//p')
    [ -n "$f" ] && [ -r "$f" ] || fail "worker $1 has no readable RALLY_SECRET_FILE ($f)"
    awk '{print $4}' "$f"
}

# no_key_in tag key: no process of the job holds the key in argv or environ
no_key_in() {
    [ ${#2} -ge 32 ] || fail "the secret file's key is '$2'"
    n=0
    for p in $(grep -lzx "RALLY_TEST_TAG=$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do
        [ "$p" = "$$" ] && continue
        for f in cmdline environ; do
            cat "/proc/$p/$f" 2>/dev/null | tr '\0' '\n' | grep -qi -- "$2" &&
                fail "process $p ($(cat "/proc/$p/comm")) has the job's key in its $f"
        done
        n=$((n + 1))
    done
    echo "secret: not in the argv or environment of the job's $n processes"
}

# check_lines out N HOSTS... : the dry-run lines, rank r on HOSTS[r]
check_lines() {
    out=$1 n=$2
    shift 2
    "$py" - "$out" "$n" "$run" "$@" <<'EOF' || fail "the dry-run lines are not as the launch interface says"
import os, re, shlex, sys
out, n, run, hosts = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
want_agent = os.environ.get("WANT_AGENT") or os.path.join(os.path.dirname(os.path.realpath(run)), "rally-agent")
prog = shlex.split(os.environ["WANT_PROG"])
port = os.environ["WANT_PORT"]
lines = [l for l in open(out).read().splitlines() if l.startswith("rank ")]
bad = []
def no(r, why):
    bad.append("rank %d: %s" % (r, why))
if len(lines) != n:
    bad.append("%d rank lines, want %d" % (len(lines), n))
for r, line in enumerate(lines[:n]):
    head, _, cmd = line.partition(": ")
    if head != "rank %d" % r:
        no(r, "line starts '%s'" % head)
    w = shlex.split(cmd)
    if not w or os.path.basename(w[0]) != "srun":
        no(r, "the command is not srun: %s" % cmd)
        continue
    for word in ("--nodes=1", "--ntasks=1", "--kill-on-bad-exit=1", "--nodelist=" + hosts[r]):
        if word not in w:
            no(r, "no %s" % word)
    # not in the interface's list, but without one of them a one-task step
    # takes every CPU of the allocation on its node and the next rank's
    # step waits for it (the rig case shows it)
    if "--overlap" not in w and "--exact" not in w:
        no(r, "neither --overlap nor --exact")
    if any(x.startswith("--nodelist=") and x != "--nodelist=" + hosts[r] for x in w):
        no(r, "another --nodelist")
    agents = [i for i, x in enumerate(w) if os.path.realpath(x) == os.path.realpath(want_agent)]
    if not agents:
        no(r, "no agent %s" % want_agent)
    elif "--" not in w[agents[0]:]:
        no(r, "no -- after the agent")
    else:
        tail = w[agents[0]:]
        tail = tail[tail.index("--") + 1:]
        if tail != prog:
            no(r, "the program's words are %s, want %s" % (tail, prog))
    if not any(re.search(r"\bRALLY_TASK_ID=%d$" % r, x) for x in w):
        no(r, "no RALLY_TASK_ID=%d" % r)
    if not any(re.search(r"\bRALLY_TRACKER=127\.0\.0\.1:%s$" % port, x) for x in w):
        no(r, "no RALLY_TRACKER=127.0.0.1:%s" % port)
    if re.search(r"rally-secret|RALLY_SECRET|[0-9a-fA-F]{32}", cmd):
        no(r, "the line carries a secret: %s" % cmd)
for b in bad:
    print("dry-run:", b)
if not bad:
    print("dry-run: %d lines, ranks on %s" % (n, ",".join(hosts[:n])))
sys.exit(1 if bad else 0)
EOF
}

dry() { # out N nodelist tasks-per-node [rally-run options]: one dry run
    o=$1 n=$2 nl=$3 tpn=$4
    shift 4
    SLURM_JOB_NODELIST=$nl SLURM_TASKS_PER_NODE=$tpn SLURM_JOB_ID=4242 \
        timeout 30 "$run" --launcher slurm -n "$n" --host 127.0.0.1 --port "$WANT_PORT" --dry-run "$@" \
        -- $WANT_PROG >"$o" 2>&1 || { cp "$o" "$tmp/out"; fail "--dry-run -n $n on $nl ($tpn) failed"; }
}

dryrun_checks() {
    # scontrol expands the node list; outside a cluster it needs a slurm.conf
    if [ -z "${SLURM_CONF:-}" ]; then
        printf 'ClusterName=dry\nSlurmctldHost=%s\n' "$(hostname -s)" >"$tmp/dry.conf"
        SLURM_CONF=$tmp/dry.conf
        export SLURM_CONF
    fi
    WANT_PORT=47123 WANT_PROG="$km $KM --pause-ms 100"
    export WANT_PORT WANT_PROG
    dry "$tmp/d1" 4 'n[1-2]' '2(x2)'
    check_lines "$tmp/d1" 4 n1 n1 n2 n2
    dry "$tmp/d2" 5 'n[1-2],m7' '2(x2),1'
    check_lines "$tmp/d2" 5 n1 n1 n2 n2 m7
    dry "$tmp/d3" 3 'n[1-2],m7' '2(x2),1'
    check_lines "$tmp/d3" 3 n1 n1 n2
    WANT_AGENT=/opt/rally/bin/rally-agent
    export WANT_AGENT
    dry "$tmp/d4" 2 'a[07-08]' '1(x2)' --agent "$WANT_AGENT"
    check_lines "$tmp/d4" 2 a07 a08
    unset WANT_AGENT
    # more ranks than the allocation has slots, and no allocation at all
    SLURM_JOB_NODELIST='n[1-2]' SLURM_TASKS_PER_NODE='2(x2)' timeout 30 "$run" --launcher slurm -n 5 \
        --dry-run -- $WANT_PROG >"$tmp/out" 2>&1
    rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "-n 5 in 4 slots: exit status $rc, want an error"
    echo "5 ranks in 4 slots: $(head -1 "$tmp/out")"
    env -u SLURM_JOB_NODELIST -u SLURM_TASKS_PER_NODE -u SLURM_JOB_ID timeout 30 "$run" --launcher slurm \
        -n 2 --dry-run -- $WANT_PROG >"$tmp/out" 2>&1
    rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "outside an allocation: exit status $rc, want an error"
    grep -qi 'alloc' "$tmp/out" || fail "outside an allocation: the error does not say so"
    echo "outside an allocation: $(head -1 "$tmp/out")"
    grep -qi 'rank 0:' "$tmp/out" && fail "outside an allocation it still printed rank lines"
    rm -f "$tmp/out"
}

case $case_ in
rig)
    start_rig || fail "Slurm could not start here (above: why)"
    make_data
    job "$tmp/plain" 4 "$km" $KM
    # one allocation of 4 tasks, in it one step per worker with the srun
    # words rally-run --launcher slurm uses; without --overlap a step takes
    # every CPU of the allocation on its node and the next waits for it
    jid=$(timeout 60 salloc --no-shell -n 4 -t 5 2>&1 | sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p')
    [ -n "$jid" ] || fail "salloc --no-shell -n 4 gave no allocation"
    echo "allocation $jid: $(squeue -h -j "$jid" -o '%D node(s) %C cpus %T' 2>&1)"
    tag="slurm-rig-$$"
    "$tracker" -n 4 --host 127.0.0.1 --secret-file "$tmp/secret" >"$tmp/tracker" 2>&1 &
    tpid=$!
    wait_line "$tmp/tracker" '^RALLY_SECRET_FILE=' "the tracker's address" 100 0.1
    eval "$(grep '^RALLY_' "$tmp/tracker")"
    export RALLY_TRACKER RALLY_SECRET_FILE
    step() { # rank: one worker as one step of the allocation
        RALLY_TEST_TAG=$tag RALLY_TASK_ID=$1 SLURM_JOB_ID=$jid timeout -k 5 120 srun --nodes=1 \
            --ntasks=1 --nodelist="$slurm_rig_node" --kill-on-bad-exit=1 --overlap "$km" $KM --pause-ms 100
    }
    for r in 0 1 2 3; do step $r >"$tmp/out$r" 2>&1 & eval "spid$r=\$!"; done
    wait_line "$tmp/out0" '^iteration 2 ' "iteration 2" 600 0.1
    workers_signal STOP "$tag"
    victim=$(sed -n 's/^shard 2 fingerprint .* pid \([0-9]*\)$/\1/p' "$tmp/out2" | tail -1)
    [ -n "$victim" ] || fail "rank 2 printed no pid"
    kill -9 "$victim" || fail "no worker $victim to kill"
    workers_signal CONT "$tag"
    echo "killed rank 2 (pid $victim)"
    wait "$spid2"
    echo "its srun exited with status $?"
    step 2 >"$tmp/again" 2>&1 || { cat "$tmp/again"; fail "the second step of rank 2 failed"; }
    for r in 0 1 3; do eval "wait \$spid$r" || { cat "$tmp/out$r"; fail "rank $r's step failed"; }; done
    wait "$tpid" || { cat "$tmp/tracker"; fail "the tracker says the job failed"; }
    for f in out0 out1 out2 out3 again; do sed "s/^/$f: /" "$tmp/$f"; done
    same_digest "$tmp/out0" "$tmp/plain"
    grep -q 'rank 2 restarted: resuming after iteration' "$tmp/again" ||
        fail "rank 2 started again did not say it resumed"
    scancel "$jid"
    no_leftovers "$tag"
    ;;
launcher)
    has_launcher
    make_data
    if ! start_rig; then
        echo "slurm_test launcher: checking the srun lines of --dry-run instead"
        dryrun_checks
        echo "slurm_test launcher: passed (dry-run lines only: Slurm could not start)"
        exit 0
    fi
    job "$tmp/plain" 4 "$km" $KM
    # failure-free, through srun
    tag="slurm-plain-$$"
    RALLY_TEST_TAG=$tag timeout -k 5 180 salloc -n 4 -t 5 "$run" --launcher slurm -n 4 "$km" $KM \
        >"$tmp/out" 2>&1 || fail "the job under salloc failed"
    cat "$tmp/out"
    same_digest "$tmp/out" "$tmp/plain"
    no_leftovers "$tag"
    # kill -9 of rank 2's worker mid-run
    tag="slurm-kill-$$"
    # a file of its own: the failure-free job's "$tmp/out" would match the
    # waits below before this job's shell truncated it
    RALLY_TEST_TAG=$tag timeout -k 5 200 salloc -n 4 -t 5 "$run" --launcher slurm -n 4 \
        --max-restarts 3 --heartbeat-timeout-ms 60000 "$km" $KM --pause-ms 100 >"$tmp/kill" 2>&1 &
    jobpid=$!
    wait_line "$tmp/kill" '^\[0\] iteration 2 ' "iteration 2" 900 0.1
    # frozen while we look and kill: the job cannot end before the kill
    workers_signal STOP "$tag"
    w=$(sed -n 's/^\[2\] shard 2 fingerprint .* pid \([0-9]*\)$/\1/p' "$tmp/kill" | tail -1)
    [ -n "$w" ] || fail "rank 2 printed no pid"
    no_key_in "$tag" "$(key_of_worker "$w")"
    kill_worker "$tmp/kill" 2
    workers_signal CONT "$tag"
    echo "killed rank 2's worker (pid $w)"
    wait "$jobpid" || fail "the job failed after kill -9"
    cat "$tmp/kill"
    same_digest "$tmp/kill" "$tmp/plain"
    grep -q '^\[2\] rank 2 restarted: resuming after iteration' "$tmp/kill" ||
        fail "rank 2 did not say it resumed"
    grep 'rally-run: summary:' "$tmp/kill" | grep -q 'deaths=1 recovered=1 ' ||
        fail "want deaths=1 recovered=1: $(grep 'rally-run: summary:' "$tmp/kill")"
    no_leftovers "$tag"
    ;;
preempt)
    # Slurm preempts a batch job: the signal reaches the batch script, which
    # hands it to rally-run (docs/launch.md's recipe), here sent the way
    # sbatch --signal=B:TERM@T sends it at its time, by scancel --signal=TERM
    # --batch once iteration 5 ran; rally-run asks for a snapshot at the next
    # checkpoint, stops once it is committed and exits 5; --resume latest
    # then gives the uninterrupted digest
    make_data
    start_rig || fail "the preempt case needs Slurm"
    P="$KM --pause-ms 100"
    job "$tmp/plain" 4 "$km" $P
    D=$tmp/snaps
    tag="slurm-preempt-$$"
    cat >"$tmp/job.sh" <<JOB
#!/bin/sh
#SBATCH --signal=B:TERM@120
"$run" -n 4 --snapshot-dir "$D" --snapshot-every 100 --grace-ms 60000 "$km" $P &
pid=\$!
trap 'kill -TERM \$pid' TERM
wait \$pid
wait \$pid
echo "rally-run exit \$?"
JOB
    id=$(RALLY_TEST_TAG=$tag sbatch --parsable -n 4 -t 5 -o "$tmp/out" "$tmp/job.sh") ||
        fail "sbatch failed"
    wait_line "$tmp/out" '^\[0\] iteration 5 ' "iteration 5" 900 0.1
    scancel --signal=TERM --batch "$id" || fail "scancel --signal=TERM --batch failed"
    wait_line "$tmp/out" '^rally-run exit ' "the end of the batch script" 900 0.1
    grep -v iteration "$tmp/out"
    grep -q '^rally-run exit 5$' "$tmp/out" || fail "rally-run did not exit 5 (preempted)"
    grep -q "preempted by signal 15 (Terminated) after $D/rally-kmeans/snap-" "$tmp/out" ||
        fail "no preemption verdict naming a snapshot"
    grep -q '^\[0\] result:' "$tmp/out" && fail "the job finished instead of stopping"
    no_leftovers "$tag"
    job "$tmp/resumed" 4 --snapshot-dir "$D" --resume latest "$km" $P
    grep -q '^\[0\] iteration [0-5] ' "$tmp/resumed" && fail "the resumed job repeated iterations"
    same_digest "$tmp/resumed" "$tmp/plain"
    ;;
dryrun)
    has_launcher
    dryrun_checks
    ;;
requeue)
    has_launcher
    make_data
    start_rig || fail "the requeue case needs Slurm"
    P="$KM --pause-ms 100"
    job "$tmp/plain" 4 "$km" $P
    L=$tmp/local S=$tmp/shared
    tag="slurm-requeue-$$"
    # docs/launch.md's script, with a line at each end saying which start
    cat >"$tmp/job.sh" <<JOB
#!/bin/sh
#SBATCH --requeue
echo "batch start \${SLURM_RESTART_COUNT:-0}"
"$run" --launcher slurm -n 4 --snapshot-dir "$L" --snapshot-local --snapshot-copy "$S" \\
    --snapshot-every 2 --resume latest-if-any "$km" $P
echo "rally-run exit \$? (start \${SLURM_RESTART_COUNT:-0})"
JOB
    id=$(RALLY_TEST_TAG=$tag sbatch --parsable -n 4 -t 5 -o "$tmp/out" --open-mode=append \
        "$tmp/job.sh") || fail "sbatch failed"
    wait_line "$tmp/out" "^\[0\] rally: rank 0: snapshot: copied to $S/rally-kmeans/snap-" \
        "a snapshot copied to the second tier" 900 0.1
    # the workers frozen: the run cannot end before the loss, and one that
    # nothing ends stays to be found
    workers_signal STOP "$tag"
    first=$(grep -lzx "RALLY_TEST_TAG=$tag" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3)
    rr= guard= batch=
    for p in $first; do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = rally-run ] || continue
        pp=$(awk '{print $4}' "/proc/$p/stat")
        if [ "$(cat "/proc/$pp/comm" 2>/dev/null)" = rally-run ]; then guard=$p; else rr=$p batch=$pp; fi
    done
    [ -n "$rr" ] && [ -n "$guard" ] && [ -n "$batch" ] ||
        fail "no rally-run ($rr), guard ($guard) and batch shell ($batch) among $first"
    # the machine goes: its batch shell runs no more, rally-run and its
    # guard die at once, its disk is lost
    kill -STOP "$batch"
    kill -9 "$rr" "$guard"
    rm -rf "$L"
    echo "rally-run's machine lost: pid $rr and its guard $guard killed -9, batch shell $batch frozen"
    left() { # the first run's processes still alive, but the frozen batch shell
        for p in $first; do
            [ "$p" != "$batch" ] && grep -qzx "RALLY_TEST_TAG=$tag" "/proc/$p/environ" 2>/dev/null &&
                [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ] && echo "$p($(cat "/proc/$p/comm"))"
        done
    }
    # a worker ends when its agent's stdin does, through srun, as a rule
    # within a second; an agent was seen to outlive rally-run until Slurm
    # ended its step: the requeue must end every one (by the clock: a
    # loaded machine makes /proc's scan slow)
    end=$(($(date +%s) + 10))
    while [ -n "$(left)" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 0.1; done
    lingered=$(left)
    scontrol requeue "$id" || fail "scontrol requeue $id failed"
    end=$(($(date +%s) + 60))
    while [ -n "$(left)" ]; do
        [ "$(date +%s)" -ge "$end" ] && fail "the first run's processes outlive its requeue by 60 s: $(left)"
        sleep 0.1
    done
    echo "the first run's workers, agents and sruns are gone${lingered:+ (after the requeue: $lingered)}"
    # Slurm holds a requeued job back (BeginTime, 2 minutes): now, here
    i=0
    until [ "$(squeue -h -j "$id" -o %T 2>/dev/null)" = PENDING ] &&
        scontrol update JobId="$id" StartTime=now >/dev/null 2>&1; do
        i=$((i + 1))
        [ $i -gt 300 ] && fail "the requeued job never pended: $(squeue -h -j "$id" -o '%T %r' 2>&1)"
        sleep 0.1
    done
    wait_line "$tmp/out" '^batch start 1$' "the requeued start" 900 0.1
    [ -z "$(left)" ] || fail "the first run's processes outlive the requeue: $(left)"
    wait_line "$tmp/out" '^rally-run exit .* (start 1)$' "the end of the requeued run" 1200 0.1
    grep -v iteration "$tmp/out"
    sed -n '/^batch start 1$/,$p' "$tmp/out" >"$tmp/second"
    sed -n '1,/^batch start 1$/p' "$tmp/out" >"$tmp/first"
    grep -q '^rally-run: --resume latest-if-any: .* a fresh start' "$tmp/first" ||
        fail "the first start did not say it starts afresh"
    grep -q "^rally-run: resuming from $S/rally-kmeans/snap-[0-9]* (the second tier, --snapshot-copy)" \
        "$tmp/second" || fail "the requeued run did not resume from the second tier"
    grep -q '^\[0\] iteration 1 ' "$tmp/second" && fail "the requeued run started over"
    grep -q '^rally-run exit 0 (start 1)$' "$tmp/second" || fail "the requeued run failed"
    same_digest "$tmp/second" "$tmp/plain"
    i=0
    while [ -n "$(squeue -h -j "$id" -o %T 2>/dev/null)" ]; do # listed while pending, running, completing
        i=$((i + 1))
        [ $i -gt 300 ] && fail "the requeued job did not end: $(squeue -h -j "$id" -o %T 2>&1)"
        sleep 0.1
    done
    scontrol show job "$id" 2>/dev/null | grep -q 'Restarts=1 ' ||
        fail "Slurm does not count one restart: $(scontrol show job "$id" 2>&1 | grep -o 'Restarts=[0-9]*')"
    no_leftovers "$tag"
    ;;
*)
    fail "unknown case"
    ;;
esac
echo "slurm_test $case_: passed"
