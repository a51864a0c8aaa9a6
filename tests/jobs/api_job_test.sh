#!/bin/sh
# api_job_test.sh CASE RALLY_RUN API_JOB API_JOB_MOCK — issue 10's API
# through whole jobs (tests/progs/api_job.c says what each rank checks):
#   abort       rank 2 of 4 aborts: ranks 0, 1, 3 get RALLY_EPEER with its
#               message (one pending, one whose next call comes after the
#               abort), the job fails, nobody is restarted
#   attempt     rank 1 dies (rally_mock): its replacement says attempt 1
#               before rally_load_checkpoint; the model is the failure-free one
#   mismatch    rank 2 checkpoints a different model: all 4 ranks get
#               RALLY_EMISMATCH naming the ranks and both digests
#   kinds       rank 1 checkpoints while the others allreduce: the messages
#               name both calls, never "?("
#   digest      rally_digest64 is XXH3_64bits (no job)
#   report      rally_report and rally_report_total: a no-op that says
#               nothing alone (no launcher), and a 3-worker job whose
#               reports reach the tracker as frames it accepts (the job
#               succeeds); bad keys and NaN are RALLY_EINVAL both ways
#   config      an unknown RALLY_* variable and a typo'd rally_* argument
#               are RALLY_ECONFIG naming the nearest key; RALLY_TEST_* and
#               the Python package's variables are not settings
#   mock_range  rally_mock naming rank 5 of a 2-worker job (and of a job
#               without launcher) is RALLY_ECONFIG; the job fails once
set -u
case=$1 run=$2 prog=$3 mock=$4
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "api_job_test $case: $*"; exit 1; }
# job EXPECT ARGS...: run_job.sh's checks (bounded, nothing left behind);
# the output is in $tmp/out
job() {
    e=$1
    shift
    "$here/../rigs/run_job.sh" "$e" 90 "$@" >"$tmp/out" 2>&1
    rc=$?
    cat "$tmp/out"
    [ "$rc" -eq 0 ] || fail "run_job.sh failed (above)"
}
count() { grep -c -- "$1" "$tmp/out"; }

case "$case" in
abort)
    job nonzero "$run" -n 4 "$prog" abort 2
    [ "$(count 'saw the abort')" -eq 3 ] || fail "want ranks 0, 1, 3 to see the abort"
    [ "$(count 'rank 2 after its abort: RALLY_ESTATE')" -eq 1 ] ||
        fail "want rank 2's later call to be RALLY_ESTATE naming its message"
    ! grep -q "restarting" "$tmp/out" || fail "a worker was restarted after rally_abort"
    ;;
attempt)
    job 0 "$run" -n 4 "$prog" attempt
    want=$(grep -o 'api_job: model .*' "$tmp/out")
    [ -n "$want" ] || fail "no model line in the failure-free run"
    [ "$(count 'attempt 0$')" -eq 4 ] || fail "want attempt 0 on every rank without deaths"
    job 0 "$run" -n 4 "$mock" attempt rally_mock=1,2,0,0
    [ "$(count '\[1\] api_job: rank 1 attempt 1$')" -eq 1 ] ||
        fail "the restarted rank 1 did not say attempt 1 before loading"
    [ "$(count 'rank 1 resumed at version 2 (attempt 1)')" -eq 1 ] ||
        fail "the restarted rank 1 did not resume at version 2"
    [ "$(count 'attempt 0$')" -eq 4 ] || fail "want attempt 0 on every first start"
    [ "$(grep -o 'api_job: model .*' "$tmp/out")" = "$want" ] ||
        fail "the model differs from the failure-free run's"
    ;;
mismatch)
    job nonzero "$run" -n 4 "$prog" mismatch 2
    [ "$(count 'mismatch named')" -eq 4 ] || fail "want every rank to name the mismatch"
    ! grep -q "restarting" "$tmp/out" || fail "a worker was restarted after the mismatch"
    ;;
kinds)
    job nonzero "$run" -n 4 "$prog" kinds 1
    ! grep -q '?(' "$tmp/out" || fail "a message names a collective '?('"
    grep -q "collectives differ.*rally_checkpoint" "$tmp/out" ||
        fail "no message names rally_checkpoint"
    [ "$(count 'kinds named')" -eq 4 ] || fail "want every rank to fail naming kinds"
    ;;
digest)
    "$prog" digest || fail "rally_digest64 is not XXH3_64bits"
    ;;
report)
    out=$(timeout 20 "$prog" report 2>&1) || fail "alone: $out"
    echo "$out"
    [ "$out" = "api_job: rank 0 reported" ] || fail "alone, a report said something: $out"
    job 0 "$run" -n 3 "$prog" report
    [ "$(count 'api_job: rank [0-2] reported$')" -eq 3 ] || fail "want every rank to report"
    ;;
config)
    out=$(env RALLY_TIMEOUT_MSS=5 "$prog" init 2>&1) && fail "RALLY_TIMEOUT_MSS was accepted: $out"
    echo "$out"
    echo "$out" | grep -q "RALLY_ECONFIG: the environment variable RALLY_TIMEOUT_MSS.*RALLY_TIMEOUT_MS?" ||
        fail "want RALLY_ECONFIG naming RALLY_TIMEOUT_MSS and RALLY_TIMEOUT_MS"
    out=$(env RALLY_HEARTBAET_MS=5 "$prog" init 2>&1) && fail "RALLY_HEARTBAET_MS was accepted"
    echo "$out"
    echo "$out" | grep -q "did you mean RALLY_HEARTBEAT_MS?" || fail "want RALLY_HEARTBEAT_MS named"
    out=$("$prog" init rally_chunk_byte=4096 2>&1) && fail "rally_chunk_byte was accepted"
    echo "$out"
    echo "$out" | grep -q "did you mean rally_chunk_bytes?" || fail "want rally_chunk_bytes named"
    out=$(env RALLY_TEST_ANYTHING=1 RALLY_LIBRARY=x RALLY_MOCK_LIBRARY=y RALLY_PYTHON_MOCK=1 \
        RALLY_CHUNK_BYTES=4096 "$prog" init 2>&1) || fail "a variable that is not a setting was refused: $out"
    echo "$out"
    ;;
mock_range)
    out=$("$mock" init rally_mock=5,1,0,0 2>&1) && fail "rally_mock=5,... accepted without a launcher"
    echo "$out"
    echo "$out" | grep -q "names rank 5, but the job has 1 worker" || fail "want rank 5 and 1 worker named"
    job nonzero "$run" -n 2 "$mock" attempt rally_mock=5,1,0,0
    grep -q "names rank 5, but the job has 2 workers (ranks 0..1)" "$tmp/out" ||
        fail "want rank 5 and 2 workers named"
    ! grep -q "restarting" "$tmp/out" || fail "a worker was restarted for a configuration error"
    ;;
*) fail "unknown case" ;;
esac
echo "api_job_test $case: passed"
