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
# Waits for rally-tracker's two address lines in $T/out.
wait_addr() {
    i=0
    while [ "$(cat "$T/out" 2>/dev/null | grep -c =)" -lt 2 ]; do
        i=$((i + 1)); [ $i -gt 100 ] && fail "rally-tracker printed no address"
        sleep 0.05
    done
}
# Only the last line of rally-run's stderr may come from rally-run itself.
one_verdict() {
    n=$(grep -c '^rally-run:' "$T/err")
    [ "$n" -eq 1 ] || fail "$n rally-run lines on stderr, expected one"
    has "$T/err" "$1"
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
    for f in --workers --host --port --startup-timeout-ms --grace-ms --help; do has "$T/out" "$f"; done
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
    expect_rc $? 1
    one_verdict "rally-run: rank 1 exited with status 3"
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
    [ -s "$T/err" ] && fail "stderr not empty"
    timeout 30 "$RUN" -n 2 "$TWORKER" nofinal "$TAG" >"$T/out" 2>"$T/err"; expect_rc $? 1
    one_verdict "exited 0 without rally_finalize"
    timeout 30 "$RUN" -n 3 "$TWORKER" crash 1 "$TAG" >"$T/out" 2>"$T/err"; expect_rc $? 1
    one_verdict "rally-run: rank 1 was killed by signal 9"
    # the survivors heard an ABORT naming rank 1 (from the tracker's EOF or
    # from rally-run's reap, whichever came first)
    grep -qE '^\[0\] tworker: rank 1 (disconnected without finalizing|was killed by signal 9)' \
        "$T/err" || fail "rank 0 did not hear about rank 1"
    no_leftovers
    # a start-up timeout names who is missing
    timeout 30 "$RUN" -n 2 --startup-timeout-ms 300 "$PROG" sleep "$TAG" >"$T/out" 2>"$T/err"
    expect_rc $? 1
    one_verdict "rally-run: job aborted: only 0 of 2 workers joined within 300 ms"
    no_leftovers
    ;;
tracker_tool)
    timeout 30 "$TRACKER" -n 2 --host 127.0.0.1 >"$T/out" 2>"$T/err" &
    pid=$!
    wait_addr
    eval "$(cat "$T/out")"
    [ -f "$RALLY_SECRET_FILE" ] || fail "no secret file"
    RALLY_TRACKER=$RALLY_TRACKER RALLY_SECRET_FILE=$RALLY_SECRET_FILE RALLY_TASK_ID=0 "$TWORKER" ok "$TAG" &
    RALLY_TRACKER=$RALLY_TRACKER RALLY_SECRET_FILE=$RALLY_SECRET_FILE RALLY_TASK_ID=1 "$TWORKER" ok "$TAG"
    wait $pid; expect_rc $? 0
    has "$T/out" "[1] hello from rank 1"
    [ -e "$RALLY_SECRET_FILE" ] && fail "temporary secret file left behind"
    # --secret-file is created when absent, and the job fails when one dies
    rm -f "$T/out"
    timeout 30 "$TRACKER" -n 2 --host 127.0.0.1 --secret-file "$T/s" >"$T/out" 2>"$T/err" &
    pid=$!
    wait_addr
    eval "$(cat "$T/out")"
    [ "$(stat -c %a "$T/s")" = 600 ] || fail "secret file mode"
    export RALLY_TRACKER RALLY_SECRET_FILE
    RALLY_TASK_ID=0 "$TWORKER" crash 1 "$TAG" 2>/dev/null &
    RALLY_TASK_ID=1 "$TWORKER" crash 1 "$TAG" 2>/dev/null
    wait $pid; expect_rc $? 1
    has "$T/err" "rally-tracker: job aborted: rank 1 disconnected without finalizing"
    no_leftovers
    ;;
*)
    fail "unknown case"
    ;;
esac
echo "ok [$CASE]"
