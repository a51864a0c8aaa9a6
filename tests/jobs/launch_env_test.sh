#!/bin/sh
# launch_env_test.sh CASE BUILD_DIR — what rally-run makes of its own
# environment (tools/rally-run.c, docs/launch.md), on this host; the same over
# ssh, slurm and mpirun: tests/jobs/launch_remote_test.sh (dry_run, ssh_env).
#   snapshot_env  RALLY_SNAPSHOT_DIR and RALLY_SNAPSHOT_EVERY in rally-run's
#                 environment are its --snapshot-dir and --snapshot-every:
#                 snapshots are taken, locked, reported and cleaned up; a flag
#                 wins over its variable; a malformed value, a setting that
#                 needs a directory and RALLY_RUN_ID are refused with a
#                 sentence naming the variable and the value, exit status 2,
#                 before any worker starts
#   export_local  -x VAR=VALUE sets VAR for every worker, -x VAR passes
#                 rally-run's value (here it is the workers' already); an
#                 unset VAR, a bad name and a variable rally-run sets itself
#                 are usage errors
#   torchrun      every worker gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE
#   not_on_path   a program in the current directory named without ./: the
#                 error says to name it ./PROG (or python3 PROG.py)
#   tmpdir_sweep  the secret's directory of a rally-run killed by SIGKILL is
#                 left in $TMPDIR; the next rally-run (and rally-agent) removes
#                 it, and the planted directories of a reused pid, but not
#                 those of a live owner, another pid namespace, another user,
#                 an old-style name, a symbolic link, or one holding a
#                 directory
# Every job runs under tests/rigs/run_job.sh or timeout(1) and must leave nothing.
set -u
case_=$1 build=$2
run=$build/rally-run rec=$build/tests/recover prog=$build/tests/rally_test_prog
T=$(mktemp -d "${TMPDIR:-/tmp}/rally-env-XXXXXX")
trap 'rm -rf "$T"' EXIT
jobsh=$(dirname "$0")/../rigs/run_job.sh
fail() {
    echo "FAIL launch_env $case_: $*"
    for f in "$T"/out "$T"/err; do [ -s "$f" ] && { echo "--- $f"; tail -30 "$f"; }; done
    exit 1
}
has() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2'"; }
# refused "VAR=VALUE ..." "sentence": rally-run with that environment exits 2
# with the sentence, and no worker ran (a worker would touch $T/ran)
refused() {
    rm -f "$T/ran"
    env $1 timeout -k 5 30 "$run" -n 2 sh -c "touch $T/ran" >"$T/out" 2>"$T/err"
    rc=$?
    [ $rc -eq 2 ] || fail "$1: exit status $rc, want 2"
    has "$T/err" "$2"
    [ -e "$T/ran" ] && fail "$1: a worker started"
    return 0
}

case $case_ in
snapshot_env)
    mkdir "$T/d"
    RALLY_SNAPSHOT_DIR=$T/d RALLY_SNAPSHOT_EVERY=2 "$jobsh" 0 120 "$run" -n 3 "$rec" 2000 8 \
        >"$T/out" 2>&1 || fail "the job with RALLY_SNAPSHOT_DIR and RALLY_SNAPSHOT_EVERY failed"
    # retention kept versions 6 and 8 (rally_snapshot_keep 2); the success removed them
    has "$T/out" "rally-run: the run succeeded: removed its 2 snapshots (--keep-snapshots keeps them)"
    [ -e "$T/d/recover/.lock" ] || fail "no lock in $T/d/recover"
    # the flag wins over the variable: every 4 versions, kept
    RALLY_SNAPSHOT_DIR=$T/d RALLY_SNAPSHOT_EVERY=2 "$jobsh" 0 120 "$run" -n 3 --snapshot-every 4 \
        --snapshot-keep 5 --keep-snapshots "$rec" 2000 8 >"$T/out" 2>&1 ||
        fail "the job with --snapshot-every 4 failed"
    [ "$(cd "$T/d/recover" && echo snap-*)" = "snap-00000004 snap-00000008" ] ||
        fail "snapshots $(cd "$T/d/recover" && echo snap-*), want versions 4 and 8"
    # RALLY_RESUME is --resume, RALLY_RESUME_FORCE --force
    RALLY_SNAPSHOT_DIR=$T/d RALLY_RESUME=latest "$jobsh" 0 120 "$run" -n 3 "$rec" 2000 8 \
        >"$T/out" 2>&1 || fail "the job with RALLY_RESUME=latest failed"
    has "$T/out" "rally-run: resuming from $T/d/recover/snap-00000008: checkpoint version 8"
    refused "RALLY_SNAPSHOT_DIR=$T/d RALLY_SNAPSHOT_EVERY=abc" \
        "rally-run: RALLY_SNAPSHOT_EVERY wants a number of versions, not 'abc'"
    refused "RALLY_SNAPSHOT_DIR=$T/d RALLY_SNAPSHOT_KEEP=0" \
        "rally-run: RALLY_SNAPSHOT_KEEP wants a count (1 or more), not '0'"
    refused "RALLY_SNAPSHOT_DIR=$T/d RALLY_SNAPSHOT_REQUIRED=yes" \
        "rally-run: RALLY_SNAPSHOT_REQUIRED wants 0 or 1, not 'yes'"
    refused "RALLY_SNAPSHOT_DIR=$T/d RALLY_SNAPSHOT_BUSY=later" \
        "rally-run: RALLY_SNAPSHOT_BUSY wants wait or skip, not 'later'"
    refused "RALLY_SNAPSHOT_EVERY=2" \
        "rally-run: the snapshot options need --snapshot-dir DIR (RALLY_SNAPSHOT_EVERY=2 is one)"
    refused "RALLY_RESUME=latest" "rally-run: RALLY_RESUME=latest needs --snapshot-dir DIR"
    refused "RALLY_SNAPSHOT_DIR=$T/d RALLY_SNAPSHOT_LOCAL=1" \
        "rally-run: --snapshot-local needs --snapshot-copy: with a directory private to each host, no host holds a whole snapshot, only the copy does"
    refused "RALLY_SNAPSHOT_DIR=$T/d RALLY_SNAPSHOT_LOCAL=yes" \
        "rally-run: RALLY_SNAPSHOT_LOCAL wants 0 or 1, not 'yes'"
    refused "RALLY_RUN_ID=0c4f1cde-7a59-4b5e-9a43-2f1d8c6e0b17" \
        "rally-run: RALLY_RUN_ID=0c4f1cde-7a59-4b5e-9a43-2f1d8c6e0b17 is in the environment, but rally-run makes a fresh one for every run"
    ;;
export_local)
    w='echo "v=$V w=$W"'
    V=mine "$jobsh" 1 30 "$run" -n 1 -x V -x W=set sh -c "$w" >"$T/out" 2>&1
    has "$T/out" "[0] v=mine w=set"
    # -x VAR=VALUE wins over rally-run's own value
    W=theirs "$jobsh" 1 30 "$run" -n 1 -x W=set sh -c "$w" >"$T/out" 2>&1
    has "$T/out" "[0] v= w=set"
    for c in "-x V|rally-run: -x V: V is not set in rally-run's environment (-x V=VALUE gives it a value)" \
        "-x 1V=a|rally-run: -x wants VAR or VAR=VALUE (VAR of letters, digits and '_'), not '1V=a'" \
        "-x =a|rally-run: -x wants VAR or VAR=VALUE" \
        "-x RALLY_TRACKER=h:1|rally-run: -x RALLY_TRACKER: rally-run sets RALLY_TRACKER for every worker itself" \
        "-x RALLY_SNAPSHOT_EVERY=2|rally-run: -x RALLY_SNAPSHOT_EVERY: rally-run sets RALLY_SNAPSHOT_EVERY for every worker itself; give --snapshot-every"; do
        env -u V timeout 10 "$run" -n 1 ${c%%|*} sh -c "touch $T/ran" >"$T/out" 2>"$T/err"
        [ $? -eq 2 ] || fail "'${c%%|*}': want exit status 2"
        has "$T/err" "${c#*|}"
        [ -e "$T/ran" ] && fail "'${c%%|*}': a worker started"
    done
    ;;
tmpdir_sweep)
    export TMPDIR=$T/tmp
    mkdir "$TMPDIR"
    ns=$(stat -L -c %i /proc/self/ns/pid)
    start_of() { sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f20; }
    TAG="rally-env-$$-sweep"
    timeout -k 5 60 "$run" -n 1 "$prog" sleep "$TAG" >"$T/out" 2>&1 &
    job=$!
    i=0
    until pgrep -f "^$prog sleep $TAG" >/dev/null; do
        i=$((i + 1)); [ $i -gt 300 ] && fail "the worker did not start"
        sleep 0.1
    done
    launcher=$(pgrep -of "^$run -n 1 $prog sleep $TAG") # -o: not its guard
    killed=$(echo "$TMPDIR/rally-run-$ns-$launcher-"*)
    [ -f "$killed/secret" ] || fail "no secret's directory named after rally-run's pid: $(ls "$TMPDIR")"
    kill -9 "$launcher"
    wait $job
    i=0
    while pgrep -f "$TAG" >/dev/null; do
        i=$((i + 1)); [ $i -gt 50 ] && fail "left behind: $(pgrep -af "$TAG")"
        sleep 0.1
    done
    [ -d "$killed" ] || fail "the killed rally-run's directory is gone already"
    # planted: a live pid (this shell) with another start time: reused, removed
    mkdir -m 700 "$TMPDIR/rally-run-$ns-$$-1-aaaaaa" && touch "$TMPDIR/rally-run-$ns-$$-1-aaaaaa/secret"
    # kept: the live owner; another namespace; an old name; a link; one holding a directory
    keep="rally-run-$ns-$$-$(start_of $$)-bbbbbb rally-run-1$ns-$launcher-1-cccccc rally-run-dddddd"
    for k in $keep; do mkdir -m 700 "$TMPDIR/$k"; done
    mkdir -p "$TMPDIR/target" "$TMPDIR/rally-run-$ns-$launcher-2-eeeeee/sub"
    ln -s "$TMPDIR/target" "$TMPDIR/rally-run-$ns-$launcher-3-ffffff"
    keep="$keep rally-run-$ns-$launcher-2-eeeeee rally-run-$ns-$launcher-3-ffffff target"
    if [ "$(id -u)" -eq 0 ]; then # another user's
        mkdir -m 700 "$TMPDIR/rally-run-$ns-$launcher-4-gggggg"
        chown nobody "$TMPDIR/rally-run-$ns-$launcher-4-gggggg"
        keep="$keep rally-run-$ns-$launcher-4-gggggg"
    fi
    "$jobsh" 0 60 "$run" -n 1 "$rec" 20 2 >"$T/out" 2>&1 || fail "the next rally-run failed"
    [ -e "$killed" ] && fail "the next rally-run left the killed one's $killed"
    [ -e "$TMPDIR/rally-run-$ns-$$-1-aaaaaa" ] && fail "a reused pid's directory was kept"
    for k in $keep; do [ -e "$TMPDIR/$k" ] || fail "$k was removed"; done
    [ -d "$TMPDIR/target" ] || fail "the link's target was removed"
    # rally-agent sweeps its own the same way (a pid that is gone: a reaped child)
    sh -c 'exit 0' &
    dead=$!
    wait $dead
    mkdir -m 700 "$TMPDIR/rally-agent-$ns-$dead-7-hhhhhh"
    echo "rally-secret-line" | "$build/rally-agent" -- true >"$T/out" 2>&1
    [ -e "$TMPDIR/rally-agent-$ns-$dead-7-hhhhhh" ] && fail "rally-agent kept a dead agent's directory"
    ls "$TMPDIR" | grep -q '^rally-agent-' && fail "rally-agent left its own: $(ls "$TMPDIR")"
    ;;
torchrun)
    # torchrun's variables, each worker's own: its rank, the world, and its
    # place on this host (every rank here)
    "$jobsh" 1 30 "$run" -n 3 sh -c 'echo "r=$RANK w=$WORLD_SIZE l=$LOCAL_RANK/$LOCAL_WORLD_SIZE"' \
        >"$T/out" 2>&1
    for i in 0 1 2; do has "$T/out" "[$i] r=$i w=3 l=$i/3"; done
    ;;
not_on_path)
    # a program in the current directory named without ./ is looked for on
    # PATH only: the error says how to name it (exit 127, as a shell's)
    printf '#!/bin/sh\necho hi\n' >"$T/here.sh"
    printf 'print(1)\n' >"$T/here.py"
    chmod +x "$T/here.sh"
    (cd "$T" && timeout 10 "$run" -n 1 here.sh >"$T/out" 2>"$T/err")
    [ $? -eq 127 ] || fail "here.sh: want exit status 127"
    has "$T/err" "rally-run: cannot run 'here.sh': No such file or directory (PATH was searched, not the current directory: say ./here.sh)"
    (cd "$T" && timeout 10 "$run" -n 1 here.py >"$T/out" 2>"$T/err")
    has "$T/err" "(PATH was searched; the file here is not executable: say python3 here.py)"
    (cd "$T" && timeout 10 "$run" -n 1 nowhere >"$T/out" 2>"$T/err")
    has "$T/err" "rally-run: cannot run 'nowhere': No such file or directory"
    grep -q "PATH was searched" "$T/err" && fail "a hint for a program that is nowhere"
    ;;
*)
    fail "unknown case"
    ;;
esac
echo "launch_env $case_: passed"
