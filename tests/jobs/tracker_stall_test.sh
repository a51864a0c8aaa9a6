#!/bin/sh
# tracker_stall_test.sh RALLY_RUN PLAIN — the launcher (and the tracker in
# it) is stopped (SIGSTOP) for longer than the heartbeat timeout during a
# job, then continued: the heartbeats queued meanwhile are read before the
# tracker's timers judge, so no healthy worker is fenced; the job ends with
# no death and the failure-free digest.  Bounded in time; kills what it starts.
set -u
run=$1 plain=$2
here=$(dirname "$0")
tmp=$(mktemp -d)
job=""
trap '[ -n "$job" ] && kill -CONT $job 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "tracker_stall_test: $*"; tail -40 "$tmp/out" 2>/dev/null; exit 1; }
. "$here/../rigs/trainer_lib.sh" # wait_line

"$here/../rigs/run_job.sh" 0 60 "$run" -n 4 "$plain" 2000 40 100 >"$tmp/plain" 2>&1 ||
    fail "the failure-free run failed"
want=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/plain")

RALLY_HEARTBEAT_MS=100 RALLY_TEST_TAG="stall-$$" timeout -k 5 60 "$run" -n 4 \
    --heartbeat-timeout-ms 800 "$plain" 2000 40 100 >"$tmp/out" 2>&1 &
job=$!
wait_line "$tmp/out" "^\[3\] pid 3 " "rank 3's start" 300 0.1
# the stop: every worker beats about 25 times meanwhile, into the tracker's sockets
kill -STOP "$job"
sleep 2.5
kill -CONT "$job"
wait "$job" || fail "the job failed"
job=""
got=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/out")
[ "$got" = "$want" ] || fail "digest '$got', want '$want'"
grep -q "summary: deaths=0 " "$tmp/out" || fail "a worker died or was fenced"
echo "tracker_stall_test: ok, $got"
