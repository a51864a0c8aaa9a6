#!/bin/sh
# users_c_test.sh CASE BUILD_DIR — the C programs users write
# (examples/users), each run as its user runs it (no arguments but the
# launcher's), once without failures and once with a kill -9 from outside
# in the middle of the job; the second run must end with the first's
# "digest HEX" line.
#   sgd    rally-run -n 4 sgd_records (1000 steps, records of SAG's last
#          gradients): once rank 0 printed step 100, rank 2 is frozen
#          (SIGSTOP: the others wait for it, so the job cannot finish), the
#          job checked unfinished, then rank 2 killed -9; it is restarted,
#          says it loaded a step in [100, 1000), and rally-run's summary
#          counts one death, recovered
#   rabit  rally-run -n 4 rabit_prog (400 rounds on rabit's C API): the same
#          for rank 0 itself (the broadcasts' root) once it printed round 20
#   mpi    mpirun -n 4 mpi_prog (librally_mpi) with rally_snapshot_dir and
#          rally_snapshot_every=10: once snapshot 20 was committed, mpirun
#          and every worker are frozen, the job checked unfinished, all
#          killed -9; RALLY_RESUME=latest continues after an iteration in
#          [20, 100) and ends with the uninterrupted run's digest
# Every job is bounded in time (run_job.sh, or timeout -k) and must leave
# no process behind.
set -u
case_=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
run=$build/rally-run users=$build/examples/users
tmp=$(mktemp -d)
tag="users-c-$$"
cleanup() { # whatever of this test's jobs is left (after a failure), then the files
    left=$(grep -lzx "RALLY_TEST_TAG=$tag" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3)
    [ -n "$left" ] && kill -9 $left 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "users_c_test $case_: $*"; [ -f "$tmp/out" ] && tail -40 "$tmp/out"; exit 1; }
. "$here/../rigs/trainer_lib.sh"

digest() { sed -n 's/^\(\[0\] \)\{0,1\}digest \([0-9a-f]*\)$/\2/p' "$1"; }

procs() { # prog: the processes of this test's killed job running prog
    for p in $(grep -lzx "RALLY_TEST_TAG=$tag" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$1" ] && echo "$p"
    done
}

worker() { # prog rank: the pid of the rank's worker (rally-run sets RALLY_TASK_ID)
    for p in $(procs "$1"); do
        grep -qzx "RALLY_TASK_ID=$2" "/proc/$p/environ" 2>/dev/null && echo "$p"
    done
}

# kill9 prog rank line: a rally-run -n 4 job of prog; once rank 0 printed
# the line, the rank's worker is frozen, the job checked unfinished, and
# the worker killed -9.  The job must then succeed.
kill9() {
    prog=$1 rank=$2
    RALLY_TEST_TAG=$tag timeout -k 5 120 "$run" -n 4 "$users/$prog" >"$tmp/out" 2>&1 &
    jobpid=$!
    wait_line "$tmp/out" "^\[0\] $3 " "rank 0's '$3'" 6000 0.01
    victim=$(worker "$prog" "$rank")
    [ -n "$victim" ] || fail "no worker of rank $rank found"
    kill -STOP "$victim"
    [ -n "$(digest "$tmp/out")" ] && fail "the job finished before rank $rank was killed"
    kill -9 "$victim"
    wait "$jobpid" || fail "the job failed after rank $rank's kill -9"
    cat "$tmp/out"
    grep -q "rank $rank.* died (killed by signal 9); restarting it" "$tmp/out" ||
        fail "rally-run did not report rank $rank's death"
    grep -q "rally-run: summary: deaths=1 recovered=1 .*per-rank-deaths=.*$rank:1" "$tmp/out" ||
        fail "the summary does not show rank $rank's death recovered"
    no_leftovers "$tag"
}

case $case_ in
sgd)
    job "$tmp/plain" 4 "$users/sgd_records"
    [ -n "$(digest "$tmp/plain")" ] || fail "the failure-free run printed no digest"
    kill9 sgd_records 2 "step 100"
    s=$(sed -n 's/^\[2\] rank 2 restarted at step \([0-9]*\)$/\1/p' "$tmp/out")
    [ -n "$s" ] && [ "$s" -ge 100 ] && [ "$s" -lt 1000 ] ||
        fail "rank 2 did not restart mid-job (step '$s')"
    ;;
rabit)
    job "$tmp/plain" 4 "$users/rabit_prog"
    [ -n "$(digest "$tmp/plain")" ] || fail "the failure-free run printed no digest"
    kill9 rabit_prog 0 "round 20"
    s=$(sed -n 's/^\[0\] rank 0 restarted after round \([0-9]*\)$/\1/p' "$tmp/out")
    [ -n "$s" ] && [ "$s" -ge 20 ] && [ "$s" -lt 400 ] ||
        fail "rank 0 did not restart mid-job (round '$s')"
    ;;
mpi)
    root=""
    [ "$(id -u)" -eq 0 ] && root="--allow-run-as-root"
    MPIRUN="mpirun $root --oversubscribe --bind-to none"
    D=$tmp/snaps
    RALLY_TEST_TAG=$tag timeout -k 5 120 $MPIRUN -n 4 "$users/mpi_prog" >"$tmp/plain" 2>&1 ||
        { cp "$tmp/plain" "$tmp/out"; fail "the failure-free run failed"; }
    [ -n "$(digest "$tmp/plain")" ] || fail "the failure-free run printed no digest"
    RALLY_TEST_TAG=$tag timeout -k 5 120 $MPIRUN -n 4 "$users/mpi_prog" rally_snapshot_dir="$D" \
        rally_snapshot_every=10 >"$tmp/out" 2>&1 &
    jobpid=$!
    wait_line "$tmp/out" "snapshot: committed .*snap-00000020" "snapshot 20's commit" 6000 0.01
    ps=$(procs mpirun; procs mpi_prog)
    [ "$(echo $ps | wc -w)" -eq 5 ] || fail "want mpirun and 4 workers, found: $ps"
    kill -STOP $ps
    [ -n "$(digest "$tmp/out")" ] && fail "the job finished before it was killed"
    kill -9 $ps
    wait "$jobpid"
    no_leftovers "$tag"
    cat "$tmp/out"
    RALLY_TEST_TAG=$tag RALLY_SNAPSHOT_DIR=$D RALLY_SNAPSHOT_EVERY=10 RALLY_RESUME=latest \
        timeout -k 5 120 $MPIRUN -n 4 -x RALLY_SNAPSHOT_DIR -x RALLY_SNAPSHOT_EVERY \
        -x RALLY_RESUME \
        "$users/mpi_prog" >"$tmp/out" 2>&1 || fail "the resumed run failed"
    cat "$tmp/out"
    s=$(sed -n 's/^continuing after iteration \([0-9]*\)$/\1/p' "$tmp/out")
    [ -n "$s" ] && [ "$s" -ge 20 ] && [ "$s" -lt 100 ] ||
        fail "the resumed run did not continue mid-job (iteration '$s')"
    no_leftovers "$tag"
    ;;
*)
    echo "users_c_test: unknown case $case_"
    exit 2
    ;;
esac
[ "$(digest "$tmp/out")" = "$(digest "$tmp/plain")" ] ||
    fail "digest $(digest "$tmp/out") after the kill -9, want $(digest "$tmp/plain")"
echo "users_c_test $case_: ok (digest $(digest "$tmp/out"))"
