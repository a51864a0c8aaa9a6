#!/bin/sh
# losses_test.sh CASE BUILD_DIR — what rally-run does after losses, with
# tests/progs/records.c (records as local models; its digest does not depend
# on N) and tests/progs/recover.c.  Every job is bounded in time (run_job.sh,
# or timeout) and must leave no process behind.
#   rank0_snapshot  an elastic job (--min-workers 2, --max-restarts 0) loses
#                rank 0 (rally_mock at version 7) with snapshots every 5
#                versions: the new rank 0 (launched as 1) commits the
#                snapshot of version 10 (of 3 workers), and the job ends with
#                the failure-free digest
#   rank0_signals  the same loss, then SIGUSR1 to rally-run: the new rank 0
#                takes and commits a snapshot; then SIGTERM: the job is
#                preempted after a snapshot (exit 5), not stopped without one
#   auto_resume_local  --auto-resume, rally_local_replica=1: ranks 1 and 2 die
#                together (a rally_mock group) and take a local model with
#                them (status 3 before); rally-run resumes the newest
#                snapshot once, the kill points, having fired, do not fire
#                again, and the job ends with the failure-free digest
#   auto_resume_records  the same in an elastic job: the records of a rank
#                are lost when the job shrinks; one resume, the same digest
#   auto_resume_piece  a piece of a result kept in pieces is lost (ranks 3
#                and 4 keep piece 4 of 8 and die together); one resume, the
#                digest of the run without deaths
#   auto_resume_opaque  an elastic job with opaque local models loses a rank
#                for good: it cannot go on with fewer (status 3 before); one
#                resume at -n from the newest snapshot, the digest without it
#   auto_resume_not_a_loss  a failure that is not a loss (a flipped bit that
#                rally_verify_every names, status 3) is not resumed
set -u
case_=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
run=$build/rally-run rec=$build/tests/records_mock
tmp=$(mktemp -d)
tag="losses-$$"
jobpid=
trap '[ -n "$jobpid" ] && kill -9 $(tagged "$tag") 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "losses_test $case_: $*"; [ -f "$tmp/out" ] && tail -60 "$tmp/out"; exit 1; }

. "$here/../rigs/trainer_lib.sh"
has() { grep -q -- "$2" "$1" || { cp "$1" "$tmp/out"; fail "no line '$2'"; }; }
rdig() { sed -n 's/.*records: result digest=\([0-9a-f]*\) ids=1000$/\1/p' "$1"; }
digest() { grep -o 'model_digest=[0-9a-f]*' "$1"; }

# one out expect args...: one job through run_job.sh
one() {
    o=$1 want=$2
    shift 2
    "$here/../rigs/run_job.sh" "$want" 120 "$run" "$@" >"$o" 2>&1 || { cp "$o" "$tmp/out"; fail "job: $*"; }
}

# resumed_once out: rally-run resumed the job once, and it ended well
resumed_once() {
    has "$1" "^rally-run: auto-resume: restarting the whole job from .*/snap-[0-9]* (checkpoint version [0-9]*, verified; job restart 1 of 3)$"
    has "$1" "^rally-run: summary: .* job-restarts=1"
    [ "$(grep -c '^rally-run: auto-resume: restarting' "$1")" -eq 1 ] ||
        { cp "$1" "$tmp/out"; fail "more than one resume"; }
}

case $case_ in
rank0_snapshot)
    one "$tmp/plain" 0 -n 4 "$rec" 1000 30
    one "$tmp/a" 0 -n 4 --min-workers 2 --max-restarts 0 --snapshot-dir "$tmp/s" \
        --snapshot-every 5 --keep-snapshots --snapshot-keep 20 "$rec" 1000 30 rally_mock=0,7,0,0
    cp "$tmp/a" "$tmp/out"
    has "$tmp/a" "^rally-run: rank 0 lost for good: going on with 3 workers from version 7$"
    has "$tmp/a" "^\[1\] rally: rank 0: snapshot: committed .*/snap-00000010 (checkpoint version 10)$"
    "$build/rally-snapshot" show "$tmp/s/records_mock/snap-00000010" >"$tmp/show" ||
        fail "rally-snapshot show snap-10"
    grep -q "^world size *3$" "$tmp/show" || { cat "$tmp/show"; fail "snap-10 is not of 3"; }
    [ -n "$(rdig "$tmp/plain")" ] && [ "$(rdig "$tmp/a")" = "$(rdig "$tmp/plain")" ] ||
        fail "digest $(rdig "$tmp/a"), without the loss $(rdig "$tmp/plain")"
    ;;
rank0_signals)
    RALLY_TEST_TAG=$tag timeout -k 5 120 "$run" -n 4 --min-workers 2 --max-restarts 0 \
        --snapshot-dir "$tmp/s" --grace-ms 60000 "$rec" 1000 100000 pause=20 rally_mock=0,3,0,0 \
        >"$tmp/out" 2>&1 &
    jobpid=$!
    wait_line "$tmp/out" '^rally-run: rank 0 lost for good: going on with 3 workers' "the loss" 600 0.1
    launcher=$(pgrep -o -P "$jobpid" -x rally-run)
    [ -n "$launcher" ] || fail "no rally-run under $jobpid"
    kill -USR1 "$launcher"
    wait_line "$tmp/out" '^\[1\] rally: rank 0: snapshot: committed .*/snap-[0-9]* (checkpoint version [0-9]*)$' \
        "the snapshot SIGUSR1 asked for" 300 0.1
    kill -TERM "$launcher"
    wait "$jobpid"
    rc=$?
    jobpid=
    no_leftovers "$tag"
    [ "$rc" -eq 5 ] || fail "exit status $rc after SIGTERM, expected 5 (preempted)"
    has "$tmp/out" "^rally-run: preempted by signal 15 (Terminated) after .*/snap-[0-9]* was committed"
    ;;
auto_resume_local)
    one "$tmp/plain" 0 -n 4 "$rec" 1000 30
    one "$tmp/a" 0 -n 4 --max-restarts 1 --snapshot-dir "$tmp/s" --snapshot-every 2 --auto-resume \
        "$rec" 1000 30 rally_local_replica=1 rally_mock=1,5,0,0,op,g rally_mock=2,5,0,0,op,g
    cp "$tmp/a" "$tmp/out"
    has "$tmp/a" "cannot recover: the local models of ranks [0-9, ]* are lost"
    resumed_once "$tmp/a"
    # the resumed job passes version 5 again: the points fired once, before
    ! sed -n '/auto-resume: restarting/,$p' "$tmp/a" | grep -q 'rally mock: killing' ||
        fail "the kill points fired again after the resume"
    [ -n "$(rdig "$tmp/plain")" ] && [ "$(rdig "$tmp/a")" = "$(rdig "$tmp/plain")" ] ||
        fail "digest $(rdig "$tmp/a"), without the loss $(rdig "$tmp/plain")"
    ;;
auto_resume_records)
    one "$tmp/plain" 0 -n 4 "$rec" 1000 30
    one "$tmp/a" 0 -n 4 --min-workers 2 --max-restarts 0 --snapshot-dir "$tmp/s" --snapshot-every 2 \
        --auto-resume "$rec" 1000 30 rally_local_replica=1 rally_mock=1,5,0,0,op,g \
        rally_mock=2,5,0,0,op,g
    cp "$tmp/a" "$tmp/out"
    has "$tmp/a" "cannot go on with 2 workers: the local-model records of old rank 1 are lost"
    resumed_once "$tmp/a"
    [ -n "$(rdig "$tmp/plain")" ] && [ "$(rdig "$tmp/a")" = "$(rdig "$tmp/plain")" ] ||
        fail "digest $(rdig "$tmp/a"), without the loss $(rdig "$tmp/plain")"
    ;;
auto_resume_piece)
    one "$tmp/plain" 0 -n 8 "$build/tests/recover" 131072 5 rally_hd_threshold_bytes=0
    one "$tmp/a" 0 -n 8 --max-restarts 1 --snapshot-dir "$tmp/s" --snapshot-every 1 --auto-resume \
        "$build/tests/recover_mock" 131072 5 rally_hd_threshold_bytes=0 \
        rally_mock=3,3,5,0,op,lost rally_mock=4,3,5,0,op,lost
    cp "$tmp/a" "$tmp/out"
    has "$tmp/a" "is lost in part (piece 4 of 8, kept by ranks 3, 4, all of which died"
    resumed_once "$tmp/a"
    [ -n "$(digest "$tmp/plain")" ] && [ "$(digest "$tmp/a")" = "$(digest "$tmp/plain")" ] ||
        fail "$(digest "$tmp/a"), without the loss $(digest "$tmp/plain")"
    ;;
auto_resume_opaque)
    one "$tmp/plain" 0 -n 4 "$build/tests/recover" 2000 8 local
    one "$tmp/a" 0 -n 4 --min-workers 2 --max-restarts 0 --snapshot-dir "$tmp/s" --snapshot-every 2 \
        --auto-resume "$build/tests/recover_mock" 2000 8 local rally_mock=1,3,5,0
    cp "$tmp/a" "$tmp/out"
    has "$tmp/a" "cannot go on with 3 workers: the job checkpoints local models as opaque bytes"
    resumed_once "$tmp/a"
    [ -n "$(digest "$tmp/plain")" ] && [ "$(digest "$tmp/a")" = "$(digest "$tmp/plain")" ] ||
        fail "$(digest "$tmp/a"), without the loss $(digest "$tmp/plain")"
    ;;
auto_resume_not_a_loss)
    one "$tmp/a" 3 -n 4 --snapshot-dir "$tmp/s" --snapshot-every 2 --auto-resume "$rec" 1000 30 \
        rally_verify_every=1 rally_mock=2,5,0,0,flip
    cp "$tmp/a" "$tmp/out"
    has "$tmp/a" "rank 2's result of allreduce"
    ! grep -q 'auto-resume: restarting' "$tmp/a" || fail "a failure that is no loss was resumed"
    ;;
*) fail "unknown case" ;;
esac
echo "losses_test $case_: ok"
