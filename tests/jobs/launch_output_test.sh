#!/bin/sh
# launch_output_test.sh CASE RALLY_RUN PROG CHATTY — rally-run's stdout going
# into a pipe whose reader stalls (tools/launch/out.h).  Each run is bounded
# by timeout(1); every process carries $TAG so none is left behind.
#
#   slow_reader  a real job (chatty: allreduce + checkpoint per iteration)
#                floods stdout through the tracker after its first
#                checkpoint, then runs 3 more iterations of 1 s each while
#                its heartbeats are watched (timeout 2 s, one every 250 ms);
#                the reader stops reading from the flood on until every
#                worker has finalized and exited (which needs the tracker to
#                answer, so rally-run's loop must not wait for the reader) —
#                longer than the heartbeat timeout — then drains.  The job must finish
#                once, with no fence and no restart, with the digest of a run
#                whose reader never stalled, and no line lost.
#   drop         a reader that drains only after the workers printed 4.4 MB
#                against a 64 KiB bound: lines are dropped, never waited
#                for, and the notice counts exactly the ones missing.
set -u
CASE=$1 RUN=$2 PROG=$3 CHATTY=$4
TAG="rally-lot-$$-$CASE"
T=$(mktemp -d "${TMPDIR:-/tmp}/rally-lot-XXXXXX")
trap 'pkill -KILL -f "$TAG" 2>/dev/null; rm -rf "$T"' EXIT

fail() { echo "FAIL [$CASE]: $*"; for f in "$T"/err "$T"/plain.err; do [ -f "$f" ] && { echo "--- $f"; tail -n 40 "$f"; }; done; exit 1; }
has() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2'"; }
# Waits (up to 20 s) for file $1.
await() {
    i=0
    while [ ! -e "$1" ]; do
        i=$((i + 1)); [ $i -gt 400 ] && return 1
        sleep 0.05
    done
}

case $CASE in
slow_reader)
    lines=5000
    mkdir "$T/s0" "$T/s1"
    timeout 60 "$RUN" -n 3 --heartbeat-timeout-ms 2000 "$CHATTY" 4 $lines "$T/s0" 0 0 \
        rally_heartbeat_ms=250 "$TAG" >"$T/plain" 2>"$T/plain.err" || fail "the plain run failed"
    d0=$(grep -o 'model_digest=[0-9a-f]*' "$T/plain")
    [ -n "$d0" ] || fail "the plain run printed no digest"
    timeout 60 "$RUN" -n 3 --heartbeat-timeout-ms 2000 "$CHATTY" 4 $lines "$T/s1" 0 1000 \
        rally_heartbeat_ms=250 "$TAG" 2>"$T/err" | {
        await "$T/s1/flooded"
        i=0
        while [ ! -e "$T/s1/finished.0" ] || [ ! -e "$T/s1/finished.1" ] ||
            [ ! -e "$T/s1/finished.2" ]; do
            i=$((i + 1)); [ $i -gt 400 ] && break
            sleep 0.05
        done
        [ $i -le 400 ] && touch "$T/finished_while_stalled"
        cat >"$T/out"
    }
    [ -e "$T/finished_while_stalled" ] ||
        fail "the workers could not finish while the reader of stdout stalled (rally-run blocked)"
    [ -s "$T/out" ] || fail "nothing came through"
    tail -n 1 "$T/err" | grep -qF 'rally-run: summary: deaths=0 recovered=0 epochs=0 restarts=0' ||
        fail "the job did not run once without deaths: $(tail -n 1 "$T/err")"
    grep -v '^rally-run: summary: ' "$T/err" | grep -qE 'fenced|restarting|recovered' && fail "a worker was fenced or restarted"
    d1=$(grep -o 'model_digest=[0-9a-f]*' "$T/out")
    [ "$d0" = "$d1" ] || fail "digest '$d1', expected '$d0'"
    n=$(grep -c '^\[0\] chatter ' "$T/out")
    [ "$n" -eq $lines ] || fail "$n chatter lines came through, expected $lines"
    grep -q 'dropped' "$T/err" && fail "lines were dropped within the bound"
    ;;
drop)
    n=20000
    timeout 60 "$RUN" -n 2 --output-buffer-bytes 65536 "$PROG" flood $n "$T" "$TAG" 2>"$T/err" | {
        await "$T/done.0" && await "$T/done.1"
        touch "$T/exit"
        cat >"$T/out"
    }
    # the workers printed everything (rally-run never blocked them) and
    # exit 0 without rally_finalize: the job fails, as it should
    [ -e "$T/done.0" ] && [ -e "$T/done.1" ] || fail "the workers did not finish printing"
    has "$T/err" "rally-run: rank "
    has "$T/err" "exited 0 without rally_finalize"
    got=$(grep -c '^\[[01]\] flood ' "$T/out")
    dropped=$(sed -n 's/^rally-run: dropped \([0-9]*\) lines of worker output: the reader of stdout is not keeping up$/\1/p' \
        "$T/err" | awk '{ s += $1 } END { print s + 0 }')
    [ "$dropped" -gt 0 ] || fail "no drop notice"
    [ $((got + dropped)) -eq $((2 * n)) ] ||
        fail "$got lines came through and $dropped were counted dropped, of $((2 * n))"
    tail -n 1 "$T/err" | grep -q '^rally-run: summary: ' || fail "the summary is not the last line"
    ;;
*)
    fail "unknown case"
    ;;
esac
echo "ok [$CASE]"
