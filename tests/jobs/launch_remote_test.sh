#!/bin/sh
# launch_remote_test.sh CASE BUILD_DIR — rally-run's ssh and mpirun launchers
# for real (tools/launch/remote.h, tools/rally-agent.c, docs/launch.md).
#
# The ssh cases start their own sshd (root, key authentication only, keys
# generated here) listening on 127.0.0.2 and 127.0.0.3 at a free port: two
# "hosts" on loopback.  An sshd that does not come up fails the case (never a
# skip).  Every job runs under timeout; the trap kills sshd and anything of
# the case left; each case checks that no worker, agent or ssh survives.
#   ssh_digest      4 k-means ranks on 2 hosts: the digest of the local run
#   ssh_kill9       kill -9 of rank 2's worker (host 127.0.0.3) while it holds
#                   the job (tests/progs/recover.c lag=...): restarted on
#                   127.0.0.3, recovers, the digest of the local run
#   ssh_lost        the sshd session that serves rank 1 is killed (held the
#                   same way): "the connection to the host was lost",
#                   restarted, the local run's digest
#   ssh_unreachable a host where nothing listens: "host H (rank R): cannot be
#                   reached: <ssh's line>", exit status 1, nothing left
#   ssh_notfound    a program (and an agent) the host lacks: "host H (rank R):
#                   PROG: not found", exit status 127
#   ssh_exit        a remote worker that exits 3 on its own: the job's failure,
#                   exit status 3 (not restarted)
#   ssh_kill_run    rally-run killed with SIGKILL: no ssh, agent or worker left
#   ssh_secret      the secret's key is in no process's argv or environment;
#                   the agent's copy is a 0600 file in a 0700 directory that
#                   is gone after the job
#   ssh_signal      SIGTERM to rally-run reaches the remote workers through the
#                   agents (exit status 143, the workers saw SIGTERM)
#   ssh_python      a Python job on 2 hosts: without -x PYTHONPATH the remote
#                   ranks cannot import rally (ssh carries no environment), the
#                   job fails saying so; with -x PYTHONPATH, and with -x
#                   PYTHONPATH=DIR, it gives the local run's digest
#   ssh_snapshot_env RALLY_SNAPSHOT_DIR and RALLY_SNAPSHOT_EVERY in rally-run's
#                   environment are its flags for remote ranks too: the
#                   snapshots are written on the hosts and cleaned up after;
#                   RALLY_SNAPSHOT_EVERY=abc is refused before any ssh starts
#   dry_run         the generated srun and mpirun command lines, word by word;
#                   every launcher's lines carry the snapshot variables as
#                   rally-run's flags and the -x variables, and refuse a
#                   malformed one alike
#   domains         failure domains, with --dry-run (nothing starts): a host's
#                   label (h1:2@r1, in --hosts and --hostfile) is RALLY_DOMAIN
#                   in its ranks' lines under ssh, slurm and mpirun, over -x,
#                   and a host without one has none; a host of 4 beside one of
#                   1 with rally_local_replica=1 is said in one sentence,
#                   3 hosts of 4 with the default 2 nothing; racks not
#                   covered when the copies spread over hosts are said, and
#                   nothing when they spread over racks; --require-redundancy
#                   host|rack refuses those (exit 2) and one host, or no rack;
#                   with rally_local_scheme=xor, a host holding two members
#                   of a parity set is said (naming the set), one member a
#                   set nothing
#   mpirun          a real --launcher mpirun job on localhost: the local digest,
#                   also after a worker's kill -9 (restarted through mpirun);
#                   as root without OpenMPI's override, OpenMPI's own headline
#                   and the two variables that allow it (the same line without
#                   root: launch_hosts_test's mpirun_as_root)
set -u
case_=$1 build=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
run=$build/rally-run km=$build/rally-kmeans prog=$build/tests/rally_test_prog
rec=$build/tests/recover
T=$(mktemp -d "${TMPDIR:-/tmp}/rally-rt-XXXXXX")
chmod 755 "$T"
TAG="rally-rt-$$-t" # the -t: no tag is the start of another
# rally-run passes its RALLY_* variables on (--env): the tag reaches every
# ssh, agent and worker of the job, in argv or the environment
RUN="env RALLY_TEST_TAG=$TAG $run"
sshd_pid=""
cleanup() {
    [ -n "$sshd_pid" ] && kill "$sshd_pid" 2>/dev/null
    for p in $(tagged); do kill -9 "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT
fail() {
    echo "FAIL launch_remote $case_: $*"
    for f in "$T"/out "$T"/err "$T"/sshd.log; do [ -s "$f" ] && { echo "--- $f"; tail -40 "$f"; }; done
    exit 1
}
has() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2'"; }
# every process of this case: the tag in its argv (ssh, agent, worker) or environment
tagged() {
    for f in /proc/[0-9]*/cmdline /proc/[0-9]*/environ; do
        p=${f#/proc/}
        p=${p%%/*}
        [ "$p" = $$ ] && continue
        grep -qaF "$TAG" "$f" 2>/dev/null && echo "$p"
    done | sort -u
}
no_leftovers() {
    i=0
    while [ -n "$(tagged)" ]; do
        i=$((i + 1))
        [ $i -gt 50 ] && fail "left behind: $(for p in $(tagged); do tr '\0' ' ' <"/proc/$p/cmdline"; echo; done)"
        sleep 0.1
    done
}
wait_line() { # file pattern what: until the pattern shows in file (up to 60 s)
    i=0
    until grep -q -- "$2" "$1" 2>/dev/null; do
        i=$((i + 1))
        [ $i -gt 600 ] && fail "$3 never came"
        sleep 0.1
    done
}
digest() { grep -o 'model_digest=[0-9a-f]*' "$1"; }

# --- sshd on 127.0.0.2 and 127.0.0.3 -------------------------------------
start_sshd() {
    command -v /usr/sbin/sshd >/dev/null || fail "no /usr/sbin/sshd (scripts/deps.sh installs openssh-server)"
    mkdir -p /run/sshd
    ssh-keygen -q -t ed25519 -N '' -f "$T/host_key" || fail "ssh-keygen (host key) failed"
    ssh-keygen -q -t ed25519 -N '' -f "$T/id" || fail "ssh-keygen (user key) failed"
    cp "$T/id.pub" "$T/authorized_keys"
    port=$(python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.2", 0)); print(s.getsockname()[1])')
    cat >"$T/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.2
ListenAddress 127.0.0.3
HostKey $T/host_key
AuthorizedKeysFile $T/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin yes
PidFile $T/sshd.pid
MaxStartups 64:30:128
LogLevel ERROR
EOF
    /usr/sbin/sshd -D -e -f "$T/sshd_config" 2>"$T/sshd.log" &
    sshd_pid=$!
    SSHO="--ssh-option Port=$port --ssh-option IdentityFile=$T/id --ssh-option IdentitiesOnly=yes
          --ssh-option UserKnownHostsFile=/dev/null --ssh-option StrictHostKeyChecking=no
          --ssh-option LogLevel=ERROR"
    i=0
    until ssh -o BatchMode=yes -o Port="$port" -o IdentityFile="$T/id" -o IdentitiesOnly=yes \
        -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -o LogLevel=ERROR \
        127.0.0.3 true 2>"$T/err"; do
        i=$((i + 1))
        kill -0 "$sshd_pid" 2>/dev/null || fail "sshd did not start"
        [ $i -gt 100 ] && fail "sshd on port $port does not let us in"
        sleep 0.1
    done
}

kmeans_data() {
    "$build/rally-datagen" --rows 20000 --features 8 --centers 6 --spread 2 --seed 7 --format csv \
        -o "$T/d.csv" >/dev/null 2>&1 || fail "rally-datagen failed"
    KM="--data $T/d.csv --data-opt csv_label=0 -k 6"
    timeout -k 5 120 $RUN -n 4 "$km" $KM >"$T/plain" 2>&1 ||
        { cp "$T/plain" "$T/out"; fail "the local job failed"; }
    digest "$T/plain" >/dev/null || fail "the local job printed no digest"
}

recover_plain() { # the failure-free run of tests/progs/recover.c here: $T/plain
    timeout -k 5 120 $RUN -n 4 "$rec" 2000 8 >"$T/plain" 2>&1 ||
        { cp "$T/plain" "$T/out"; fail "the local recover job failed"; }
    digest "$T/plain" >/dev/null || fail "the local recover job printed no digest"
}

case $case_ in
ssh_digest)
    start_sshd
    kmeans_data
    timeout -k 5 180 $RUN -n 4 --launcher ssh --hosts 127.0.0.2:2,127.0.0.3:2 $SSHO \
        "$km" $KM >"$T/out" 2>&1 || fail "the ssh job failed"
    [ "$(digest "$T/out")" = "$(digest "$T/plain")" ] ||
        fail "digest $(digest "$T/out"), the local run's $(digest "$T/plain")"
    has "$T/out" "rally-run: summary: deaths=0 recovered=0 epochs=0 restarts=0"
    for r in 0 1 2 3; do grep -q "^\[$r\] " "$T/out" || fail "no line prefixed [$r]"; done
    no_leftovers
    ;;
ssh_kill9)
    start_sshd
    recover_plain
    # rank 2 holds the job at checkpoint version 3 (60 s) until it is killed;
    # its restart does not lag (tests/progs/recover.c "lag")
    timeout -k 5 180 $RUN -n 4 --launcher ssh --hosts 127.0.0.2:2,127.0.0.3:2 $SSHO \
        "$rec" 2000 8 lag=2,3,0,60000 >"$T/out" 2>&1 &
    job=$!
    wait_line "$T/out" '^\[2\] rank 2 lags' "rank 2's hold"
    victim=$(sed -n 's/^\[2\] pid 2 \([0-9]*\)$/\1/p' "$T/out" | tail -1)
    [ -n "$victim" ] || fail "rank 2 printed no pid"
    tr '\0' '\n' <"/proc/$victim/environ" | grep -qx "RALLY_TASK_ID=2" || fail "$victim is not rank 2"
    kill -9 "$victim"
    wait $job || fail "the job failed after kill -9 of a remote worker"
    [ "$(digest "$T/out")" = "$(digest "$T/plain")" ] ||
        fail "digest $(digest "$T/out"), the local run's $(digest "$T/plain")"
    has "$T/out" "rally-run: rank 2 on host 127.0.0.3 died (killed by signal 9); restarting it on 127.0.0.3 (restart 1 of 3)"
    has "$T/out" "rally-run: summary: deaths=1 recovered=1 "
    [ "$(grep -c '^\[2\] pid 2 ' "$T/out")" -eq 2 ] || fail "rank 2 did not start again"
    no_leftovers
    ;;
ssh_lost)
    start_sshd
    recover_plain
    timeout -k 5 180 $RUN -n 4 --launcher ssh --hosts 127.0.0.2:2,127.0.0.3:2 $SSHO \
        "$rec" 2000 8 lag=1,3,0,60000 >"$T/out" 2>&1 &
    job=$!
    wait_line "$T/out" '^\[1\] rank 1 lags' "rank 1's hold"
    worker=$(sed -n 's/^\[1\] pid 1 \([0-9]*\)$/\1/p' "$T/out" | tail -1)
    agent=$(ps -o ppid= -p "$worker" | tr -d ' ')
    session=$(ps -o ppid= -p "$agent" | tr -d ' ')
    case "$(cat "/proc/$session/comm")" in sshd*) ;; *) fail "no sshd above rank 1's agent" ;; esac
    # the connection ends: the agent's stdin ends, it kills the worker
    kill -9 "$session" || fail "cannot kill sshd $session (worker $worker, agent $agent)"
    wait $job || fail "the job failed after rank 1's connection was lost"
    [ "$(digest "$T/out")" = "$(digest "$T/plain")" ] ||
        fail "digest $(digest "$T/out"), the local run's $(digest "$T/plain")"
    has "$T/out" "rally-run: rank 1 on host 127.0.0.2 died: the connection to the host was lost; restarting it on 127.0.0.2 (restart 1 of 3)"
    has "$T/out" "rally-run: summary: deaths=1 recovered=1 "
    no_leftovers
    ;;
ssh_unreachable)
    start_sshd
    # nothing listens on 127.0.0.4: ssh's own "Connection refused"
    timeout -k 5 60 $RUN -n 3 --launcher ssh --hosts 127.0.0.2:2,127.0.0.4 --grace-ms 300 $SSHO \
        "$prog" sleep "$TAG" >"$T/out" 2>"$T/err"
    rc=$?
    [ $rc -eq 1 ] || fail "exit status $rc, want 1"
    has "$T/err" "rally-run: host 127.0.0.4 (rank 2): cannot be reached: ssh: connect to host 127.0.0.4 port $port: Connection refused"
    [ "$(grep -c 'cannot be reached' "$T/err")" -eq 1 ] || fail "the reason is not said once"
    grep -q '^\[2\] ssh:' "$T/err" && fail "ssh's line was printed as the worker's"
    no_leftovers
    ;;
ssh_notfound)
    start_sshd
    timeout -k 5 60 $RUN -n 2 --launcher ssh --hosts 127.0.0.2,127.0.0.3 --grace-ms 300 $SSHO \
        "$T/no-such-prog" "$TAG" >"$T/out" 2>"$T/err"
    rc=$?
    [ $rc -eq 127 ] || fail "exit status $rc, want 127"
    grep -q "^rally-run: host 127.0.0.[23] (rank [01]): $T/no-such-prog: not found\$" "$T/err" ||
        fail "no 'host H (rank R): PROG: not found' line"
    timeout -k 5 60 $RUN -n 2 --launcher ssh --hosts 127.0.0.2,127.0.0.3 --grace-ms 300 $SSHO \
        --agent "$T/no-such-agent" "$prog" sleep "$TAG" >"$T/out" 2>"$T/err"
    rc=$?
    [ $rc -eq 127 ] || fail "exit status $rc for a missing agent, want 127"
    grep -q "^rally-run: host 127.0.0.[23] (rank [01]): $T/no-such-agent: not found\$" "$T/err" ||
        fail "no 'host H (rank R): AGENT: not found' line"
    no_leftovers
    ;;
ssh_exit)
    start_sshd
    timeout -k 5 60 $RUN -n 3 --launcher ssh --hosts 127.0.0.2:2,127.0.0.3 --grace-ms 300 $SSHO \
        "$prog" exitif 2 3 "$TAG" >"$T/out" 2>"$T/err"
    rc=$?
    [ $rc -eq 3 ] || fail "exit status $rc, want 3"
    has "$T/err" "rally-run: rank 2 on host 127.0.0.3 exited with status 3"
    has "$T/err" "rally-run: summary: deaths=1 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:0,2:1"
    grep -q "@rally-agent" "$T/err" "$T/out" && fail "the agent's marked lines were printed"
    no_leftovers
    ;;
ssh_kill_run)
    start_sshd
    timeout -k 5 60 $RUN -n 4 --launcher ssh --hosts 127.0.0.2:2,127.0.0.3:2 $SSHO \
        "$prog" sleep "$TAG" >"$T/out" 2>"$T/err" &
    i=0
    while [ "$(pgrep -fc "^$prog sleep $TAG")" -lt 4 ]; do
        i=$((i + 1)); [ $i -gt 300 ] && fail "the 4 remote workers did not start"
        sleep 0.1
    done
    kill -9 "$(pgrep -of "^$run -n 4 --launcher ssh .*$TAG")" # -o: not its guard
    no_leftovers
    ;;
ssh_secret)
    start_sshd
    timeout -k 5 60 $RUN -n 4 --launcher ssh --hosts 127.0.0.2:2,127.0.0.3:2 $SSHO \
        "$prog" sleep "$TAG" >"$T/out" 2>"$T/err" &
    job=$!
    i=0
    while [ "$(pgrep -fc "^$prog sleep $TAG")" -lt 4 ]; do
        i=$((i + 1)); [ $i -gt 300 ] && fail "the 4 remote workers did not start"
        sleep 0.1
    done
    w=$(pgrep -f "^$prog sleep $TAG" | head -n 1)
    file=$(tr '\0' '\n' <"/proc/$w/environ" | sed -n 's/^RALLY_SECRET_FILE=//p')
    [ -f "$file" ] || fail "the worker's RALLY_SECRET_FILE '$file' is no file"
    [ "$(stat -c %a "$file")" = 600 ] || fail "$file is mode $(stat -c %a "$file"), want 600"
    [ "$(stat -c %a "$(dirname "$file")")" = 700 ] || fail "its directory is not mode 700"
    key=$(cut -d' ' -f4 "$file")
    [ ${#key} -eq 64 ] || fail "no key in $file"
    n=0
    for p in $(tagged); do
        n=$((n + 1))
        for f in cmdline environ; do
            grep -qaF "$key" "/proc/$p/$f" 2>/dev/null &&
                fail "the secret is in /proc/$p/$f ($(tr '\0' ' ' <"/proc/$p/cmdline"))"
        done
    done
    # rally-run, 4 ssh, 4 agents, 4 workers (and timeout) were looked at
    [ $n -ge 13 ] || fail "only $n processes of the job were found"
    for p in $(pgrep -x sshd); do
        for f in cmdline environ; do
            grep -qaF "$key" "/proc/$p/$f" 2>/dev/null && fail "the secret is in sshd's /proc/$p/$f"
        done
    done
    kill -TERM $job
    wait $job
    no_leftovers
    [ -e "$(dirname "$file")" ] && fail "the agent left the secret's directory behind"
    ;;
ssh_signal)
    start_sshd
    # each worker notes that it runs, and the SIGTERM it gets
    w='trap "echo term >$0.term.$RALLY_TASK_ID; exit 0" TERM; touch $0.up.$RALLY_TASK_ID
       while :; do sleep 0.1; done'
    timeout -k 5 60 $RUN -n 2 --launcher ssh --hosts 127.0.0.2,127.0.0.3 $SSHO \
        sh -c "$w" "$T/$TAG" >"$T/out" 2>"$T/err" &
    job=$!
    i=0
    until [ -e "$T/$TAG.up.0" ] && [ -e "$T/$TAG.up.1" ]; do
        i=$((i + 1)); [ $i -gt 300 ] && fail "the 2 remote workers did not start"
        sleep 0.1
    done
    kill -TERM "$(pgrep -of "^$run -n 2 --launcher ssh .*$TAG")"
    wait $job
    rc=$?
    [ $rc -eq 143 ] || fail "exit status $rc, want 143"
    has "$T/err" "rally-run: stopped by signal 15 (Terminated)"
    # the agents passed the SIGTERM on (ssh would not have)
    for r in 0 1; do [ -e "$T/$TAG.term.$r" ] || fail "rank $r's worker got no SIGTERM"; done
    no_leftovers
    ;;
ssh_python)
    start_sshd
    # the interpreter the build found (with numpy), at its full path on every "host"
    python=$(sed -n 's/^RALLY_PYTHON:FILEPATH=//p' "$build/CMakeCache.txt")
    [ -x "$python" ] || fail "no RALLY_PYTHON in $build/CMakeCache.txt"
    py="$python $src/bindings/python/tests/progs/ckpt.py 4"
    export PYTHONPATH=$build/python PYTHONDONTWRITEBYTECODE=1
    timeout -k 5 120 $RUN -n 4 $py >"$T/plain" 2>&1 ||
        { cp "$T/plain" "$T/out"; fail "the local Python job failed"; }
    grep -o 'digest [0-9a-f]*' "$T/plain" >"$T/want" || fail "the local Python job printed no digest"
    timeout -k 5 120 $RUN -n 4 --launcher ssh --hosts 127.0.0.2:2,127.0.0.3:2 --grace-ms 300 \
        $SSHO $py >"$T/out" 2>&1 && fail "the ssh job without -x PYTHONPATH passed"
    has "$T/out" "No module named 'rally'"
    no_leftovers
    timeout -k 5 180 $RUN -n 4 --launcher ssh --hosts 127.0.0.2:2,127.0.0.3:2 -x PYTHONPATH $SSHO \
        $py >"$T/out" 2>&1 || fail "the ssh job with -x PYTHONPATH failed"
    [ "$(grep -o 'digest [0-9a-f]*' "$T/out")" = "$(cat "$T/want")" ] || fail "another digest"
    no_leftovers
    env -u PYTHONPATH timeout -k 5 180 $RUN -n 4 --launcher ssh --hosts 127.0.0.2:2,127.0.0.3:2 \
        -x PYTHONPATH="$build/python" $SSHO $py >"$T/out" 2>&1 ||
        fail "the ssh job with -x PYTHONPATH=DIR failed"
    [ "$(grep -o 'digest [0-9a-f]*' "$T/out")" = "$(cat "$T/want")" ] || fail "another digest"
    no_leftovers
    ;;
ssh_snapshot_env)
    start_sshd
    mkdir "$T/d"
    RALLY_SNAPSHOT_DIR=$T/d RALLY_SNAPSHOT_EVERY=2 timeout -k 5 180 $RUN -n 4 --launcher ssh \
        --hosts 127.0.0.2:2,127.0.0.3:2 $SSHO "$rec" 2000 8 >"$T/out" 2>&1 ||
        fail "the ssh job with RALLY_SNAPSHOT_DIR and RALLY_SNAPSHOT_EVERY failed"
    has "$T/out" "rally-run: the run succeeded: removed its 2 snapshots (--keep-snapshots keeps them)"
    no_leftovers
    RALLY_SNAPSHOT_DIR=$T/d RALLY_SNAPSHOT_EVERY=abc timeout -k 5 60 $RUN -n 4 --launcher ssh \
        --hosts 127.0.0.2:2,127.0.0.3:2 $SSHO "$prog" sleep "$TAG" >"$T/out" 2>"$T/err"
    rc=$?
    [ $rc -eq 2 ] || fail "RALLY_SNAPSHOT_EVERY=abc: exit status $rc, want 2"
    has "$T/err" "rally-run: RALLY_SNAPSHOT_EVERY wants a number of versions, not 'abc'"
    grep -q "^\[" "$T/out" "$T/err" && fail "RALLY_SNAPSHOT_EVERY=abc: a worker ran"
    no_leftovers
    ;;
dry_run)
    a=$build/rally-agent
    # every launcher: the snapshot variables are rally-run's flags, -x goes to
    # the workers, a malformed variable is refused before anything starts
    mkdir "$T/d"
    for l in "ssh --hosts h" "slurm --hosts n1" "mpirun"; do
        env -u SLURM_JOB_NODELIST RALLY_SNAPSHOT_DIR="$T/d" RALLY_SNAPSHOT_EVERY=2 \
            RALLY_TEST_TAG=$TAG "$run" -n 1 --launcher $l --host 127.0.0.1 --dry-run \
            -x PYTHONPATH=/p -- "$prog" >"$T/out" 2>"$T/err" || fail "$l: --dry-run failed"
        for w in "--env RALLY_RUN_ID=" "--env RALLY_SNAPSHOT_DIR=$T/d --env RALLY_SNAPSHOT_JOB=rally_test_prog --env RALLY_SNAPSHOT_EVERY=2 " \
            "--env PYTHONPATH=/p"; do
            has "$T/out" "$w"
        done
        [ "$(grep -o 'RALLY_SNAPSHOT_EVERY=' "$T/out" | wc -l)" -eq 1 ] ||
            fail "$l: RALLY_SNAPSHOT_EVERY given twice"
        env -u SLURM_JOB_NODELIST RALLY_SNAPSHOT_DIR="$T/d" RALLY_SNAPSHOT_EVERY=abc \
            "$run" -n 1 --launcher $l --dry-run -- "$prog" >"$T/out" 2>"$T/err"
        [ $? -eq 2 ] || fail "$l: RALLY_SNAPSHOT_EVERY=abc: want exit status 2"
        has "$T/err" "rally-run: RALLY_SNAPSHOT_EVERY wants a number of versions, not 'abc'"
    done
    env -u SLURM_JOB_NODELIST RALLY_TEST_TAG=$TAG "$run" -n 3 --launcher slurm --hosts n1:2,n2 --host 127.0.0.1 --port 7000 --dry-run \
        -- "$prog" "two words" "it's" >"$T/out" 2>"$T/err" || fail "slurm --dry-run failed"
    cat >"$T/want" <<EOF
rank 0: srun --nodes=1 --ntasks=1 --nodelist=n1 --kill-on-bad-exit=1 --overlap --input=all --quiet $a --env RALLY_TRACKER=127.0.0.1:7000 --env RALLY_TASK_ID=0 --env RANK=0 --env WORLD_SIZE=3 --env LOCAL_RANK=0 --env LOCAL_WORLD_SIZE=2 --env RALLY_TEST_TAG=$TAG -- $prog 'two words' 'it'\\''s'
rank 1: srun --nodes=1 --ntasks=1 --nodelist=n1 --kill-on-bad-exit=1 --overlap --input=all --quiet $a --env RALLY_TRACKER=127.0.0.1:7000 --env RALLY_TASK_ID=1 --env RANK=1 --env WORLD_SIZE=3 --env LOCAL_RANK=1 --env LOCAL_WORLD_SIZE=2 --env RALLY_TEST_TAG=$TAG -- $prog 'two words' 'it'\\''s'
rank 2: srun --nodes=1 --ntasks=1 --nodelist=n2 --kill-on-bad-exit=1 --overlap --input=all --quiet $a --env RALLY_TRACKER=127.0.0.1:7000 --env RALLY_TASK_ID=2 --env RANK=2 --env WORLD_SIZE=3 --env LOCAL_RANK=0 --env LOCAL_WORLD_SIZE=1 --env RALLY_TEST_TAG=$TAG -- $prog 'two words' 'it'\\''s'
EOF
    diff "$T/want" "$T/out" >"$T/err" || fail "srun lines differ"
    printf 'node-a slots=1 # first\n\nnode-b:2\n' >"$T/hosts"
    $RUN -n 2 --launcher mpirun --hostfile "$T/hosts" --host 198.18.0.1 --port 7001 \
        --agent /opt/rally/rally-agent --dry-run "$prog" x >"$T/out" 2>"$T/err" ||
        fail "mpirun --dry-run failed"
    cat >"$T/want" <<EOF
rank 0: mpirun -np 1 --host node-a --quiet --mca orte_local_tmpdir_base RALLY_RUN_TMPDIR/ompi-0 /opt/rally/rally-agent --env RALLY_TRACKER=198.18.0.1:7001 --env RALLY_TASK_ID=0 --env RANK=0 --env WORLD_SIZE=2 --env LOCAL_RANK=0 --env LOCAL_WORLD_SIZE=1 --env RALLY_TEST_TAG=$TAG -- $prog x
rank 1: mpirun -np 1 --host node-b --quiet --mca orte_local_tmpdir_base RALLY_RUN_TMPDIR/ompi-1 /opt/rally/rally-agent --env RALLY_TRACKER=198.18.0.1:7001 --env RALLY_TASK_ID=1 --env RANK=1 --env WORLD_SIZE=2 --env LOCAL_RANK=0 --env LOCAL_WORLD_SIZE=1 --env RALLY_TEST_TAG=$TAG -- $prog x
EOF
    diff "$T/want" "$T/out" >"$T/err" || fail "mpirun lines differ"
    # ssh quotes the remote words once more: the remote shell reads them
    $RUN -n 1 --launcher ssh --hosts h --host 127.0.0.1 --dry-run "$prog" "a b" >"$T/out" 2>"$T/err"
    echo "rank 0: ssh -o BatchMode=yes h -- $a --env RALLY_TRACKER=127.0.0.1:0 --env RALLY_TASK_ID=0 --env RANK=0 --env WORLD_SIZE=1 --env LOCAL_RANK=0 --env LOCAL_WORLD_SIZE=1 --env RALLY_TEST_TAG=$TAG -- $prog ''\\''a b'\\'''" >"$T/want"
    diff "$T/want" "$T/out" >"$T/err" || fail "ssh line differs"
    # no --bind: remote workers are told an address of this host that is not loopback
    $RUN -n 1 --launcher ssh --hosts h --dry-run "$prog" >"$T/out" 2>"$T/err"
    addr=$(sed -n 's/.* --env RALLY_TRACKER=\([^ ]*\) .*/\1/p' "$T/out")
    case $addr in
    "" | 127.* | localhost:* | "[::1]":*) fail "without --bind the workers are told '$addr'" ;;
    esac
    # outside an allocation, slurm without --hosts is an error that says so
    env -u SLURM_JOB_NODELIST RALLY_TEST_TAG=$TAG "$run" -n 2 --launcher slurm --dry-run "$prog" >"$T/out" 2>"$T/err"
    [ $? -eq 2 ] || fail "slurm outside an allocation: want exit status 2"
    has "$T/err" "--launcher slurm runs inside a Slurm allocation"
    $RUN -n 4 --launcher ssh --hosts a:2,b --dry-run "$prog" >"$T/out" 2>"$T/err"
    [ $? -eq 2 ] || fail "too few slots: want exit status 2"
    has "$T/err" "the hosts have 3 slots for 4 workers"
    # usage errors: exit status 2 and a sentence
    for c in "--launcher pbs|--launcher wants local, ssh, slurm or mpirun, not 'pbs'" \
        "--hosts a|--hosts, --hostfile and --agent are for --launcher ssh, slurm or mpirun" \
        "--launcher slurm --ssh-option Port=1|--ssh-option is for --launcher ssh" \
        "--launcher ssh|--launcher ssh needs --hosts or --hostfile" \
        "--launcher ssh --hosts a --hostfile f|give --hosts or --hostfile, not both" \
        "--launcher ssh --hosts a:0|--hosts a:0: 'a:0': the slots after ':' must be a number" \
        "--launcher ssh --hostfile $T/none|--hostfile $T/none: No such file or directory"; do
        "$run" -n 1 ${c%%|*} --dry-run "$prog" >"$T/out" 2>"$T/err"
        [ $? -eq 2 ] || fail "'${c%%|*}': want exit status 2"
        has "$T/err" "${c#*|}"
    done
    "$run" --help >"$T/out" || fail "--help failed"
    for f in --launcher --hosts --hostfile --ssh-option --agent --dry-run "-x VAR | VAR=VALUE" \
        RALLY_SNAPSHOT_DIR; do has "$T/out" "$f"; done
    ;;
domains)
    # rally-run's own lines on stderr (none: the file is empty)
    says() { grep '^rally-run: ' "$T/err" >"$T/said"; diff "$T/want" "$T/said" >/dev/null ||
        fail "$1: rally-run said $(cat "$T/said"), not $(cat "$T/want")"; }
    $RUN -n 5 --launcher ssh --hosts h1:4,h2 --dry-run "$prog" rally_local_replica=1 \
        >"$T/out" 2>"$T/err" || fail "a host of 4 beside 1: --dry-run failed"
    echo "rally-run: losing host h1 (4 of 5 ranks) would lose the local models of 3 ranks: every copy of them is on it (rally_local_replica=1: 4 would cover it)" >"$T/want"
    says "a host of 4 beside 1"
    [ "$(grep -c '^rank ' "$T/out")" -eq 5 ] || fail "a host of 4 beside 1: not every line"
    grep -q RALLY_DOMAIN "$T/out" && fail "a host without a label got RALLY_DOMAIN"
    # the setting seen as the workers see it: -x, and their environment
    $RUN -n 5 --launcher ssh --hosts h1:4,h2 --dry-run -x RALLY_LOCAL_REPLICA=1 "$prog" \
        >"$T/out" 2>"$T/err" || fail "-x RALLY_LOCAL_REPLICA=1: --dry-run failed"
    says "-x RALLY_LOCAL_REPLICA=1"
    env RALLY_LOCAL_REPLICA=1 "$run" -n 5 --launcher ssh --hosts h1:4,h2 --require-redundancy host \
        --dry-run "$prog" >"$T/out" 2>"$T/err"
    [ $? -eq 2 ] || fail "--require-redundancy host: want exit status 2"
    echo "rally-run: --require-redundancy host: not started: losing that host would lose copies (above)" >>"$T/want"
    says "--require-redundancy host"
    [ -s "$T/out" ] && fail "--require-redundancy host refused, yet printed the lines"
    # 3 hosts of 4, rally_local_replica=2 (the default): covered, nothing said
    : >"$T/want"
    $RUN -n 12 --launcher ssh --hosts h1:4,h2:4,h3:4 --require-redundancy host --dry-run "$prog" \
        >"$T/out" 2>"$T/err" || fail "3 hosts of 4: --dry-run failed"
    says "3 hosts of 4"
    # rally_local_scheme=xor: one member of each parity set a host covers it.
    # Sets of one rank a host (the default, 3 here): nothing said
    $RUN -n 12 --launcher ssh --hosts h1:4,h2:4,h3:4 --require-redundancy host --dry-run "$prog" \
        rally_local_scheme=xor >"$T/out" 2>"$T/err" || fail "xor at 3 hosts of 4: --dry-run failed"
    says "xor at 3 hosts of 4"
    # sets of 4 on the ring 0 4 8 1 5 9 2 6 10 3 7 11: each host holds two
    # members of one set, as the workers cut them (hostloss_xor_set4)
    $RUN -n 12 --launcher ssh --hosts h1:4,h2:4,h3:4 --require-redundancy host --dry-run \
        -x RALLY_XOR_SET=4 "$prog" rally_local_scheme=xor >"$T/out" 2>"$T/err"
    [ $? -eq 2 ] || fail "xor, sets of 4: --require-redundancy host: want exit status 2"
    for h in 1 2 3; do
        echo "rally-run: losing host h$h (4 of 12 ranks) would lose the local models of 2 ranks: set $((h - 1)) has 2 ranks on it; rally_local_scheme=xor covers one per set (rally_xor_set=4)"
    done >"$T/want"
    echo "rally-run: --require-redundancy host: not started: losing any of those would lose copies (above)" >>"$T/want"
    says "xor, sets of 4"
    # a host of 4 beside one of 1: sets of 2 ({0 4 1} and {2 3}), both on h1;
    # with pieces kept in part on 2 ranks too
    $RUN -n 5 --launcher ssh --hosts h1:4,h2 --dry-run "$prog" rally_local_scheme=xor \
        rally_hier=off rally_result_copies=2 >"$T/out" 2>"$T/err" ||
        fail "xor, a host of 4 beside 1: --dry-run failed"
    echo "rally-run: losing host h1 (4 of 5 ranks) would lose the local models of 4 ranks: set 0 has 2 ranks on it (and 1 other set two or more); rally_local_scheme=xor covers one per set (rally_xor_set=2), and 3 of the 5 pieces of every result kept in part: every copy of them is on it (rally_result_copies=2: 0 (results kept whole) would)" >"$T/want"
    says "xor, a host of 4 beside 1"
    # rally_result_scheme=xor: pieces kept in part with parity, counted on
    # the same sets (off the hierarchy); sets of one rank a host: nothing
    : >"$T/want"
    $RUN -n 12 --launcher ssh --hosts h1:4,h2:4,h3:4 --require-redundancy host --dry-run "$prog" \
        rally_result_scheme=xor rally_hier=off >"$T/out" 2>"$T/err" ||
        fail "result xor at 3 hosts of 4: --dry-run failed"
    says "result xor at 3 hosts of 4"
    # ... sets of 4: each host holds two members of one set (hostloss_xor_piece_set4)
    $RUN -n 12 --launcher ssh --hosts h1:4,h2:4,h3:4 --require-redundancy host --dry-run \
        -x RALLY_XOR_SET=4 "$prog" rally_result_scheme=xor rally_hier=off >"$T/out" 2>"$T/err"
    [ $? -eq 2 ] || fail "result xor, sets of 4: --require-redundancy host: want exit status 2"
    for h in 1 2 3; do
        echo "rally-run: losing host h$h (4 of 12 ranks) would lose 2 of the 12 pieces of every result kept in part: set $((h - 1)) has 2 ranks on it; rally_result_scheme=xor covers one per set (rally_xor_set=4)"
    done >"$T/want"
    echo "rally-run: --require-redundancy host: not started: losing any of those would lose copies (above)" >>"$T/want"
    says "result xor, sets of 4"
    : >"$T/want"
    # racks: 4 hosts of 2 in 2 racks, one replica; every launcher gives a
    # labelled host's ranks their rack, over -x's, and an unlabelled one -x's
    printf 'h1:2@r1\nh2@r1 slots=2 # rack one\nh3:2@r2\nh4:2@r2\nh5\n' >"$T/hosts"
    for l in ssh slurm mpirun; do
        env -u SLURM_JOB_NODELIST "$run" -n 9 --launcher $l --hostfile "$T/hosts" --dry-run \
            -x RALLY_DOMAIN=zz "$prog" rally_local_replica=1 >"$T/out" 2>"$T/err" ||
            fail "$l: racks: --dry-run failed"
        says "$l: racks spread over"
        for r in 0 1 2 3 4 5 6 7 8; do
            d=$(sed -n "s/^rank $r: .* --env RALLY_DOMAIN=\([^ ]*\) .*/\1/p" "$T/out")
            want=r1
            [ $r -ge 4 ] && want=r2
            [ $r -eq 8 ] && want=zz
            [ "$d" = "$want" ] || fail "$l: rank $r has RALLY_DOMAIN '$d', not $want"
            [ "$(grep "^rank $r: " "$T/out" | grep -o 'RALLY_DOMAIN=' | wc -l)" -eq 1 ] ||
                fail "$l: rank $r has RALLY_DOMAIN twice"
        done
    done
    $RUN -n 8 --launcher ssh --hostfile "$T/hosts" --dry-run "$prog" rally_local_replica=1 \
        rally_spread=host >"$T/out" 2>"$T/err" || fail "racks spread over hosts: --dry-run failed"
    cat >"$T/want" <<EOF2
rally-run: losing rack r1 (4 of 8 ranks) would lose the local models of 2 ranks: every copy of them is on it (rally_local_replica=1: 2 would cover it)
rally-run: losing rack r2 (4 of 8 ranks) would lose the local models of 2 ranks: every copy of them is on it (rally_local_replica=1: 2 would cover it)
EOF2
    says "racks spread over hosts"
    $RUN -n 8 --launcher ssh --hostfile "$T/hosts" --require-redundancy host --dry-run "$prog" \
        rally_local_replica=1 rally_spread=host >"$T/out" 2>"$T/err" ||
        fail "racks spread over hosts: --require-redundancy host refused"
    $RUN -n 8 --launcher ssh --hostfile "$T/hosts" --require-redundancy rack --dry-run "$prog" \
        rally_local_replica=1 rally_spread=host >"$T/out" 2>"$T/err"
    [ $? -eq 2 ] || fail "--require-redundancy rack: want exit status 2"
    echo "rally-run: --require-redundancy rack: not started: losing any of those would lose copies (above)" >>"$T/want"
    says "--require-redundancy rack"
    # usage: no rack named, one host
    for c in "--hosts h1:4,h2:4 --require-redundancy rack|--require-redundancy rack: no host has a rack" \
        "--hosts h1:4 --require-redundancy host|--require-redundancy host: the job has one host" \
        "--hosts h1:4,h2:4 --require-redundancy zone|--require-redundancy wants host or rack, not 'zone'" \
        "--hosts h1:4@r1,h2@|--hosts h1:4@r1,h2@: 'h2@': the label after '@' is empty"; do
        "$run" -n 4 --launcher ssh ${c%%|*} --dry-run "$prog" >"$T/out" 2>"$T/err"
        [ $? -eq 2 ] || fail "'${c%%|*}': want exit status 2"
        has "$T/err" "${c#*|}"
    done
    "$run" --help >"$T/out" || fail "--help failed"
    has "$T/out" "--require-redundancy host|rack"
    ;;
mpirun)
    command -v mpirun >/dev/null || fail "no mpirun (scripts/deps.sh installs openmpi-bin)"
    if [ "$(id -u)" -eq 0 ]; then
        # as root, without OpenMPI's override: its own headline and the way out
        env -u OMPI_ALLOW_RUN_AS_ROOT -u OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_plm_rsh_agent=false \
            timeout -k 5 60 $RUN -n 2 --launcher mpirun --hosts localhost:2 "$prog" sleep "$TAG" \
            >"$T/out" 2>"$T/err"
        rc=$?
        [ $rc -eq 1 ] || fail "mpirun as root: exit status $rc, want 1"
        grep -q "^rally-run: host localhost (rank [01]): cannot start $build/rally-agent: mpirun has detected an attempt to run as root\. (mpirun exited with status 1); OpenMPI runs as root only with OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 in rally-run's environment\$" "$T/err" ||
            fail "mpirun as root: no line with OpenMPI's reason and its override"
        no_leftovers
    fi
    kmeans_data
    # as root OpenMPI wants both; one host, no ssh
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=false \
        timeout -k 5 240 $RUN -n 4 --launcher mpirun --hosts localhost:4 "$km" $KM \
        >"$T/out" 2>&1 || fail "the mpirun job failed"
    [ "$(digest "$T/out")" = "$(digest "$T/plain")" ] ||
        fail "digest $(digest "$T/out"), the local run's $(digest "$T/plain")"
    has "$T/out" "rally-run: summary: deaths=0 recovered=0 epochs=0 restarts=0"
    no_leftovers
    # a worker's kill -9 under mpirun (held as in ssh_kill9): restarted through mpirun
    recover_plain
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=false \
        timeout -k 5 240 $RUN -n 4 --launcher mpirun --hosts localhost:4 "$rec" 2000 8 \
        lag=2,3,0,60000 >"$T/out" 2>&1 &
    job=$!
    wait_line "$T/out" '^\[2\] rank 2 lags' "rank 2's hold"
    victim=$(sed -n 's/^\[2\] pid 2 \([0-9]*\)$/\1/p' "$T/out" | tail -1)
    kill -9 "$victim" || fail "no rank 2 to kill"
    wait $job || fail "the mpirun job failed after kill -9 of a worker"
    [ "$(digest "$T/out")" = "$(digest "$T/plain")" ] ||
        fail "digest $(digest "$T/out") after kill -9, the local run's $(digest "$T/plain")"
    has "$T/out" "rally-run: rank 2 on host localhost died (killed by signal 9); restarting it on localhost (restart 1 of 3)"
    has "$T/out" "rally-run: summary: deaths=1 recovered=1 "
    no_leftovers
    ;;
*)
    fail "unknown case"
    ;;
esac
echo "launch_remote $case_: passed"
