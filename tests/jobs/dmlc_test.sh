#!/bin/sh
# dmlc_test.sh CASE RALLY_RUN PLAIN MOCK [RABIT_BASIC] — rally workers under a dmlc tracker
# (tests/rigs/dmlc_job.py: a tracker written from docs/protocol-dmlc.md and a
# launcher that restarts a killed worker with the next DMLC_NUM_ATTEMPT):
#   n4        4 workers, no failure: the digest of the same job under rally-run
#   mock      rank 0 dies in the bootstrap, rank 2 in version 1 (mock points):
#             both restarted, the failure-free digest, restarts=2
#   attempt_arg  the mock case with the attempt passed as dmlc-submit
#             --cluster local does, an argument DMLC_NUM_ATTEMPT=K on each
#             restart: each restarted worker gets past its point, restarts=2
#   kill9     rank 1 lags inside version 2 while the launcher kill -9s rank 2:
#             the failure-free digest, restarts=1
#   hd        8 workers with halving-doubling and the ring (links the dmlc
#             tracker never wires) and a death: the digest under rally-run
#   during_recovery  N=8: rank 2 dies in an op and rank 5 while serving the
#             recovery from it (a mock group: they die together): restarts=2
#   local_die_same   N=8 with local models: five deaths, three at once
#   rabit     a program written to rabit's C API (RABIT_BASIC), N=3: its checks
#             pass, RabitIsDistributed() is 1, RabitTrackerPrint reaches the
#             tracker
#   rabit_args  the same with rabit's arguments (rabit_tracker_uri=, ...) in
#             place of the DMLC_* variables
#   xgboost   the rabit tracker Debian's python3-xgboost ships (python3 -m
#             xgboost.tracker) in place of the test's: a mock death and a
#             kill -9, the failure-free digest
#   stuck     rank 2 never calls its next collective: the others' own bound
#             ends the job within seconds, naming rank 2
#   not_dmlc  the tracker answers the greeting with another magic number: every
#             worker fails with a sentence naming it, no hang
set -u
case_=$1 run=$2 plain=$3 mock=$4 rabit=${5:-}
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "dmlc_test $case_: $*"; tail -40 "$tmp/out" 2>/dev/null; exit 1; }

baseline() { # prog args...: the digest under rally-run
    timeout -k 5 120 "$run" -n "$n" "$@" >"$tmp/base" 2>&1 || { cat "$tmp/base"; fail "baseline failed"; }
    grep -o 'model_digest=[0-9a-f]*' "$tmp/base"
}

dmlc() { # job args... -- prog args...: runs the job, output in $tmp/out
    timeout -k 5 150 python3 "$here/../rigs/dmlc_job.py" --timeout 120 "$@" >"$tmp/out" 2>&1
}

check() { # want restarts
    got=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/out")
    [ -n "$want" ] && [ "$got" = "$want" ] || fail "digest '$got', want '$want'"
    grep -q "^dmlc_job: restarts=$1 shutdowns=$n\$" "$tmp/out" || fail "want restarts=$1 shutdowns=$n"
    echo "dmlc_test $case_: ok ($got, restarts=$1)"
}

n=4
case "$case_" in
n4)
    want=$(baseline "$plain" 1000 4)
    dmlc -n 4 -- "$plain" 1000 4 || fail "the job failed"
    check 0 ;;
mock | attempt_arg)
    want=$(baseline "$plain" 1000 4)
    opt=""
    [ "$case_" = attempt_arg ] && opt=--attempt-arg
    dmlc -n 4 $opt -- "$mock" 1000 4 rally_mock=0,0,0,0 rally_mock=2,1,5,0 || fail "the job failed"
    check 2 ;;
kill9)
    want=$(baseline "$plain" 1000 4)
    dmlc -n 4 --kill9 '2:^rank 1 lags' -- "$plain" 1000 4 lag=1,2,0,3000 || fail "the job failed"
    grep -q "kill -9 task 2" "$tmp/out" || fail "the kill did not happen"
    check 1 ;;
hd)
    n=8
    set -- rally_ring_threshold_bytes=1024 rally_hd_threshold_bytes=1G rally_chunk_bytes=512
    want=$(baseline "$plain" 1000 3 "$@")
    dmlc -n 8 -- "$mock" 1000 3 "$@" rally_mock=5,1,5,0 || fail "the job failed"
    check 1 ;;
during_recovery | local_die_same)
    n=8
    extra=""
    [ "$case_" = local_die_same ] && extra=local
    want=$(baseline "$plain" 1000 3 $extra)
    RALLY_MOCK_SYNC="$tmp/sync" # where a mock group meets
    mkdir "$RALLY_MOCK_SYNC"
    export RALLY_MOCK_SYNC
    if [ "$case_" = during_recovery ]; then
        dmlc -n 8 -- "$mock" 1000 3 rally_mock=2,1,5,0,op,g rally_mock=5,1,5,0,recovery,g ||
            fail "the job failed"
        check 2
    else
        dmlc -n 8 -- "$mock" 1000 3 local rally_mock=0,0,0,0 rally_mock=1,1,5,0,op,same \
            rally_mock=0,1,5,1,op,same rally_mock=4,1,5,0,op,same rally_mock=1,1,5,1 ||
            fail "the job failed"
        check 5
    fi ;;
rabit | rabit_args)
    n=3
    opt=""
    [ "$case_" = rabit_args ] && opt=--rabit-args
    dmlc -n 3 $opt -- "$rabit" || fail "the job failed"
    for r in 0 1 2; do
        grep -q "^tracker: print: rabit_basic_ok rank $r of 3 checked 38 distributed 1 " "$tmp/out" ||
            fail "no rabit_basic_ok line of rank $r through the tracker"
    done
    grep -q "^dmlc_job: restarts=0 shutdowns=3\$" "$tmp/out" || fail "want shutdowns=3"
    echo "dmlc_test $case_: ok" ;;
xgboost)
    py=/usr/bin/python3 # Debian's, where python3-xgboost is
    [ -x "$py" ] || py=python3
    "$py" -c 'import xgboost.tracker' || fail "no xgboost.tracker (scripts/deps.sh installs python3-xgboost)"
    want=$(baseline "$plain" 1000 4)
    dmlc -n 4 --tracker-cmd "$py -m xgboost.tracker" -- "$mock" 1000 4 rally_mock=2,1,5,0 ||
        fail "the job with a mock death failed"
    check 1
    dmlc -n 4 --tracker-cmd "$py -m xgboost.tracker" --kill9 '2:^rank 1 lags' -- \
        "$plain" 1000 4 lag=1,2,0,3000 || fail "the job with a kill -9 failed"
    grep -q "kill -9 task 2" "$tmp/out" || fail "the kill did not happen"
    check 1 ;;
stuck)
    # rank 2 sits in its own code for good before a collective: no tracker
    # watches progress here, so the workers' own bound
    # (rally_progress_timeout_ms caps rally_timeout_ms) ends the job, naming it
    dmlc -n 4 -- "$plain" 1000 4 lag=2,2,0,600000 rally_progress_timeout_ms=2000 \
        rally_connect_timeout_ms=3000 && fail "the job succeeded"
    grep -q "dmlc links never connected (from rank 2)" "$tmp/out" || fail "no worker named rank 2"
    grep -q "time limit" "$tmp/out" && fail "the job hung"
    echo "dmlc_test $case_: ok" ;;
not_dmlc)
    dmlc -n 2 --tracker-magic 0x1234 -- "$plain" 100 1 && fail "the job succeeded"
    [ "$(grep -c 'is it a dmlc tracker' "$tmp/out")" -ge 1 ] || fail "no worker named the tracker"
    grep -q "time limit" "$tmp/out" && fail "the job hung"
    echo "dmlc_test $case_: ok" ;;
*) fail "no such case" ;;
esac
