#!/bin/sh
# tracker_flood_test.sh RALLY_RUN PLAIN FLOOD — strangers flood the tracker's
# port with idle connections (more than it keeps) during a job; a worker is
# killed; its restart must still join, and the job end with the
# failure-free digest.  Bounded in time; kills every process it starts.
set -u
run=$1 plain=$2 flood=$3
here=$(dirname "$0")
tmp=$(mktemp -d)
fpid=""
trap '[ -n "$fpid" ] && kill -9 $fpid 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "tracker_flood_test: $*"; tail -40 "$tmp/out" 2>/dev/null; exit 1; }
. "$here/../rigs/trainer_lib.sh" # wait_line

"$here/../rigs/run_job.sh" 0 60 "$run" -n 4 "$plain" 2000 30 100 >"$tmp/plain" 2>&1 ||
    fail "the failure-free run failed"
want=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/plain")

RALLY_TEST_TAG="flood-$$" timeout -k 5 60 "$run" -n 4 "$plain" 2000 30 100 >"$tmp/out" 2>&1 &
job=$!
wait_line "$tmp/out" "^\[3\] pid 3 " "rank 3's start" 300 0.1
pid1=$(grep "^\[1\] pid 1 " "$tmp/out" | awk '{print $4}')
addr=$(tr '\0' '\n' <"/proc/$pid1/environ" | sed -n 's/^RALLY_TRACKER=//p')
[ -n "$addr" ] || fail "no RALLY_TRACKER in rank 1's environment"
"$flood" "${addr%:*}" "${addr##*:}" 300 >"$tmp/flood" 2>&1 &
fpid=$!
wait_line "$tmp/flood" "flood: 300 open" "the flood's 300 connections" 300 0.1
kill -9 "$pid1"
wait "$job" || fail "the job failed"
got=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/out")
[ "$got" = "$want" ] || fail "digest '$got', want '$want'"
grep -q "summary: deaths=1 recovered=1 " "$tmp/out" || fail "want deaths=1 recovered=1"
grep -q "to make room: .* unauthenticated connections are open" "$tmp/out" ||
    fail "the tracker's table never filled: the flood did not reach it"
echo "tracker_flood_test: ok, $got"
