#!/bin/sh
# exact_test.sh CASE BUILD_DIR — exact sums in jobs (tests/progs/exact.c,
# which checks every result against each rank's own exact sum and fails on
# one wrong bit; its digest depends on the rows alone).  Every job is
# bounded in time and must leave no process behind.
#   nsame    one digest at N = 1, 2, 3, 4, 5 and 8; at N = 3, 4 and 8 with
#            thresholds that put the passes on the tree, halving-doubling
#            and the ring; over shared memory and over TCP
#   recover  rank deaths (rally_mock) at each of an iteration's eight
#            collectives, the two passes of one sum apart included, a death
#            during another's recovery, and a kill -9: the failure-free digest
#   shrink   4 -> 3 (rally_mock, --max-restarts 0, --min-workers 2) and
#            4 -> 3 -> 2: the failure-free digest of any N
#   mpi      librally_mpi under mpirun at N = 1, 2, 3 and 4 (MPI's own
#            reduction order): rally's digest
set -u
case_=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
run=$build/rally-run prog=$build/tests/exact mock=$build/tests/exact_mock
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "exact_test $case_: $*"; [ -f "$tmp/out" ] && tail -30 "$tmp/out"; exit 1; }
. "$here/../rigs/trainer_lib.sh"
digest() { grep -o 'model_digest=[0-9a-f]*' "$1"; }
ARGS="iters=6 rows=300 cols=48 plain=200"
SMALL="rally_ring_threshold_bytes=4096 rally_hd_threshold_bytes=60000 rally_chunk_bytes=1024"

same() { # out-file what: its digest must be the N = 1 run's
    [ -n "$(digest "$1")" ] && [ "$(digest "$1")" = "$(digest "$tmp/n1")" ] ||
        { cp "$1" "$tmp/out"; fail "$2 gave '$(digest "$1")', N = 1 gave $(digest "$tmp/n1")"; }
}

job "$tmp/n1" 1 "$prog" $ARGS
case $case_ in
nsame)
    for n in 2 3 4 5 8; do
        job "$tmp/n$n" $n "$prog" $ARGS
        same "$tmp/n$n" "N = $n"
    done
    for n in 3 4 8; do
        job "$tmp/s$n" $n "$prog" $ARGS $SMALL
        same "$tmp/s$n" "N = $n, small thresholds"
    done
    for t in shm tcp; do
        RALLY_TRANSPORT=$t job "$tmp/$t" 4 "$prog" $ARGS $SMALL
        same "$tmp/$t" "N = 4 over $t"
    done
    ;;
recover)
    for seq in 0 1 2 3 4 5 6 7; do
        job "$tmp/k$seq" 4 "$mock" $ARGS $SMALL rally_mock=$((seq % 4)),2,$seq,0
        grep -q "exact rank $((seq % 4)) pid" "$tmp/k$seq" || fail "no start line"
        [ "$(grep -c "exact rank $((seq % 4)) pid" "$tmp/k$seq")" -ge 2 ] ||
            { cp "$tmp/k$seq" "$tmp/out"; fail "rank $((seq % 4)) did not die at seq $seq"; }
        same "$tmp/k$seq" "a death at version 2, collective $seq"
    done
    # rank 1 dies while it serves rank 0's recovery
    job "$tmp/kk" 3 "$mock" $ARGS rally_mock=0,3,1,0 rally_mock=1,3,1,1
    same "$tmp/kk" "a death during a recovery"
    RALLY_TEST_TAG="exact-$$" timeout -k 5 90 "$run" -n 3 "$prog" $ARGS iters=30 lag=60 \
        >"$tmp/kill" 2>&1 &
    jobpid=$!
    wait_line "$tmp/kill" "^\[0\] iteration 4 done" "iteration 4" 300 0.1
    victim=$(sed -n 's/^\[2\] exact rank 2 pid \([0-9]*\)$/\1/p' "$tmp/kill" | tail -1)
    kill -9 "$victim" || fail "no worker $victim to kill"
    wait "$jobpid" || { cp "$tmp/kill" "$tmp/out"; fail "the job with a kill -9 failed"; }
    no_leftovers "exact-$$"
    [ "$(grep -c "exact rank 2 pid" "$tmp/kill")" -eq 2 ] || { cp "$tmp/kill" "$tmp/out"; fail "rank 2 was not restarted once"; }
    job "$tmp/n30" 1 "$prog" $ARGS iters=30
    [ "$(digest "$tmp/kill")" = "$(digest "$tmp/n30")" ] ||
        { cp "$tmp/kill" "$tmp/out"; fail "the kill -9 gave $(digest "$tmp/kill"), N = 1 $(digest "$tmp/n30")"; }
    ;;
shrink)
    "$here/../rigs/run_job.sh" 0 90 "$run" -n 4 --min-workers 2 --max-restarts 0 "$mock" $ARGS \
        rally_mock=2,3,1,0 >"$tmp/s" 2>&1 || { cp "$tmp/s" "$tmp/out"; fail "the shrink"; }
    grep -q "^rally-run: rank 2 lost for good: going on with 3 workers from version 3$" "$tmp/s" ||
        { cp "$tmp/s" "$tmp/out"; fail "no shrink line"; }
    grep -q "workers=3 resizes=1" "$tmp/s" || { cp "$tmp/s" "$tmp/out"; fail "no resize seen"; }
    same "$tmp/s" "a shrink 4 -> 3"
    "$here/../rigs/run_job.sh" 0 90 "$run" -n 4 --min-workers 2 --max-restarts 0 "$mock" $ARGS $SMALL \
        rally_mock=1,2,0,0 rally_mock=3,4,5,0 >"$tmp/s2" 2>&1 ||
        { cp "$tmp/s2" "$tmp/out"; fail "the shrink 4 -> 3 -> 2"; }
    grep -q "workers=2 resizes=2" "$tmp/s2" || { cp "$tmp/s2" "$tmp/out"; fail "no two resizes"; }
    same "$tmp/s2" "a shrink 4 -> 3 -> 2"
    ;;
mpi)
    for n in 1 2 3 4; do
        "$here/../rigs/mpi_job.sh" 0 120 $n "$build/tests/exact_mpi" $ARGS >"$tmp/m$n" 2>&1 ||
            { cp "$tmp/m$n" "$tmp/out"; fail "mpirun -n $n"; }
        same "$tmp/m$n" "librally_mpi at N = $n"
    done
    ;;
*) fail "no case $case_" ;;
esac
echo "exact_test $case_: ok"
