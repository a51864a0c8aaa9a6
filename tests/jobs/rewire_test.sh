#!/bin/bash
# rewire_test.sh CASE RALLY_RUN PLAIN MOCK — re-wiring under a second death
# and under strangers on the peer ports (docs/recovery.md, "Re-wiring").
#
#   wire_death  N = 4: rank 1 dies in the sum of version 1; rank 3 dies as
#               it starts wiring the epoch that recovery began (rally_mock
#               phase "wire": the address book is out, the survivors are
#               wiring to it).  The survivors must follow the tracker's next
#               RESET at once, the restarted rank 1 (still inside rally_init)
#               must follow it too, and the job must end with the
#               failure-free digest.  rally_connect_timeout_ms is set far
#               above the job's bound, so a worker that sat out its wiring
#               deadline, or a tracker that timed the epoch out, fails this
#               test; no internal status (RALLY_UNKNOWN, 100) may be shown.
#   strangers   N = 4: 8 idle connections from someone without the secret
#               on every worker's peer port, then rank 2 is killed: the
#               recovery must not wait for them (each used to cost 10 s).
# Both compare the digest with a failure-free run; the bound of each job
# (90 s) is far below what the old stall cost (60 s per epoch, 8 x 10 s).
set -u
case_=$1 run=$2 plain=$3 mock=$4
here=$(dirname "$0")
tmp=$(mktemp -d)
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "rewire_test($case_): $*"; exit 1; }

digest() { grep -o 'model_digest=[0-9a-f]*' "$1"; }

case $case_ in
wire_death)
    "$here/../rigs/run_job.sh" 0 90 "$run" -n 4 "$plain" 2000 3 >"$tmp/plain" 2>&1 ||
        { cat "$tmp/plain"; fail "the failure-free run failed"; }
    "$here/../rigs/run_job.sh" 0 90 "$run" -n 4 --max-restarts 4 "$mock" 2000 3 \
        rally_connect_timeout_ms=600000 rally_mock=1,1,5,0 rally_mock=3,1,5,0,wire \
        >"$tmp/mock" 2>&1
    rc=$?
    cat "$tmp/mock"
    [ "$rc" -eq 0 ] || fail "the run with a death during re-wiring failed (or stalled)"
    grep -q "rally mock: killing rank 3 .*(wire)" "$tmp/mock" ||
        fail "rank 3 did not die while wiring (the test lost its coincidence)"
    if grep -Eq "RALLY_UNKNOWN|status 100|\(100\)" "$tmp/mock"; then
        fail "an internal status reached the user"
    fi
    grep -q "summary: deaths=2 " "$tmp/mock" || fail "want 2 deaths: $(grep summary "$tmp/mock")"
    ;;
strangers)
    "$here/../rigs/run_job.sh" 0 90 "$run" -n 4 "$plain" 2000 12 200 >"$tmp/plain" 2>&1 ||
        { cat "$tmp/plain"; fail "the failure-free run failed"; }
: >"$tmp/out"
    RALLY_TEST_TAG="rewire-$$" timeout -k 5 90 "$run" -n 4 "$plain" 2000 12 200 \
        >"$tmp/out" 2>&1 &
    job=$!
    pids="$job"
    n=0
    while [ "$(grep -c '^\[[0-9]\] pid ' "$tmp/out")" -lt 4 ]; do
        n=$((n + 1)); [ "$n" -gt 300 ] && fail "the workers did not start"; sleep 0.1
    done
    held=0
    for r in 0 1 2 3; do
        pid=$(grep "^\[$r\] pid $r " "$tmp/out" | awk '{print $4}')
        port=$(ss -Hltnp 2>/dev/null | grep "pid=$pid," | awk '{print $4}' | sed 's/.*://' | head -n 1)
        host=$(ss -Hltnp 2>/dev/null | grep "pid=$pid," | awk '{print $4}' | sed 's/:[0-9]*$//' | head -n 1)
        [ -n "$port" ] || fail "cannot find rank $r's peer port (pid $pid)"
        for _ in 1 2 3 4 5 6 7 8; do
            # a stranger: connects, says nothing, holds the connection
            ( exec 3<>"/dev/tcp/$host/$port" && exec sleep 600 ) 2>/dev/null &
            pids="$pids $!"
            held=$((held + 1))
        done
    done
    sleep 0.5
    victim=$(grep "^\[2\] pid 2 " "$tmp/out" | awk '{print $4}')
    kill -9 "$victim" || fail "rank 2 was gone before the kill"
    t0=$(date +%s)
    echo "rewire_test: $held idle stranger connections held; killed rank 2 (pid $victim)"
    while kill -0 "$job" 2>/dev/null && ! grep -q "recovered: epoch" "$tmp/out"; do sleep 0.1; done
    took=$(( $(date +%s) - t0 ))
    wait "$job" || { cat "$tmp/out"; fail "the job failed (or stalled past 90 s)"; }
    cat "$tmp/out"
    grep -q "recovered: epoch" "$tmp/out" || fail "no recovery happened"
    echo "rewire_test: recovered within $took s of the kill"
    # each stranger used to cost a 10 s handshake in turn: 8 per worker, 80 s
    [ "$took" -lt 30 ] || fail "the recovery took $took s: the strangers stalled it"
    cp "$tmp/out" "$tmp/mock"
    ;;
*) fail "unknown case" ;;
esac
d0=$(digest "$tmp/plain")
d1=$(digest "$tmp/mock")
[ -n "$d0" ] && [ "$d0" = "$d1" ] || fail "digests differ: without failures '$d0', with '$d1'"
echo "rewire_test($case_): passed ($d1)"
