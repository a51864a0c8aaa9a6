#!/bin/sh
# rabit_cxx_test.sh RALLY_RUN PLAIN MOCK LAUNCHER MODES ARGS... — the
# recovery program written to rabit's C++ API (tests/rabit/recover.cc;
# PLAIN linked as -lrabit, MOCK as -lrabit_mock):
#   rally-run MODE mock=...   10 workers under rally-run without failures,
#             then under rabit's mock= kill points: both succeed, the
#             digests are equal, and every death (each a kill point that
#             fired) was recovered
#   dmlc MODE mock=...        the same job under a dmlc tracker
#             (tests/rigs/dmlc_job.py, as dmlc-submit starts workers), against
#             the digest under rally-run
#   snapshot MODES            each mode (comma-separated) at 4 workers: two
#             iterations under rally-run --snapshot-dir, then the job resumed
#             from that snapshot (--resume latest) to the end: the digest of
#             the uninterrupted run
#   mpi MODES MPI_PROG        each mode (comma-separated) at 4 workers of
#             MPI_PROG (linked as -lrabit_mpi) under mpirun: the digest
#             under rally-run (every value is exact: any order gives it)
# MODE is model, local or lazy, with ",forget" for the negative control
# (a restarted worker drops its local model: "digests differ").
# Every job is bounded in time and leaves no process behind (run_job.sh).
set -u
run=$1 plain=$2 mock=$3 launcher=$4 modes=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
iters=4
fail() { echo "rabit_cxx_test: $*"; exit 1; }
digest() { grep -o 'model_digest=[0-9a-f]*' "$1"; }
args() { # MODE: the program's arguments
    echo "$1" | tr ',' ' ' | sed 's/model//'
}
# baseline N MODE: the failure-free digest under rally-run
baseline() {
    # shellcheck disable=SC2046 # the mode's words are arguments
    "$here/../rigs/run_job.sh" 0 60 "$run" -n "$1" "$plain" $iters $(args "$2") >"$tmp/plain" 2>&1 ||
        { cat "$tmp/plain"; fail "the failure-free run failed"; }
    want=$(digest "$tmp/plain")
    [ -n "$want" ] || { cat "$tmp/plain"; fail "no digest without failures"; }
}

case $launcher in
rally-run)
    baseline 10 "$modes"
    # shellcheck disable=SC2046
    "$here/../rigs/run_job.sh" 0 200 "$run" -n 10 --max-restarts 4 "$mock" $iters $(args "$modes") "$@" \
        >"$tmp/mock" 2>&1 || { cat "$tmp/mock"; fail "the run with failures failed"; }
    cat "$tmp/mock"
    kills=$(grep -c "rally mock: killing rank" "$tmp/mock")
    grep -q "summary: deaths=$kills recovered=$kills " "$tmp/mock" ||
        fail "want deaths=$kills recovered=$kills (every death a kill point, each recovered)"
    ;;
dmlc)
    baseline 10 "$modes"
    # shellcheck disable=SC2046
    timeout -k 5 230 python3 "$here/../rigs/dmlc_job.py" -n 10 --timeout 200 --max-attempts 5 -- \
        "$mock" $iters $(args "$modes") "$@" >"$tmp/mock" 2>&1 ||
        { cat "$tmp/mock"; fail "the job under the dmlc tracker failed"; }
    cat "$tmp/mock"
    kills=$(grep -c "rally mock: killing rank" "$tmp/mock")
    grep -q "^dmlc_job: restarts=$kills shutdowns=10\$" "$tmp/mock" ||
        fail "want restarts=$kills shutdowns=10 (a restart for each kill point that fired)"
    ;;
snapshot)
    for mode in $(echo "$modes" | tr ',' ' '); do
        baseline 4 "$mode"
        snaps=$tmp/snaps.$mode
        # shellcheck disable=SC2046
        "$here/../rigs/run_job.sh" 0 60 "$run" -n 4 --snapshot-dir "$snaps" --snapshot-every 2 \
            --keep-snapshots "$plain" 2 $(args "$mode") >"$tmp/first" 2>&1 ||
            { cat "$tmp/first"; fail "$mode: the first two iterations failed"; }
        # shellcheck disable=SC2046
        "$here/../rigs/run_job.sh" 0 60 "$run" -n 4 --snapshot-dir "$snaps" --resume latest "$plain" \
            $iters $(args "$mode") >"$tmp/resumed" 2>&1 ||
            { cat "$tmp/resumed"; fail "$mode: the resumed run failed"; }
        grep -q "resuming from .*snap-00000002" "$tmp/resumed" ||
            { cat "$tmp/resumed"; fail "$mode: did not resume from version 2"; }
        got=$(digest "$tmp/resumed")
        echo "rabit_cxx_test: snapshot $mode: uninterrupted $want, resumed $got"
        [ "$got" = "$want" ] || fail "$mode: digests differ: uninterrupted '$want', resumed '$got'"
    done
    echo "rabit_cxx_test: passed"
    exit 0
    ;;
mpi)
    mprog=$1
    for mode in $(echo "$modes" | tr ',' ' '); do
        baseline 4 "$mode"
        "$here/../rigs/mpi_job.sh" 0 120 4 "$mprog" $iters $(args "$mode") >"$tmp/mpi" 2>&1 ||
            { cat "$tmp/mpi"; fail "$mode: the job under mpirun failed"; }
        got=$(digest "$tmp/mpi")
        echo "rabit_cxx_test: mpi $mode: rally-run $want, mpirun $got"
        [ "$got" = "$want" ] || fail "$mode: digests differ: rally-run '$want', mpirun '$got'"
    done
    echo "rabit_cxx_test: passed"
    exit 0
    ;;
*) fail "no launcher '$launcher'" ;;
esac
[ "$kills" -ge 1 ] || fail "no kill point fired"
got=$(digest "$tmp/mock")
[ "$got" = "$want" ] || fail "digests differ: without failures '$want', with failures '$got'"
echo "rabit_cxx_test: passed ($got, $kills deaths)"
