#!/bin/sh
# mpi_snapshot_test.sh CASE BUILD_DIR — durable snapshots of a job linked
# with librally_mpi, under OpenMPI's mpirun with no rally-run: the same
# snapshot settings, the job owning its run (src/snapjob/resume.c).  BUILD_DIR
# holds rally-datagen, rally-kmeans-mpi and rally-snapshot.  Every job is
# bounded in time and must leave no process behind.
#   kill9   mpirun -n 4 rally-kmeans-mpi ... rally_snapshot_dir=D
#           rally_snapshot_every=2; kill -9 of mpirun and every worker at
#           once after a snapshot was committed; a fresh start into D is
#           refused naming the snapshots; RALLY_RESUME=latest continues from
#           the newest and the result: line is bit-identical to an
#           uninterrupted run on the same backend; the successful run then
#           removes its own snapshots, not the killed run's
#   local   a job whose snapshots hold every rank's local model
#           (tests/progs/recover.c "local"), kill -9 after a commit, resumed
#           from latest: the digest (which covers every local model) is the
#           uninterrupted run's; on another world size it is refused
#   copy    the second tier under mpirun (rally_snapshot_copy=T): each
#           committed snapshot is copied to T and verified there; the whole
#           job killed, the first tier deleted, RALLY_RESUME=latest resumes
#           from T, saying so, to the uninterrupted digest; the successful
#           run removes its own snapshots from both tiers
set -u
case_=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
km=$build/rally-kmeans-mpi snap=$build/rally-snapshot
tmp=$(mktemp -d)
tag="mpisnap-$$"
export RALLY_TEST_TAG="$tag"
root=""
[ "$(id -u)" -eq 0 ] && root="--allow-run-as-root"
MPIRUN="mpirun $root --oversubscribe --bind-to none"
# processes of this test still running (this shell carries the tag too)
ours() {
    for p in $(grep -l "RALLY_TEST_TAG=$tag" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do
        case $(cat "/proc/$p/comm" 2>/dev/null) in rally* | recover* | mpirun | orted) echo "$p" ;; esac
    done
}
cleanup() {
    left=$(ours)
    [ -n "$left" ] && kill -9 $left 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "mpi_snapshot_test $case_: $*"; [ -f "$tmp/out" ] && tail -40 "$tmp/out"; exit 1; }
digest() { grep -o 'model_digest=[0-9a-f]*' "$1"; }
job() { # out-file N args... : an mpirun job that must succeed
    o=$1 n=$2
    shift 2
    timeout -k 5 60 $MPIRUN -n "$n" "$@" >"$o" 2>&1 || { cp "$o" "$tmp/out"; fail "job failed: $*"; }
}
wait_line() { # pattern what: until it shows in $tmp/out (30 s at most)
    i=0
    until grep -q "$1" "$tmp/out"; do
        i=$((i + 1))
        [ $i -gt 600 ] && fail "$2"
        sleep 0.05
    done
}
no_orphans() {
    sleep 0.3
    left=$(ours)
    [ -z "$left" ] || { kill -9 $left 2>/dev/null; fail "processes left behind: $left"; }
}
# kill9_after PATTERN WHAT PIDS_SED N ARGS...: starts the job, waits for
# PATTERN, then kills mpirun and every worker (their pids from PIDS_SED on
# the output) at once
kill9_after() {
    pattern=$1 what=$2 pids=$3 n=$4
    shift 4
    timeout -k 5 60 $MPIRUN -n "$n" "$@" >"$tmp/out" 2>&1 &
    t=$!
    wait_line "$pattern" "$what"
    i=0
    until [ "$(sed -n "$pids" "$tmp/out" | wc -l)" -ge "$n" ]; do
        i=$((i + 1))
        [ $i -gt 600 ] && fail "not every worker said its pid"
        sleep 0.05
    done
    kill -9 $(pgrep -P "$t" -x mpirun) $(sed -n "$pids" "$tmp/out") 2>/dev/null
    wait "$t" 2>/dev/null
    no_orphans
}
nsnaps() { ls -d "$1"/snap-* 2>/dev/null | wc -l; }

D=$tmp/snaps
case $case_ in
kill9)
    data=$tmp/d.csv
    "$build/rally-datagen" --rows 20000 --features 8 --centers 6 --spread 2 --seed 7 --format csv \
        -o "$data" >/dev/null 2>&1 || fail "rally-datagen failed"
    # 30 versions: the kill after version 4's commit lands well before the end
    KM="--data $data --data-opt csv_label=0 -k 6 --iters 30 --fixed-iters --pause-ms 60"
    job "$tmp/plain" 4 "$km" $KM
    kill9_after 'snapshot: committed .*snap-00000004' "no snapshot of version 4 was committed" \
        's/^shard [0-9] fingerprint .* pid \([0-9]*\)$/\1/p' 4 \
        "$km" $KM rally_snapshot_dir="$D" rally_snapshot_every=2 rally_resume=latest-if-any
    grep -q "^result:" "$tmp/out" && fail "the job finished before it was killed"
    grep -q "rally_resume=latest-if-any: no complete snapshot in .*: a fresh start" "$tmp/out" ||
        fail "rally_resume=latest-if-any did not say it starts afresh"
    grep -v iteration "$tmp/out" | grep -v '^ \|^--\|^$'
    [ "$(nsnaps "$D/rally-kmeans-mpi")" -ge 1 ] || fail "the killed job left no snapshot"
    "$snap" verify "$D/rally-kmeans-mpi/latest" || fail "the newest snapshot does not verify"
    # a fresh start into it is refused, naming the snapshots and the ways on
    timeout -k 5 60 $MPIRUN -n 4 "$km" $KM rally_snapshot_dir="$D" >"$tmp/out" 2>&1 &&
        fail "a fresh start into a directory with snapshots was not refused"
    grep -q "already holds .*snap-0000000.*rally_resume=latest.*rally_overwrite=1" "$tmp/out" ||
        fail "the refusal names no snapshot"
    grep -q "^result:" "$tmp/out" && fail "a refused start produced a result"
    # the same settings as environment variables, passed on by mpirun
    RALLY_SNAPSHOT_DIR=$D RALLY_SNAPSHOT_EVERY=2 RALLY_RESUME=latest \
        job "$tmp/resumed" 4 -x RALLY_SNAPSHOT_DIR -x RALLY_SNAPSHOT_EVERY -x RALLY_RESUME "$km" $KM
    grep -v iteration "$tmp/resumed"
    grep -q "resuming from .*snap-0000000[4-9] (rally_resume=latest, verified)" "$tmp/resumed" ||
        fail "rank 0 did not say what it resumed from"
    grep -q "^iteration 0 " "$tmp/resumed" && fail "the resumed job started from scratch"
    [ "$(digest "$tmp/resumed")" = "$(digest "$tmp/plain")" ] ||
        fail "digest $(digest "$tmp/resumed") after resume, want $(digest "$tmp/plain")"
    grep -q "removed its [0-9]* snapshot" "$tmp/resumed" || fail "the run did not clean up"
    "$snap" ls "$D/rally-kmeans-mpi"
    [ "$(nsnaps "$D/rally-kmeans-mpi")" -ge 1 ] || fail "the killed run's snapshots were removed"
    no_orphans
    ;;
local)
    rec=$build/tests/recover_mpi
    job "$tmp/plain" 4 "$rec" 2000 12 local 150
    kill9_after 'snapshot: committed .*snap-00000006' "no snapshot of version 6 was committed" \
        's/^pid [0-9]* \([0-9]*\)$/\1/p' 4 \
        "$rec" 2000 12 local 150 rally_snapshot_dir="$D" rally_snapshot_every=3 rally_snapshot_job=rec
    grep -q "result:" "$tmp/out" && fail "the job finished before it was killed"
    # the newest committed one (a newer one may have been cut short by the kill)
    newest=$(for d in "$D"/rec/snap-*; do [ -f "$d/MANIFEST.json" ] && echo "$d"; done | tail -1)
    n=$(ls "$newest" | grep -c '^local-000[0-3].bin$')
    [ "$n" -eq 4 ] || fail "the snapshot holds $n local models, want 4"
    # another world size: refused before any iteration, naming both
    timeout -k 5 60 $MPIRUN -n 2 "$rec" 2000 12 local 40 rally_snapshot_dir="$D" \
        rally_snapshot_job=rec rally_resume=latest >"$tmp/out" 2>&1 &&
        fail "a snapshot of 4 workers resumed on 2"
    grep -q "4 workers.*2" "$tmp/out" || fail "the refusal does not name both world sizes"
    job "$tmp/resumed" 4 "$rec" 2000 12 local 40 rally_snapshot_dir="$D" rally_snapshot_job=rec \
        rally_resume=latest
    grep -q "resuming from .*snap-0000000[6-9]" "$tmp/resumed" || fail "nothing was resumed"
    [ "$(digest "$tmp/resumed")" = "$(digest "$tmp/plain")" ] ||
        fail "digest $(digest "$tmp/resumed") after resume, want $(digest "$tmp/plain")"
    no_orphans
    ;;
copy)
    data=$tmp/d.csv
    "$build/rally-datagen" --rows 20000 --features 8 --centers 6 --spread 2 --seed 7 --format csv \
        -o "$data" >/dev/null 2>&1 || fail "rally-datagen failed"
    KM="--data $data --data-opt csv_label=0 -k 6 --iters 30 --fixed-iters --pause-ms 60"
    T=$tmp/copies
    job "$tmp/plain" 4 "$km" $KM
    kill9_after "snapshot: copied to $T/rally-kmeans-mpi/snap-" "no snapshot was copied to $T" \
        's/^shard [0-9] fingerprint .* pid \([0-9]*\)$/\1/p' 4 \
        "$km" $KM rally_snapshot_dir="$D" rally_snapshot_every=2 rally_snapshot_copy="$T"
    grep -q "^result:" "$tmp/out" && fail "the job finished before it was killed"
    "$snap" verify "$T/rally-kmeans-mpi/latest" || fail "the copy does not verify"
    rm -rf "$D"
    job "$tmp/resumed" 4 "$km" $KM rally_snapshot_dir="$D" rally_snapshot_every=2 \
        rally_snapshot_copy="$T" rally_resume=latest
    grep -v iteration "$tmp/resumed"
    grep -q "resuming from $T/rally-kmeans-mpi/snap-[0-9]* (rally_resume=latest, verified)" \
        "$tmp/resumed" || fail "rank 0 did not resume from the second tier"
    [ "$(digest "$tmp/resumed")" = "$(digest "$tmp/plain")" ] ||
        fail "digest $(digest "$tmp/resumed") after resume, want $(digest "$tmp/plain")"
    grep -q "snapshot: $T: the run succeeded: removed its" "$tmp/resumed" ||
        fail "the second tier was not cleaned"
    no_orphans
    ;;
*)
    echo "mpi_snapshot_test: unknown case $case_"
    exit 2
    ;;
esac
echo "mpi_snapshot_test $case_: ok"
