#!/bin/sh
# launcher_test.sh CASE RALLY_RUN PROG TWORKER RALLY_TRACKER
#
# Runs rally-run / rally-tracker as processes, each case bounded by timeout(1).
# Every worker gets a unique tag ($TAG) as an extra argument, so pgrep -f
# finds any worker left behind; no_leftovers fails the case if one survives.
set -u
CASE=$1 RUN=$2 PROG=$3 TWORKER=$4 TRACKER=$5
TAG="rally-lt-$$-$CASE"
T=$(mktemp -d "${TMPDIR:-/tmp}/rally-lt-XXXXXX")
trap 'pkill -KILL -f "$TAG" 2>/dev/null; rm -rf "$T"' EXIT

fail() { echo "FAIL [$CASE]: $*"; for f in "$T"/out "$T"/err; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done; exit 1; }
expect_rc() { [ "$1" -eq "$2" ] || fail "exit status $1, expected $2"; }
has() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2'"; }
no_leftovers() {
    i=0
    while pgrep -f "$TAG" >/dev/null; do
        i=$((i + 1)); [ $i -gt 50 ] && fail "workers left behind: $(pgrep -af "$TAG")"
        sleep 0.1
    done
}
# Waits until n workers carrying the tag run.
wait_workers() {
    i=0
    while [ "$(pgrep -f "^$PROG .*$TAG" | wc -l)" -lt "$1" ]; do
        i=$((i + 1)); [ $i -gt 100 ] && fail "workers did not start"
        sleep 0.05
    done
}
# Starts rally-tracker -n 2 on 127.0.0.1 with "$@" in the background ($pid),
# waits for its two address lines in $T/out and sets them here.
start_tracker() {
    timeout 30 "$TRACKER" -n 2 --host 127.0.0.1 "$@" >"$T/out" 2>"$T/err" &
    pid=$!
    i=0
    while [ "$(cat "$T/out" 2>/dev/null | grep -c =)" -lt 2 ]; do
        i=$((i + 1)); [ $i -gt 100 ] && fail "rally-tracker printed no address"
        sleep 0.05
    done
    eval "$(cat "$T/out")"
}
# Besides the summary, one line of rally-run's stderr comes from rally-run.
one_verdict() {
    n=$(grep '^rally-run:' "$T/err" | grep -vc '^rally-run: summary: ')
    [ "$n" -eq 1 ] || fail "$n rally-run lines on stderr, expected one"
    has "$T/err" "$1"
}
# The summary is the last line of stderr and says exactly $1.
summary() {
    [ "$(tail -n 1 "$T/err")" = "rally-run: summary: $1" ] ||
        fail "summary '$(tail -n 1 "$T/err")', expected '$1'"
}

case $CASE in
usage)
    timeout 10 "$RUN" -n 0 "$PROG" sleep 2>"$T/err"; expect_rc $? 2
    has "$T/err" "-n wants a number of workers"
    timeout 10 "$RUN" "$PROG" 2>"$T/err"; expect_rc $? 2
    timeout 10 "$RUN" -n 2 2>"$T/err"; expect_rc $? 2
    has "$T/err" "no program to run"
    timeout 10 "$RUN" --bogus -n 2 "$PROG" 2>"$T/err"; expect_rc $? 2
    timeout 10 "$RUN" --help >"$T/out"; expect_rc $? 0
    for f in --workers --host --port --startup-timeout-ms --grace-ms --max-restarts \
        --heartbeat-timeout-ms --help; do has "$T/out" "$f"; done
    timeout 10 "$RUN" -n 2 --max-restarts -1 "$PROG" 2>"$T/err"; expect_rc $? 2
    has "$T/err" "--max-restarts wants a count"
    # -np N is mpirun's spelling of -n N
    timeout 20 "$RUN" -np 3 --grace-ms 300 "$PROG" exitif 2 4 "$TAG" >"$T/out" 2>"$T/err"
    expect_rc $? 4
    summary "deaths=1 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:0,2:1"
    timeout 10 "$RUN" -np 2>"$T/err"; expect_rc $? 2
    # growth is for the launchers that can start one worker more
    timeout 10 "$RUN" -n 2 --launcher mpirun --max-workers 3 "$PROG" 2>"$T/err"; expect_rc $? 2
    has "$T/err" "--max-workers above -n is for --launcher local and ssh"
    timeout 10 "$RUN" -n 2 --rejoin-ms 100 "$PROG" 2>"$T/err"; expect_rc $? 2
    has "$T/err" "--rejoin-ms is for --launcher ssh with --max-workers"
    timeout 10 "$RUN" -n 2 --launcher ssh --hosts a,b --max-workers 3 --rejoin-ms 0 "$PROG" \
        2>"$T/err"; expect_rc $? 2
    has "$T/err" "--rejoin-ms wants milliseconds (1 or more), not '0'"
    no_leftovers
    ;;
version)
    # every tool and trainer says the version CMake defines (RALLY_EXPECT_VERSION, from the build)
    dir=$(dirname "$RUN")
    for tool in "$RUN" "$TRACKER" "$dir/rally-datagen" "$dir/rally-snapshot" \
        "$dir/rally-kmeans" "$dir/rally-linear" "$dir/rally-gbdt" "$dir/rally-lda"; do
        timeout 10 "$tool" --version >"$T/out" 2>"$T/err"; expect_rc $? 0
        [ "$(cat "$T/out")" = "$(basename "$tool") (rally) $RALLY_EXPECT_VERSION" ] ||
            fail "$tool --version says '$(cat "$T/out")', expected version $RALLY_EXPECT_VERSION"
    done
    # a worker's own --version is the worker's
    timeout 10 "$RUN" -n 1 "$PROG" --version >"$T/out" 2>"$T/err"
    has "$T/err" "[0] prog: unknown act '--version'"
    ;;
sighup)
    # SIGHUP (a closed terminal) stops the job like SIGTERM: the workers go,
    # the summary is printed, the secret's directory is removed
    timeout 20 "$RUN" -n 2 "$PROG" sleep "$TAG" >"$T/out" 2>"$T/err" &
    pid=$!
    wait_workers 2
    w=$(pgrep -f "^$PROG .*$TAG" | head -n 1)
    secret=$(tr '\0' '\n' <"/proc/$w/environ" | sed -n 's/^RALLY_SECRET_FILE=//p')
    [ -f "$secret" ] || fail "no secret file '$secret'"
    kill -HUP "$(pgrep -P $pid -f "$RUN")" 2>/dev/null || kill -HUP $pid
    wait $pid; expect_rc $? 129
    has "$T/err" "rally-run: stopped by signal 1 (Hangup)"
    summary "deaths=0 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:0"
    [ -e "$(dirname "$secret")" ] && fail "the secret's directory is left behind"
    no_leftovers
    ;;
nonexistent)
    timeout 10 "$RUN" -n 2 "$T/no-such-prog" 2>"$T/err"; expect_rc $? 127
    has "$T/err" "rally-run: cannot run '$T/no-such-prog': No such file or directory"
    printf 'not a program\n' >"$T/plain"; chmod 644 "$T/plain"
    timeout 10 "$RUN" -n 2 "$T/plain" 2>"$T/err"; expect_rc $? 127
    has "$T/err" "Permission denied"
    ;;
exit_code)
    start=$(date +%s)
    timeout 20 "$RUN" -n 3 --grace-ms 300 "$PROG" exitif 1 3 "$TAG" >"$T/out" 2>"$T/err"
    expect_rc $? 3
    one_verdict "rally-run: rank 1 exited with status 3"
    summary "deaths=1 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:1,2:0"
    [ $(($(date +%s) - start)) -lt 10 ] || fail "took too long"
    no_leftovers
    ;;
kill9)
    "$RUN" -n 2 "$PROG" sleep "$TAG" >/dev/null 2>&1 &
    pid=$!
    wait_workers 2
    kill -9 $pid
    wait $pid 2>/dev/null
    no_leftovers
    ;;
sigterm)
    timeout 20 "$RUN" -n 2 "$PROG" sleep "$TAG" >"$T/out" 2>"$T/err" &
    pid=$!
    wait_workers 2
    kill -TERM "$(pgrep -P $pid -f "$RUN")" 2>/dev/null || kill -TERM $pid
    wait $pid; expect_rc $? 143
    no_leftovers
    # a worker that ignores SIGTERM is killed after the grace period
    timeout 20 "$RUN" -n 2 --grace-ms 300 "$PROG" stubborn "$TAG" >"$T/out" 2>"$T/err" &
    pid=$!
    wait_workers 2
    kill -TERM "$(pgrep -P $pid -f "$RUN")" 2>/dev/null || kill -TERM $pid
    wait $pid; expect_rc $? 143
    no_leftovers
    ;;
output)
    timeout 20 "$RUN" -n 2 "$PROG" print "$TAG" >"$T/out" 2>"$T/err"; expect_rc $? 1
    for r in 0 1; do
        has "$T/out" "[$r] line a from $r"
        has "$T/out" "[$r] line b from $r"
        has "$T/out" "[$r] tail from $r"
        has "$T/err" "[$r] err line from $r"
    done
    one_verdict "exited 0 without rally_finalize"
    timeout 20 "$RUN" -n 1 "$PROG" env "$TAG" >"$T/out" 2>"$T/err"
    has "$T/out" "[0] tracker=127.0.0.1:"
    has "$T/out" "secret_mode=600"
    grep -q '^\[0\] fds:$' "$T/out" || fail "descriptors leaked into the worker"
    ;;
finalize)
    timeout 30 "$RUN" -n 3 "$TWORKER" ok "$TAG" >"$T/out" 2>"$T/err"; expect_rc $? 0
    for r in 0 1 2; do has "$T/out" "[$r] hello from rank $r"; done
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "stderr holds more than the summary"
    summary "deaths=0 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:0,2:0"
    timeout 30 "$RUN" -n 2 --max-restarts 0 "$TWORKER" nofinal "$TAG" >"$T/out" 2>"$T/err"
    expect_rc $? 1
    one_verdict "exited 0 without rally_finalize"
    # --max-restarts 0: the first death after GO fails the job, as it always did
    timeout 30 "$RUN" -n 3 --max-restarts 0 "$TWORKER" crash 1 "$TAG" >"$T/out" 2>"$T/err"
    expect_rc $? 1
    one_verdict "rally-run: rank 1 was killed by signal 9"
    summary "deaths=1 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:1,2:0"
    # the survivors heard an ABORT naming rank 1 (from the tracker's EOF or
    # from rally-run's reap, whichever came first) and printed it: the cause
    # shows once, their two lines repeating it are counted, not shown
    has "$T/err" "rally-run: rank 1 was killed by signal 9 (2 worker lines repeating the abort left out)"
    grep -q '^\[.\] tworker: rank 1' "$T/err" && fail "a worker line repeats the cause"
    no_leftovers
    # a start-up timeout names who is missing
    timeout 30 "$RUN" -n 2 --startup-timeout-ms 300 "$PROG" sleep "$TAG" >"$T/out" 2>"$T/err"
    expect_rc $? 1
    one_verdict "rally-run: job aborted: only 0 of 2 workers joined within 300 ms"
    no_leftovers
    ;;
tracker_tool)
    start_tracker
    [ -f "$RALLY_SECRET_FILE" ] || fail "no secret file"
    RALLY_TRACKER=$RALLY_TRACKER RALLY_SECRET_FILE=$RALLY_SECRET_FILE RALLY_TASK_ID=0 "$TWORKER" ok "$TAG" &
    RALLY_TRACKER=$RALLY_TRACKER RALLY_SECRET_FILE=$RALLY_SECRET_FILE RALLY_TASK_ID=1 "$TWORKER" ok "$TAG"
    wait $pid; expect_rc $? 0
    has "$T/out" "[1] hello from rank 1"
    [ -e "$RALLY_SECRET_FILE" ] && fail "temporary secret file left behind"
    # --secret-file is created when absent, and the job fails when one dies
    rm -f "$T/out"
    start_tracker --no-recovery --secret-file "$T/s"
    [ "$(stat -c %a "$T/s")" = 600 ] || fail "secret file mode"
    export RALLY_TRACKER RALLY_SECRET_FILE
    RALLY_TASK_ID=0 "$TWORKER" crash 1 "$TAG" 2>/dev/null &
    RALLY_TASK_ID=1 "$TWORKER" crash 1 "$TAG" 2>/dev/null
    wait $pid; expect_rc $? 1
    has "$T/err" "rally-tracker: job aborted: rank 1 disconnected without finalizing"
    no_leftovers
    ;;
tracker_restart)
    # a foreign launcher (this script) restarts the worker that died; the
    # tracker takes it back with the next incarnation and the job recovers
    start_tracker
    export RALLY_TRACKER RALLY_SECRET_FILE
    RALLY_TASK_ID=0 "$TWORKER" recover 1 "$T/marker" kill "$TAG" &
    RALLY_TASK_ID=1 "$TWORKER" recover 1 "$T/marker" kill "$TAG"
    [ -f "$T/marker" ] || fail "rank 1 did not fail"
    RALLY_TASK_ID=1 "$TWORKER" recover 1 "$T/marker" kill "$TAG"
    wait $pid; expect_rc $? 0
    has "$T/out" "[0] hello from rank 0, epoch 2, incarnation 1"
    has "$T/out" "[1] hello from rank 1, epoch 2, incarnation 2"
    has "$T/err" "rally-tracker: rank 1 failed: rank 1 disconnected without finalizing"
    has "$T/err" "rally-tracker: recovered: epoch 2: job back in step"
    no_leftovers
    ;;
tracker_gone)
    # a launcher that knows a worker will not come back says so on the
    # tracker's stdin (--control-stdin): without --min-workers the job fails
    # at once with that cause instead of waiting out the startup timeout
    timeout 10 "$TRACKER" -n 2 --min-workers 2 2>"$T/err"; expect_rc $? 2
    has "$T/err" "--min-workers 2 must be below -n 2"
    mkfifo "$T/ctl"
    exec 3<>"$T/ctl"
    timeout 30 "$TRACKER" -n 2 --host 127.0.0.1 --control-stdin --startup-timeout-ms 60000 \
        <&3 >"$T/out" 2>"$T/err" &
    pid=$!
    i=0
    while [ "$(grep -c = "$T/out" 2>/dev/null)" != 2 ]; do
        i=$((i + 1)); [ $i -gt 100 ] && fail "rally-tracker printed no address"
        sleep 0.05
    done
    eval "$(cat "$T/out")"
    export RALLY_TRACKER RALLY_SECRET_FILE
    RALLY_TASK_ID=0 "$TWORKER" crash 1 "$TAG" 2>"$T/w0" &
    w0=$!
    RALLY_TASK_ID=1 "$TWORKER" crash 1 "$TAG" 2>/dev/null # killed by itself after GO
    printf 'bogus\ngone 7 nobody\ngone 1 its node is gone\n' >&3
    wait $pid; expect_rc $? 1
    exec 3>&-
    has "$T/err" "rally-tracker: unknown command 'bogus' on stdin"
    has "$T/err" "rally-tracker: gone 7: no rank has that task id"
    has "$T/err" "its node is gone"
    wait $w0; expect_rc $? 1
    no_leftovers
    ;;
restart)
    # killed after GO, restarted, the job recovers and succeeds
    timeout 30 "$RUN" -n 3 "$TWORKER" recover 1 "$T/marker" kill "$TAG" >"$T/out" 2>"$T/err"
    expect_rc $? 0
    has "$T/err" "rally-run: rank 1 died (killed by signal 9); restarting it (restart 1 of 3)"
    grep -qE '^rally-run: recovered: epoch 2, job back in step [0-9]+\.[0-9]{2} s after the failure \(version 3, seq 7\)$' \
        "$T/err" || fail "no recovery line"
    has "$T/out" "[1] hello from rank 1, epoch 2, incarnation 2"
    has "$T/out" "[0] hello from rank 0, epoch 2, incarnation 1"
    # the line it printed (without fflush) before its kill -9 is not lost
    has "$T/out" "[1] rank 1 dies now"
    summary "deaths=1 recovered=1 epochs=1 restarts=1 per-rank-deaths=0:0,1:1,2:0"
    no_leftovers
    ;;
output_dir)
    # --output-dir: each rank's own stdout and stderr, unprefixed, in
    # DIR/rank.R/incarnation.K/, a file per incarnation; the terminal keeps
    # its prefixed lines
    timeout 20 "$RUN" -n 2 --output-dir "$T/logs" "$PROG" print "$TAG" >"$T/out" 2>"$T/err"
    expect_rc $? 1
    for r in 0 1; do
        d="$T/logs/rank.$r/incarnation.0"
        [ "$(cat "$d/stdout")" = "$(printf 'line a from %s\nline b from %s\ntail from %s' $r $r $r)" ] ||
            fail "rank $r's stdout log: $(cat "$d/stdout")"
        [ "$(cat "$d/stderr")" = "err line from $r" ] || fail "rank $r's stderr log: $(cat "$d/stderr")"
        has "$T/out" "[$r] line a from $r"
        [ -e "$T/logs/rank.$r/incarnation.1" ] && fail "rank $r has a second incarnation"
    done
    # a restart is a new incarnation: what the killed one printed stays in its file
    timeout 30 "$RUN" -n 3 --output-dir "$T/logs2" "$TWORKER" recover 1 "$T/marker" kill "$TAG" \
        >"$T/out" 2>"$T/err"
    expect_rc $? 0
    has "$T/logs2/rank.1/incarnation.0/stdout" "rank 1 dies now"
    has "$T/logs2/rank.1/incarnation.1/stdout" "hello from rank 1, epoch 2, incarnation 2"
    grep -q "dies now" "$T/logs2/rank.1/incarnation.1/stdout" && fail "the restart's log holds the old lines"
    has "$T/logs2/rank.0/incarnation.0/stdout" "hello from rank 0, epoch 2, incarnation 1"
    for r in 0 2; do
        [ -e "$T/logs2/rank.$r/incarnation.1" ] && fail "rank $r was not restarted but has an incarnation 1"
    done
    # a directory that cannot be made is a clear error before anything starts
    : >"$T/file"
    timeout 20 "$RUN" -n 2 --output-dir "$T/file" "$PROG" print "$TAG" >"$T/out" 2>"$T/err"
    expect_rc $? 1
    has "$T/err" "rally-run: --output-dir $T/file: cannot make the directory: Not a directory"
    [ -s "$T/out" ] && fail "workers started without their log directory"
    no_leftovers
    ;;
lines)
    # a worker that never calls setvbuf or fflush: its first line arrives
    # while it still runs (it waits for $T/go, which we create only once the
    # line is there) ...
    timeout 30 "$RUN" -n 1 "$PROG" slow "$T" "$TAG" >"$T/out" 2>"$T/err" &
    pid=$!
    i=0
    until grep -qF "[0] tick 1 from 0" "$T/out"; do
        i=$((i + 1)); [ $i -gt 200 ] && fail "the worker's line did not arrive while it ran"
        sleep 0.05
    done
    touch "$T/go"
    wait $pid
    has "$T/out" "[0] tick 2 from 0"
    grep -q 'no .*/go within' "$T/err" && fail "the worker waited in vain"
    # ... and what a worker printed before kill -9 is not lost
    timeout 30 "$RUN" -n 1 "$PROG" printkill "$TAG" >"$T/out" 2>"$T/err"; expect_rc $? 1
    for k in 1 2 3; do has "$T/out" "[0] printed $k from 0 before kill -9"; done
    one_verdict "rally-run: rank 0 was killed by signal 9"
    no_leftovers
    ;;
wrapper_kill9)
    # workers started through a wrapper that forks them (sh runs prog as a
    # child, then echo) die with rally-run when it is killed by SIGKILL
    "$RUN" -n 2 sh -c '"$0" sleep "$1"; echo after' "$PROG" "$TAG" >/dev/null 2>&1 &
    pid=$!
    wait_workers 2
    kill -9 $pid
    wait $pid 2>/dev/null
    no_leftovers
    ;;
own_exit)
    # a worker that exits 3 after GO without rally_finalize (not killed by a
    # signal) fails the job: nobody is restarted, rally-run exits 3
    timeout 30 "$RUN" -n 3 --grace-ms 500 "$TWORKER" recover 2 "$T/marker" 3 "$TAG" \
        >"$T/out" 2>"$T/err"
    expect_rc $? 3
    # (the tracker may log the epoch it began on the closed connection first)
    n=$(grep '^rally-run:' "$T/err" | grep -v '^rally-run: tracker: epoch 2: ' | grep -vc '^rally-run: summary: ')
    [ "$n" -eq 1 ] || fail "$n rally-run lines on stderr, expected one"
    has "$T/err" "rally-run: rank 2 exited with status 3"
    grep -q 'restarting' "$T/err" && fail "a worker was restarted"
    summary "deaths=1 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:0,2:1"
    no_leftovers
    ;;
report)
    # rank 1 reports an error the job cannot survive (the ERROR frame that
    # rally_abort sends): its message is the one cause, rally-run exits 3
    timeout 30 "$RUN" -n 3 --grace-ms 500 "$TWORKER" report 1 "$TAG" >"$T/out" 2>"$T/err"
    expect_rc $? 3
    one_verdict "rally-run: rank 1 failed: bad input line 7"
    grep -q 'restarting' "$T/err" && fail "a worker was restarted"
    summary "deaths=0 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:0,2:0"
    no_leftovers
    ;;
exhausted)
    # rank 1 dies after every GO: two restarts, then the job fails; no
    # recovery ever ends (the job is never back in step: nobody says IN_STEP)
    timeout 30 "$RUN" -n 3 --max-restarts 2 "$TWORKER" crash 1 "$TAG" >"$T/out" 2>"$T/err"
    expect_rc $? 1
    has "$T/err" "rally-run: rank 1 died (killed by signal 9); restarting it (restart 2 of 2)"
    grep -q '^rally-run: recovered: epoch' "$T/err" && fail "a recovery that never ended was said"
    has "$T/err" "rally-run: rank 1 died (killed by signal 9) and its restarts are exhausted (2 of 2 used)"
    has "$T/err" "(2 worker lines repeating the abort left out)"
    grep -q '^\[.\] tworker: rank 1 died' "$T/err" && fail "a worker line repeats the cause"
    summary "deaths=3 recovered=0 epochs=0 restarts=2 per-rank-deaths=0:0,1:3,2:0"
    no_leftovers
    ;;
heartbeat)
    # rank 0 stops its heartbeats and hangs: fenced, killed, restarted
    RALLY_HEARTBEAT_MS=100 timeout 30 "$RUN" -n 3 --heartbeat-timeout-ms 700 "$TWORKER" recover 0 \
        "$T/marker" hang "$TAG" \
        >"$T/out" 2>"$T/err"
    expect_rc $? 0
    has "$T/err" "rally-run: rank 0 died (killed by signal 9 after the tracker fenced it: rank 0 sent no heartbeat for"
    has "$T/out" "[0] hello from rank 0, epoch 2, incarnation 2"
    summary "deaths=1 recovered=1 epochs=1 restarts=1 per-rank-deaths=0:1,1:0,2:0"
    no_leftovers
    ;;
heartbeat_interval)
    # a heartbeat interval at or above the heartbeat timeout is refused at
    # start, whether it comes from the environment, an argument or the default
    RALLY_HEARTBEAT_MS=2000 timeout 10 "$RUN" -n 2 --heartbeat-timeout-ms 1500 "$PROG" sleep \
        "$TAG" >"$T/out" 2>"$T/err"
    expect_rc $? 2
    has "$T/err" "rally-run: the workers' heartbeat interval (RALLY_HEARTBEAT_MS=2000) is at or above --heartbeat-timeout-ms 1500"
    RALLY_HEARTBEAT_MS=100 timeout 10 "$RUN" -n 2 --heartbeat-timeout-ms 1500 "$PROG" sleep \
        rally_heartbeat_ms=1500 "$TAG" >"$T/out" 2>"$T/err"
    expect_rc $? 2
    has "$T/err" "(rally_heartbeat_ms=1500) is at or above --heartbeat-timeout-ms 1500"
    env -u RALLY_HEARTBEAT_MS timeout 10 "$RUN" -n 2 --heartbeat-timeout-ms 1000 "$PROG" sleep \
        "$TAG" >"$T/out" 2>"$T/err"
    expect_rc $? 2
    has "$T/err" "(the default, 1000 ms) is at or above --heartbeat-timeout-ms 1000"
    no_leftovers
    ;;
stalled_output)
    # rally-tracker's stdout is a pipe whose reader stops reading for 3 s
    # while rank 0 PRINTs far more than the pipe holds: the tracker blocks in
    # its write, longer than the heartbeat timeout, while both workers beat.
    # The heartbeats that arrived meanwhile are read before the timer
    # judges: nobody is fenced, both finish.
    mkfifo "$T/fifo"
    (read -r a; read -r b; echo "$a" >"$T/addr"; echo "$b" >>"$T/addr"
     sleep 3; cat >"$T/out") <"$T/fifo" &
    timeout 30 "$TRACKER" -n 2 --host 127.0.0.1 --heartbeat-timeout-ms 800 >"$T/fifo" \
        2>"$T/err" &
    pid=$!
    i=0
    while [ "$(cat "$T/addr" 2>/dev/null | grep -c =)" -lt 2 ]; do
        i=$((i + 1)); [ $i -gt 100 ] && fail "rally-tracker printed no address"
        sleep 0.05
    done
    eval "export $(tr '\n' ' ' <"$T/addr")"
    RALLY_TASK_ID=0 timeout 30 "$TWORKER" chatty 3000 4000 "$TAG" 2>"$T/w0" &
    w0=$!
    RALLY_TASK_ID=1 timeout 30 "$TWORKER" chatty 3000 4000 "$TAG" 2>"$T/w1" &
    w1=$!
    wait $w0; r0=$?
    wait $w1; r1=$?
    wait $pid; rt=$?
    grep -q "sent no heartbeat" "$T/err" && fail "a beating worker was fenced: $(cat "$T/err")"
    [ $r0 -eq 0 ] && [ $r1 -eq 0 ] || fail "workers exited $r0 and $r1: $(cat "$T/w0" "$T/w1")"
    expect_rc $rt 0
    no_leftovers
    ;;
stopped_before_beat)
    # rank 1 dies after GO; its next incarnation stops (SIGSTOP) right after
    # its join, before its first heartbeat: fenced within the heartbeat
    # timeout, killed and restarted, and the job finishes
    RALLY_HEARTBEAT_MS=100 timeout 30 "$RUN" -n 3 --heartbeat-timeout-ms 700 "$TWORKER" recover 1 \
        "$T/marker" killstop \
        "$TAG" >"$T/out" 2>"$T/err"
    expect_rc $? 0
    [ -e "$T/marker.stop" ] || fail "the second incarnation did not stop itself"
    has "$T/err" "rally-run: rank 1 died (killed by signal 9 after the tracker fenced it: rank 1 sent no heartbeat within"
    has "$T/out" "[1] hello from rank 1, epoch 3, incarnation 3"
    no_leftovers
    ;;
kill9_recovering)
    # kill -9 rally-run while it restarts a crashing worker: nothing is left
    "$RUN" -n 3 --max-restarts 1000 "$TWORKER" crash 1 "$TAG" >/dev/null 2>&1 &
    pid=$!
    sleep 0.5
    kill -9 $pid
    wait $pid 2>/dev/null
    no_leftovers
    ;;
*)
    fail "unknown case"
    ;;
esac
echo "ok [$CASE]"
