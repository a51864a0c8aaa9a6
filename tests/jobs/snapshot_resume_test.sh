#!/bin/sh
# snapshot_resume_test.sh CASE BUILD_DIR — durable snapshots of a real job
# (rally-run --snapshot-dir, rally-kmeans), end to end.  BUILD_DIR holds
# rally-run, rally-datagen, rally-kmeans, rally-kmeans-mock, rally-snapshot.
# Every job is bounded in time and must leave no process behind.
#   kill9     the user story: rally-run -n 4 --snapshot-dir D --snapshot-every 2
#             rally-kmeans ...; kill -9 of the launcher and every worker at once
#             after a snapshot was committed; rally-run ... --resume latest
#             continues from it and the result: line is bit-identical to an
#             uninterrupted run; the successful run then removes its snapshots
#   rfc       the XGBoost-Spark RFC's stale-checkpoint scenario, literally:
#             train (k = 6, snapshots kept), train again with new parameters
#             (k = 5) in the same directory: refused without --overwrite,
#             naming the snapshots; with --resume latest refused naming both
#             configurations; with --overwrite it trains from scratch (the
#             digest of a plain k = 5 run, every iteration run, nothing resumed)
#   lock      a second launcher on a job directory in use is refused, naming
#             the run that holds it
#   death     workers die (librally_mock; rank 0 too, one inside a checkpoint)
#             while snapshots are taken every version: the job recovers, the
#             digest is the plain run's, every snapshot kept verifies, and the
#             newest resumes to the same digest
#   void      a rank that dies first voids that snapshot: rank 2 dies after
#             the commit that took version 4's snapshot and before the ranks
#             reported it; restarted, it cannot vouch for its part, so
#             version 4 is not committed (logged), the next ones are, and
#             the model is the plain run's
#   write_error  a snapshot that cannot be written (its directory is a symbolic
#             link) is void and logged, the previous stays the newest, the job
#             goes on to the same digest; with --snapshot-required it fails
#   local     local models: each rank's file, the whole job killed and resumed,
#             a worker death after resuming recovers from the snapshot's
#             local models (replicas), the digest is the plain run's; another
#             world size is refused naming both
#   usr1      SIGUSR1 to rally-run: rank 0 takes a snapshot at its next commit
#             and prints its path; it verifies; the model is unchanged
#   request   rally-snapshot request DIR asks the running job (the launcher
#             holding DIR's lock) for a snapshot and prints its path once
#             committed: that snapshot, which verifies; with no job running
#             it is refused, saying so
#   auto      --auto-resume (one summary line counting every attempt): a job
#             that cannot recover in memory (--max-restarts
#             0, a worker killed) is restarted whole from its newest snapshot
#             and ends with the plain run's digest; a failure that comes back
#             every time stops after --max-job-restarts
#   seeded    the whole job kill -9'ed at seeded random moments (three times,
#             SNAP_RESUME_SEED), resumed from latest each time (or started
#             over when no snapshot was complete yet): the final digest is the
#             uninterrupted run's
#   preempt   SIGTERM to rally-run (a preemption) at iteration 5: a snapshot of
#             the next checkpoint, exit 5 naming it, --resume latest gives
#             the uninterrupted digest; no commit within --grace-ms: 143
#   preempt_periodic  the same with a snapshot every 2 versions, all kept: the
#             SIGTERM comes once version 4's is committed, and the snapshot
#             that ends the job is newer than every one there at the signal
#             (not an older periodic one); --resume latest gives the digest
#   owner     a job that owns its run (no rally-run snapshot flags): rank 0
#             restarted keeps the run's name and lock; a fresh start over
#             its snapshots is refused
#   every_ms  --snapshot-every-ms T: consecutive snapshots are T apart, not
#             two checkpoints in a row
#   every_ms_rule  --snapshot-every-ms T with iterations longer than T:
#             every checkpoint begins T ms or more after the snapshot before
#             it, so docs/config.md's rule takes every version, 1 to the last
#             (not every other one)
#   final     --snapshot-final: only the last version is snapshotted, it is
#             kept after success, and resuming it gives the finished model
#   busy      --snapshot-busy skip: writes outlast iterations, requests are
#             skipped and logged, reports retried, workers (rank 0 too) die
#             meanwhile: the model is unchanged and every committed snapshot
#             verifies
#   input     the manifest keeps the partitioning scheme and every rank's
#             input fingerprint (rally_set_input); the same file changed in
#             place: --resume latest refused naming the rank and both
#             fingerprints, before a result; with --force it resumes
#   tier_dir, tier_s3  two tiers (--snapshot-copy, a directory / an S3 bucket
#             on the Swift rig, tests/rigs/swift_rig.sh): each committed snapshot
#             is copied in the background and verified there; the whole
#             job killed after three copies, the host's snapshot directory
#             deleted: --resume latest takes the second tier's newest, says
#             so, and the digest is the plain run's; retention keeps 2 there
#             too; both tiers cleaned after success.  A copy that
#             cannot be made is logged and tried again, the job ends with
#             the plain digest; with --snapshot-required it fails, naming it
#             (tier_dir); a bucket that does not exist is refused at the
#             start (tier_s3)
#   resume_checks  --resume of a damaged snapshot is refused before any worker
#             starts, naming the file (for latest, also the newest older one
#             that verifies and the command that takes it); a global-only snapshot of -n 4 resumes
#             on -n 2 into a new directory, with a note that the result is
#             not bit-identical
set -u
case_=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
run=$build/rally-run km=$build/rally-kmeans mock=$build/rally-kmeans-mock
snap=$build/rally-snapshot
tmp=$(mktemp -d)
tag="snapresume-$$"
export RALLY_TEST_TAG="$tag"
# rally processes of this test still running (this shell carries the tag too)
ours() {
    for p in $(grep -l "RALLY_TEST_TAG=$tag" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do
        case $(cat "/proc/$p/comm" 2>/dev/null) in rally*) echo "$p" ;; esac
    done
}
cleanup() {
    left=$(ours)
    [ -n "$left" ] && kill -9 $left 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "snapshot_resume_test $case_: $*"; [ -f "$tmp/out" ] && tail -40 "$tmp/out"; exit 1; }

data=$tmp/d.csv
"$build/rally-datagen" --rows 20000 --features 8 --centers 6 --spread 2 --seed 7 --format csv \
    -o "$data" >/dev/null 2>&1 || fail "rally-datagen failed"
KM="--data $data --data-opt csv_label=0 -k 6"
D=$tmp/snaps

job() { # out-file args... : a job that must succeed
    o=$1
    shift
    timeout -k 5 60 "$run" "$@" >"$o" 2>&1 || { cp "$o" "$tmp/out"; fail "job failed: $*"; }
}
digest() { grep -o 'model_digest=[0-9a-f]*' "$1"; }
wait_line() { # pattern what: until it shows in $tmp/out (30 s at most)
    i=0
    until grep -q "$1" "$tmp/out"; do
        i=$((i + 1))
        [ $i -gt 600 ] && fail "$2"
        sleep 0.05
    done
}
launcher_of() { # the rally-run under timeout's pid $1 (itself when it has none)
    pgrep -P "$1" -x rally-run || echo "$1"
}
nsnaps() { ls -d "$1"/snap-* 2>/dev/null | wc -l; }
no_orphans() {
    sleep 0.3
    left=$(ours)
    [ -z "$left" ] || { kill -9 $left 2>/dev/null; fail "processes left behind: $left"; }
}

case $case_ in
kill9)
    # 30 versions: the kill after version 4's commit lands well before the end
    KM="$KM --iters 30 --fixed-iters"
    job "$tmp/plain" -n 4 "$km" $KM --pause-ms 60
    : >"$tmp/out" # an earlier job's lines must not satisfy wait_line
    timeout -k 5 60 "$run" -n 4 --snapshot-dir "$D" --snapshot-every 2 "$km" $KM --pause-ms 60 \
        >"$tmp/out" 2>&1 &
    launcher=$!
    wait_line 'snapshot: committed .*snap-00000004' "no snapshot of version 4 was committed"
    # the launcher and every worker at once, mid-run
    workers=$(sed -n 's/^\[[0-9]\] shard [0-9] fingerprint .* pid \([0-9]*\)$/\1/p' "$tmp/out")
    rl=$(launcher_of "$launcher")
    kill -9 $rl $workers 2>/dev/null
    wait "$launcher" 2>/dev/null
    grep -q "^\[0\] result:" "$tmp/out" && fail "the job finished before it was killed"
    no_orphans
    cat "$tmp/out" | grep -v iteration
    n=$(nsnaps "$D/rally-kmeans")
    [ "$n" -ge 1 ] || fail "the killed job left no snapshot"
    "$snap" ls "$D/rally-kmeans" || fail "rally-snapshot ls failed"
    # a fresh start into it is refused, naming the snapshots
    timeout -k 5 60 "$run" -n 4 --snapshot-dir "$D" --snapshot-every 2 "$km" $KM --pause-ms 60 \
        >"$tmp/out" 2>&1 && fail "a fresh start into a directory with snapshots was not refused"
    # (whichever versions the kill left: on a loaded machine the job may be
    # well past version 4 by the time the kill lands)
    grep -qE "already holds .*snap-[0-9]{8}" "$tmp/out" || fail "the refusal names no snapshot"
    job "$tmp/resumed" -n 4 --snapshot-dir "$D" --snapshot-every 2 --resume latest "$km" $KM \
        --pause-ms 60
    cat "$tmp/resumed" | grep -v iteration
    from=$(sed -n 's/^rally-run: resuming from .*snap-\([0-9]\{8\}\).* verified.*/\1/p' "$tmp/resumed")
    [ -n "$from" ] || fail "rally-run did not say what it resumed from"
    [ "$(expr "$from" + 0)" -ge 4 ] || fail "resumed from version $from, before the 4 committed"
    grep -q "^\[0\] iteration 0 " "$tmp/resumed" && fail "the resumed job started from scratch"
    [ "$(digest "$tmp/resumed")" = "$(digest "$tmp/plain")" ] ||
        fail "digest $(digest "$tmp/resumed") after resume, want $(digest "$tmp/plain")"
    # the successful run removed its own snapshots, not the killed run's
    grep -q "removed its [0-9]* snapshot" "$tmp/resumed" || fail "the run did not clean up"
    "$snap" ls "$D/rally-kmeans"
    no_orphans
    ;;
rfc)
    job "$tmp/first" -n 2 --snapshot-dir "$D" --snapshot-every 1 --keep-snapshots "$km" $KM
    [ "$(nsnaps "$D/rally-kmeans")" -eq 2 ] || fail "want the 2 newest snapshots kept"
    K5="--data $data --data-opt csv_label=0 -k 5"
    job "$tmp/plain5" -n 2 "$km" $K5
    # again with new parameters, same directory: refused, naming the snapshots
    timeout -k 5 60 "$run" -n 2 --snapshot-dir "$D" --snapshot-every 1 "$km" $K5 >"$tmp/out" 2>&1 &&
        fail "a fresh start over the first run's snapshots was not refused"
    cat "$tmp/out"
    grep -q "already holds 2 snapshots: snap-" "$tmp/out" || fail "the refusal names no snapshot"
    grep -q "result:" "$tmp/out" && fail "a worker ran although the start was refused"
    # resuming the first run's model with the new parameters: refused, both named
    timeout -k 5 60 "$run" -n 2 --snapshot-dir "$D" --resume latest "$km" $K5 >"$tmp/out" 2>&1 &&
        fail "resuming with another configuration was not refused"
    cat "$tmp/out"
    grep -q "configuration is \".*-k 6\" (xxh3-64 [0-9a-f]*), this job's is \".*-k 5\"" "$tmp/out" ||
        fail "the refusal does not name both configurations"
    grep -q "result:" "$tmp/out" && fail "a refused resume produced a result"
    # --overwrite: a fresh run that trains from scratch, not "too fast"
    job "$tmp/second" -n 2 --snapshot-dir "$D" --snapshot-every 1 --overwrite "$km" $K5
    grep -q "resuming" "$tmp/second" && fail "the second run resumed something"
    [ "$(grep -c '^\[0\] iteration ' "$tmp/second")" -eq "$(grep -c '^\[0\] iteration ' "$tmp/plain5")" ] ||
        fail "the second run did not run every iteration"
    [ "$(digest "$tmp/second")" = "$(digest "$tmp/plain5")" ] ||
        fail "digest $(digest "$tmp/second"), want the plain k=5 run's $(digest "$tmp/plain5")"
    # it cleaned up its own snapshots and left the first run's
    [ "$(nsnaps "$D/rally-kmeans")" -eq 2 ] || fail "the first run's snapshots were touched"
    for s in "$D"/rally-kmeans/snap-*; do
        "$snap" show "$s" | grep -q -- "-k 6" || fail "$s is not the first run's"
    done
    ;;
lock)
    timeout -k 5 60 "$run" -n 2 --snapshot-dir "$D" --snapshot-every 1 "$km" $KM --pause-ms 100 \
        >"$tmp/a" 2>&1 &
    first=$!
    i=0
    until grep -q '^\[0\] iteration 1 ' "$tmp/a"; do
        i=$((i + 1))
        [ $i -gt 600 ] && fail "the first job never got going"
        sleep 0.05
    done
    timeout -k 5 60 "$run" -n 2 --snapshot-dir "$D" --overwrite "$km" $KM >"$tmp/out" 2>&1 &&
        fail "a second launcher took a job directory in use"
    cat "$tmp/out"
    grep -q "rally-run: .*run [0-9a-f-]\{36\}" "$tmp/out" || fail "the refusal names no run"
    wait "$first" || { cp "$tmp/a" "$tmp/out"; fail "the first job failed"; }
    no_orphans
    ;;
death)
    job "$tmp/plain" -n 4 "$km" $KM
    job "$tmp/out" -n 4 --snapshot-dir "$D" --snapshot-every 1 --snapshot-keep 3 --keep-snapshots \
        "$mock" $KM rally_mock=3,3,1,0,checkpoint rally_mock=2,4,0,0 rally_mock=0,5,1,0 \
        rally_mock=1,6,1,0
    cat "$tmp/out" | grep -v iteration
    grep -q "deaths=4 recovered=4 " "$tmp/out" || fail "want four deaths, all recovered"
    [ "$(digest "$tmp/out")" = "$(digest "$tmp/plain")" ] || fail "digest differs after deaths"
    [ "$(nsnaps "$D/rally-kmeans-mock")" -eq 3 ] || fail "want 3 snapshots kept"
    for s in "$D"/rally-kmeans-mock/snap-*; do
        "$snap" verify "$s" >/dev/null || fail "$s does not verify"
    done
    # the newest resumes to the same model (the configuration has no rally_mock)
    job "$tmp/resumed" -n 4 --snapshot-dir "$D" --job rally-kmeans-mock --resume latest "$km" $KM
    [ "$(digest "$tmp/resumed")" = "$(digest "$tmp/plain")" ] || fail "digest differs after resume"
    no_orphans
    ;;
input)
    job "$tmp/first" -n 2 --snapshot-dir "$D" --snapshot-every 2 --keep-snapshots "$km" $KM
    s=$(ls -d "$D"/rally-kmeans/snap-* | tail -1)
    "$snap" show "$s" >"$tmp/show" || fail "rally-snapshot show failed"
    grep -q "^partitioning *range$" "$tmp/show" || { cat "$tmp/show"; fail "no partitioning kept"; }
    for r in 0 1; do
        fp=$(sed -n "s/^\[$r\] shard $r fingerprint \([0-9a-f]*\) .*/\1/p" "$tmp/first")
        grep -q "input $fp" "$tmp/show" || { cat "$tmp/show"; fail "rank $r's fingerprint $fp not kept"; }
    done
    # the same path, other bytes (another seed): every shard's fingerprint changes
    "$build/rally-datagen" --rows 20000 --features 8 --centers 6 --spread 2 --seed 8 --format csv \
        -o "$data" >/dev/null 2>&1 || fail "rally-datagen failed"
    timeout -k 5 60 "$run" -n 2 --snapshot-dir "$D" --resume latest "$km" $KM >"$tmp/out" 2>&1 &&
        fail "a resume over changed input was not refused"
    grep -v iteration "$tmp/out" | head -5
    grep -q "rank [01]'s input fingerprint was [0-9a-f]\{16\} in the snapshot and is [0-9a-f]\{16\} now" \
        "$tmp/out" || fail "the refusal names no fingerprints"
    grep -q "result:" "$tmp/out" && fail "a refused resume produced a result"
    job "$tmp/forced" -n 2 --snapshot-dir "$D" --resume latest --force "$km" $KM
    grep -q "^\[0\] result:" "$tmp/forced" || fail "--force did not resume"
    no_orphans
    ;;
resume_checks)
    job "$tmp/plain" -n 4 "$km" $KM
    job "$tmp/first" -n 4 --snapshot-dir "$D" --snapshot-every 3 --keep-snapshots "$km" $KM
    s=$(ls -d "$D"/rally-kmeans/snap-* | tail -1)
    cp -r "$s" "$tmp/copy"
    # a flipped byte: refused before any worker starts
    printf 'X' | dd of="$tmp/copy/global.bin" bs=1 seek=80 conv=notrunc 2>/dev/null
    timeout -k 5 60 "$run" -n 4 --resume "$tmp/copy" "$km" $KM >"$tmp/out" 2>&1 &&
        fail "a damaged snapshot was resumed"
    cat "$tmp/out"
    grep -q "global.bin" "$tmp/out" || fail "the refusal does not name the damaged file"
    grep -q "shard" "$tmp/out" && fail "a worker started although the snapshot is damaged"
    # a worker without rally-run (rank 0 of 1, rally_resume) checks what it reads itself
    timeout -k 5 60 "$km" $KM rally_resume="$tmp/copy" >"$tmp/out" 2>&1 &&
        fail "a worker resumed a damaged snapshot"
    grep -q "global.bin's checksum is" "$tmp/out" || { cat "$tmp/out"; fail "the worker did not name the damage"; }
    grep -q "result:" "$tmp/out" && fail "a damaged snapshot gave a result"
    # a global-only snapshot resumes on another world size, with a note
    job "$tmp/two" -n 2 --resume "$s" --snapshot-dir "$tmp/new" "$km" $KM
    cat "$tmp/two" | grep -v iteration
    grep -q "note: .*not bit-identical" "$tmp/two" || fail "no note about bit-identity"
    grep -q "result:" "$tmp/two" || fail "no result"
    # the original job directory was not touched by the new job
    [ ! -e "$tmp/new/rally-kmeans" ] || [ "$(nsnaps "$tmp/new/rally-kmeans")" -eq 0 ] ||
        fail "the new job kept snapshots after success"
    # the newest damaged: --resume latest refuses it and names the older one
    # that verifies, with the command that takes it, which then works
    older=$(ls -d "$D"/rally-kmeans/snap-* | tail -2 | head -1)
    printf 'X' | dd of="$s/global.bin" bs=1 seek=80 conv=notrunc 2>/dev/null
    timeout -k 5 60 "$run" -n 4 --snapshot-dir "$D" --resume latest "$km" $KM >"$tmp/out" 2>&1 &&
        fail "a damaged newest snapshot was resumed"
    cat "$tmp/out"
    grep -q "before it that verifies is $older (checkpoint version [0-9]*): --resume $older takes it" \
        "$tmp/out" || fail "the refusal does not name the older snapshot and how to take it"
    # ... and so does a job that owns its run (a worker alone)
    timeout -k 5 60 "$km" $KM rally_snapshot_dir="$D" rally_resume=latest >"$tmp/out" 2>&1 &&
        fail "a worker resumed a damaged newest snapshot"
    grep -q "before it that verifies is $older (checkpoint version [0-9]*): rally_resume=$older takes it" \
        "$tmp/out" || { cat "$tmp/out"; fail "the worker does not name the older snapshot"; }
    job "$tmp/older" -n 4 --snapshot-dir "$D" --resume "$older" "$km" $KM
    [ "$(digest "$tmp/older")" = "$(digest "$tmp/plain")" ] || fail "resuming the older one differs"
    ;;
void)
    job "$tmp/plain" -n 4 "$km" $KM
    job "$tmp/out" -n 4 --snapshot-dir "$D" --snapshot-every 2 --keep-snapshots --snapshot-keep 50 \
        "$mock" $KM rally_mock=2,4,0,0
    grep -v iteration "$tmp/out"
    grep -q "deaths=1 recovered=1 " "$tmp/out" || fail "want one death, recovered"
    grep -q "rank 2: snapshot: could not write its part of the snapshot: this worker died and was restarted before the snapshot of version 4 was reported" \
        "$tmp/out" || fail "rank 2 did not say why its part is void"
    grep -q "version 4 void: rank 2 died before it was reported" \
        "$tmp/out" || fail "rank 0 did not log the void snapshot"
    [ -f "$D/rally-kmeans-mock/snap-00000004/MANIFEST.json" ] && fail "the void snapshot was committed"
    for v in 00000002 00000006; do
        "$snap" verify "$D/rally-kmeans-mock/snap-$v" >/dev/null || fail "snap-$v does not verify"
    done
    [ "$(digest "$tmp/out")" = "$(digest "$tmp/plain")" ] || fail "the model differs"
    no_orphans
    ;;
write_error)
    # snap-00000004 is a symbolic link: rank 0 cannot write that snapshot
    job "$tmp/plain" -n 2 "$km" $KM
    mkdir -p "$D/rally-kmeans" "$tmp/elsewhere"
    ln -s "$tmp/elsewhere" "$D/rally-kmeans/snap-00000004"
    job "$tmp/out" -n 2 --snapshot-dir "$D" --snapshot-every 2 --overwrite --keep-snapshots "$km" $KM
    cat "$tmp/out" | grep -v iteration
    grep -q "version 4 not committed, the previous snapshot stays the newest" "$tmp/out" ||
        fail "the failed snapshot was not reported"
    [ "$(digest "$tmp/out")" = "$(digest "$tmp/plain")" ] || fail "the job did not go on unharmed"
    [ -z "$(ls -A "$tmp/elsewhere")" ] || fail "the writer followed the link"
    "$snap" verify "$D/rally-kmeans/snap-00000006" >/dev/null || fail "version 6 does not verify"
    # --snapshot-required: the same failure fails the job
    mkdir -p "$D/req"
    ln -s "$tmp/elsewhere" "$D/req/snap-00000004"
    timeout -k 5 60 "$run" -n 2 --snapshot-dir "$D" --job req --snapshot-every 2 --overwrite \
        --snapshot-required "$km" $KM >"$tmp/out" 2>&1 && fail "--snapshot-required did not fail the job"
    cat "$tmp/out" | grep -v iteration
    grep -q "rally_snapshot_required: rank 0 could not write its part" "$tmp/out" ||
        fail "the failure does not say why"
    grep -q "result:" "$tmp/out" && fail "the job finished although its snapshot failed"
    no_orphans
    ;;
local)
    # local models (tests/progs/recover.c "local"): each rank writes its own
    # file; the whole job killed after a snapshot, then resumed; a worker of
    # the resumed job dies and recovers from the local models the snapshot
    # gave back (replicas included)
    rec=$build/tests/recover recmock=$build/tests/recover_mock
    job "$tmp/plain" -n 4 "$rec" 2000 14 local
    : >"$tmp/out" # an earlier job's lines must not satisfy wait_line
    timeout -k 5 60 "$run" -n 4 --snapshot-dir "$D" --job loc --snapshot-every 3 "$rec" 2000 14 \
        local 150 >"$tmp/out" 2>&1 &
    launcher=$!
    wait_line 'snapshot: committed .*snap-00000006' "no snapshot of version 6 was committed"
    workers=$(sed -n 's/^\[[0-9]\] pid [0-9] \([0-9]*\)$/\1/p' "$tmp/out")
    rl=$(launcher_of "$launcher")
    kill -9 $rl $workers 2>/dev/null
    wait "$launcher" 2>/dev/null
    grep -q "result:" "$tmp/out" && fail "the job finished before it was killed"
    no_orphans
    # the newest complete one: a write the kill cut short stays incomplete
    s=$D/loc/$("$snap" ls "$D/loc" | sed -n 's/^  \* \(snap-[0-9]*\) .*/\1/p')
    [ -f "$s/local-0003.bin" ] || fail "no local model files in $s"
    "$snap" verify "$s" >/dev/null || fail "$s does not verify"
    job "$tmp/resumed" -n 4 --snapshot-dir "$D" --job loc --resume latest "$recmock" 2000 14 local \
        rally_mock=2,10,1,0
    cat "$tmp/resumed" | grep -v "pid\|prepare"
    grep -q "deaths=1 recovered=1 " "$tmp/resumed" || fail "want one death, recovered"
    [ "$(digest "$tmp/resumed")" = "$(digest "$tmp/plain")" ] ||
        fail "digest $(digest "$tmp/resumed") after resume, want $(digest "$tmp/plain")"
    # another world size cannot take local models: refused before any worker starts
    timeout -k 5 60 "$run" -n 3 --resume "$s" "$rec" 2000 14 local >"$tmp/out" 2>&1 &&
        fail "local models were resumed on another world size"
    grep -q "taken by 4 workers .* this job has 3" "$tmp/out" || fail "the refusal names no sizes"
    no_orphans
    ;;
usr1)
    # no rhythm: the one snapshot is the one asked for; it is kept (--keep-snapshots)
    job "$tmp/plain" -n 2 "$km" $KM
    : >"$tmp/out" # an earlier job's lines must not satisfy wait_line
    timeout -k 5 60 "$run" -n 2 --snapshot-dir "$D" --keep-snapshots "$km" $KM --pause-ms 150 \
        >"$tmp/out" 2>&1 &
    launcher=$!
    wait_line '^\[0\] iteration 2 ' "iteration 2 never came"
    rl=$(launcher_of "$launcher")
    kill -USR1 "$rl"
    wait "$launcher" || fail "the job failed after SIGUSR1"
    cat "$tmp/out" | grep -v iteration
    grep -q "rally-run: SIGUSR1: asked rank 0 for a snapshot" "$tmp/out" || fail "rally-run said nothing"
    path=$(sed -n 's/^\[0\] rally: rank 0: snapshot: committed \(.*\) (checkpoint version [0-9]*)$/\1/p' "$tmp/out")
    [ -n "$path" ] || fail "no snapshot was committed"
    [ "$(nsnaps "$D/rally-kmeans")" -eq 1 ] || fail "want exactly the one snapshot asked for"
    "$snap" verify "$path" >/dev/null || fail "$path does not verify"
    [ "$(digest "$tmp/out")" = "$(digest "$tmp/plain")" ] || fail "the digest changed"
    no_orphans
    ;;
request)
    job "$tmp/plain" -n 2 "$km" $KM
    "$snap" request "$D/rally-kmeans" >"$tmp/req" 2>&1 && fail "a request with no job running succeeded"
    cat "$tmp/req"
    grep -q "no job runs there" "$tmp/req" || fail "the refusal does not say no job runs there"
    : >"$tmp/out" # an earlier job's lines must not satisfy wait_line
    timeout -k 5 60 "$run" -n 2 --snapshot-dir "$D" --keep-snapshots "$km" $KM --pause-ms 150 \
        >"$tmp/out" 2>&1 &
    launcher=$!
    wait_line '^\[0\] iteration 2 ' "iteration 2 never came"
    # the job keeps going meanwhile: no pause is needed for the request
    "$snap" request "$D/rally-kmeans" --timeout-ms 60000 >"$tmp/req" 2>"$tmp/req.err" ||
        { cat "$tmp/req.err"; fail "the request failed"; }
    cat "$tmp/req.err" "$tmp/req"
    grep -q "asked run [0-9a-f-]\{36\} (rally-run, pid [0-9]*) for a snapshot" "$tmp/req.err" ||
        fail "the request names no run"
    got=$(cat "$tmp/req")
    wait "$launcher" || fail "the job failed after the request"
    grep -v iteration "$tmp/out"
    path=$(sed -n 's/^\[0\] rally: rank 0: snapshot: committed \(.*\) (checkpoint version [0-9]*)$/\1/p' "$tmp/out")
    [ -n "$path" ] || fail "no snapshot was committed"
    [ "$(nsnaps "$D/rally-kmeans")" -eq 1 ] || fail "want exactly the one snapshot asked for"
    [ "$(basename "$got")" = "$(basename "$path")" ] || fail "request printed $got, the job committed $path"
    "$snap" verify "$got" >/dev/null || fail "$got does not verify"
    [ "$(digest "$tmp/out")" = "$(digest "$tmp/plain")" ] || fail "the digest changed"
    no_orphans
    ;;
auto)
    # --max-restarts 0: the first worker death fails the job in memory; the
    # launcher restarts the whole job from this run's newest snapshot
    job "$tmp/plain" -n 4 "$km" $KM
    : >"$tmp/out" # an earlier job's lines must not satisfy wait_line
    timeout -k 5 60 "$run" -n 4 --max-restarts 0 --snapshot-dir "$D" --snapshot-every 2 \
        --auto-resume "$km" $KM --pause-ms 100 >"$tmp/out" 2>&1 &
    launcher=$!
    wait_line 'snapshot: committed .*snap-00000004' "no snapshot of version 4 was committed"
    victim=$(sed -n 's/^\[2\] shard 2 fingerprint .* pid \([0-9]*\)$/\1/p' "$tmp/out" | tail -1)
    kill -9 "$victim" || fail "no worker $victim to kill"
    wait "$launcher" || fail "the job failed although it could auto-resume"
    cat "$tmp/out" | grep -v iteration
    grep -q "auto-resume: restarting the whole job from .*snap-0000000[4-9] .*job restart 1 of 3" \
        "$tmp/out" || fail "no auto-resume"
    [ "$(digest "$tmp/out")" = "$(digest "$tmp/plain")" ] || fail "digest differs after auto-resume"
    [ "$(nsnaps "$D/rally-kmeans")" -eq 0 ] || fail "the successful run kept its snapshots"
    # one summary, the last line, counting both attempts
    [ "$(grep -c '^rally-run: summary:' "$tmp/out")" -eq 1 ] || fail "not one summary line"
    [ "$(tail -n 1 "$tmp/out")" = "rally-run: summary: deaths=1 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:0,2:1,3:0 job-restarts=1" ] ||
        fail "the last line is '$(tail -n 1 "$tmp/out")'"
    # a death that comes back every time: bounded by --max-job-restarts (a
    # point fires once in the run, its ndeath counting every attempt's
    # deaths: one point per attempt)
    timeout -k 5 60 "$run" -n 4 --max-restarts 0 --snapshot-dir "$D" --snapshot-every 2 \
        --auto-resume --max-job-restarts 2 "$mock" $KM rally_mock=2,5,0,0 rally_mock=2,5,0,1 \
        rally_mock=2,5,0,2 >"$tmp/out" 2>&1 &&
        fail "a job that always fails succeeded"
    grep -v iteration "$tmp/out"
    [ "$(grep -c 'auto-resume: restarting the whole job' "$tmp/out")" -eq 2 ] ||
        fail "want exactly 2 job restarts"
    grep -q "auto-resume: 2 job restarts spent" "$tmp/out" || fail "the bound was not reported"
    [ "$(grep -c '^rally-run: summary:' "$tmp/out")" -eq 1 ] || fail "not one summary line"
    [ "$(tail -n 1 "$tmp/out")" = "rally-run: summary: deaths=3 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:0,2:3,3:0 job-restarts=2" ] ||
        fail "the last line is '$(tail -n 1 "$tmp/out")'"
    no_orphans
    ;;
seeded)
    # the whole job killed at seeded random moments, resumed each time, until
    # it finishes: the final model is the uninterrupted run's
    seed=${SNAP_RESUME_SEED:-20261130}
    job "$tmp/plain" -n 4 "$km" $KM
    round=0 done_=0
    while [ $done_ -eq 0 ]; do
        round=$((round + 1))
        [ $round -gt 12 ] && fail "12 rounds and the job never finished"
        if "$snap" ls "$D/rally-kmeans" 2>/dev/null | grep -q '^  \* '; then
            how="--resume latest"
        else
            how="--overwrite"
        fi
        ms=$(awk -v s="$seed" -v r="$round" 'BEGIN { srand(s + r); print 300 + int(rand() * 1500) }')
        timeout -k 5 60 "$run" -n 4 --snapshot-dir "$D" --snapshot-every 1 $how "$km" $KM \
            --pause-ms 250 >"$tmp/r$round" 2>&1 &
        launcher=$!
        sleep "$(awk -v m="$ms" 'BEGIN { print m / 1000 }')"
        workers=$(sed -n 's/^\[[0-9]\] shard [0-9] fingerprint .* pid \([0-9]*\)$/\1/p' "$tmp/r$round")
        rl=$(pgrep -P "$launcher" -x rally-run || true)
        [ $round -le 3 ] && kill -9 $rl $workers 2>/dev/null
        wait "$launcher" 2>/dev/null
        echo "round $round ($how): killed after ${ms} ms; $(grep -c 'snapshot: committed' "$tmp/r$round") snapshots committed"
        grep -q "^\[0\] result:" "$tmp/r$round" && done_=1
        no_orphans
    done
    [ "$(digest "$tmp/r$round")" = "$(digest "$tmp/plain")" ] ||
        { cp "$tmp/r$round" "$tmp/out"; fail "digest $(digest "$tmp/r$round"), want $(digest "$tmp/plain")"; }
    ;;
preempt)
    # SIGTERM to rally-run at iteration 5 with --snapshot-every 100 (so no
    # snapshot but the one asked for): rank 0 snapshots its next checkpoint,
    # rally-run stops the job once it is committed and exits 5, naming it;
    # --resume latest continues to the uninterrupted run's digest.  When the
    # commit cannot come within --grace-ms, the job stops without one (128+15).
    P="$KM --fixed-iters --iters 16 --pause-ms 100"
    job "$tmp/plain" -n 4 "$km" $P
    : >"$tmp/out" # an earlier job's lines must not satisfy wait_line
    timeout -k 5 60 "$run" -n 4 --snapshot-dir "$D" --snapshot-every 100 --grace-ms 20000 \
        "$km" $P >"$tmp/out" 2>&1 &
    launcher=$!
    wait_line '^\[0\] iteration 5 ' "the job never reached iteration 5"
    kill -TERM "$(launcher_of "$launcher")"
    wait "$launcher"
    st=$?
    grep -v iteration "$tmp/out"
    [ "$st" -eq 5 ] || fail "exit status $st after the preemption, want 5"
    grep -q "SIGTERM: asked rank 0 for a snapshot at its next checkpoint" "$tmp/out" ||
        fail "rally-run did not say it asked for a snapshot"
    grep -q "preempted by signal 15 (Terminated) after $D/rally-kmeans/snap-0000000[6-9] was committed" \
        "$tmp/out" || fail "the verdict does not name the snapshot"
    grep -q "^\[0\] result:" "$tmp/out" && fail "the job finished instead of stopping"
    no_orphans
    job "$tmp/resumed" -n 4 --snapshot-dir "$D" --resume latest "$km" $P
    grep -q "^\[0\] iteration [0-5] " "$tmp/resumed" && fail "the resumed job repeated iterations"
    [ "$(digest "$tmp/resumed")" = "$(digest "$tmp/plain")" ] ||
        fail "digest $(digest "$tmp/resumed") after resume, want $(digest "$tmp/plain")"
    # iterations of 3 s, a grace of 0.5 s: no commit in time, a plain stop
    : >"$tmp/out" # an earlier job's lines must not satisfy wait_line
    timeout -k 5 60 "$run" -n 2 --snapshot-dir "$tmp/d2" --grace-ms 500 "$km" $KM --pause-ms 3000 \
        >"$tmp/out" 2>&1 &
    launcher=$!
    wait_line '^\[0\] iteration 1 ' "the second job never started"
    kill -TERM "$(launcher_of "$launcher")"
    wait "$launcher"
    st=$?
    [ "$st" -eq 143 ] || { cat "$tmp/out"; fail "exit status $st without a snapshot in time, want 143"; }
    grep -q "no snapshot was committed within --grace-ms" "$tmp/out" || fail "no word of the grace"
    no_orphans
    ;;
preempt_periodic)
    P="$KM --fixed-iters --iters 16 --pause-ms 100"
    job "$tmp/plain" -n 4 "$km" $P
    : >"$tmp/out" # an earlier job's lines must not satisfy wait_line
    timeout -k 5 60 "$run" -n 4 --snapshot-dir "$D" --snapshot-every 2 --keep-snapshots \
        --snapshot-keep 100 --grace-ms 20000 "$km" $P >"$tmp/out" 2>&1 &
    launcher=$!
    wait_line 'snapshot: committed .*snap-00000004' "no snapshot of version 4 was committed"
    # the newest committed before the signal (more may commit before it lands)
    before=$(ls "$D"/rally-kmeans/snap-*/MANIFEST.json | sed 's|.*/snap-0*\([0-9]*\)/MANIFEST.json|\1|' |
        sort -n | tail -1)
    kill -TERM "$(launcher_of "$launcher")"
    wait "$launcher"
    st=$?
    grep -v iteration "$tmp/out"
    [ "$st" -eq 5 ] || fail "exit status $st after the preemption, want 5"
    v=$(sed -n "s|.*preempted by signal 15 (Terminated) after $D/rally-kmeans/snap-0*\([0-9]*\) was committed.*|\1|p" \
        "$tmp/out")
    [ -n "$v" ] || fail "the verdict does not name a snapshot"
    [ "$v" -gt "$before" ] ||
        fail "the verdict names version $v, not newer than version $before, there before the SIGTERM"
    grep -q "^\[0\] result:" "$tmp/out" && fail "the job finished instead of stopping"
    no_orphans
    job "$tmp/resumed" -n 4 --snapshot-dir "$D" --resume latest "$km" $P
    [ "$(digest "$tmp/resumed")" = "$(digest "$tmp/plain")" ] ||
        fail "digest $(digest "$tmp/resumed") after resume, want $(digest "$tmp/plain")"
    ;;
owner)
    # a job that owns its run (the snapshot settings as the program's own
    # arguments: rally-run names no run) when rank 0 dies and is restarted:
    # the new rank 0 is served the run's name its predecessor broadcast and
    # takes the lock again, so every snapshot is of that one run, and the
    # model is the plain run's
    rec=$build/tests/recover recmock=$build/tests/recover_mock
    job "$tmp/plain" -n 3 "$rec" 2000 8
    job "$tmp/out" -n 3 "$recmock" 2000 8 rally_snapshot_dir="$D" rally_snapshot_every=2 \
        rally_snapshot_job=own rally_keep_snapshots=1 rally_mock=0,3,0,0
    grep "snapshot\|summary" "$tmp/out"
    grep -q "deaths=1 recovered=1 " "$tmp/out" || fail "want rank 0's death, recovered"
    grep -q "could not take the job directory's lock again" "$tmp/out" && fail "the lock was lost"
    [ "$(digest "$tmp/out")" = "$(digest "$tmp/plain")" ] || fail "the model differs"
    runs=$("$snap" ls "$D/own" | awk '$2 ~ /^snap-/ || $1 ~ /^snap-/' | grep -c complete)
    [ "$runs" -ge 2 ] || fail "want 2 snapshots or more kept, have $runs"
    [ "$("$snap" ls "$D/own" | grep complete | awk '{print $(NF-1)}' | sort -u | wc -l)" -eq 1 ] ||
        fail "the snapshots are of more than one run"
    # after the job: the directory holds them, so a fresh start is refused
    timeout -k 5 60 "$run" -n 3 "$rec" 2000 8 rally_snapshot_dir="$D" rally_snapshot_job=own \
        >"$tmp/out" 2>&1 && fail "a fresh start over the kept snapshots was not refused"
    grep -q "rally_resume=latest, or start over with rally_overwrite=1" "$tmp/out" ||
        fail "the refusal does not say the ways on"
    no_orphans
    ;;
every_ms)
    # --snapshot-every-ms T: snapshots at least T apart (by their manifests'
    # creation times, with 0.3 T for the jitter of the iteration after
    # each), never two checkpoints in a row: 40 iterations of 100 ms, T = 1 s
    rec=$build/tests/recover
    job "$tmp/out" -n 2 --snapshot-dir "$D" --snapshot-every-ms 1000 --snapshot-keep 100 \
        --keep-snapshots "$rec" 2000 40 100
    grep "snapshot:" "$tmp/out"
    times=$(for s in "$D"/recover/snap-*; do
        sed -n 's/.*"created": *"[0-9-]*T\([0-9]*\):\([0-9]*\):\([0-9.]*\)Z".*/\1 \2 \3/p' \
            "$s/MANIFEST.json"
    done)
    echo "$times" | awk 'NF == 3 { t = $1 * 3600 + $2 * 60 + $3; if (n++) {
            d = t - p; printf "%.3f s after the one before\n", d; if (d < 0.7) bad = 1 }
            p = t } END { if (n < 2) { print "want 2 snapshots or more, have " n; bad = 1 }
            exit bad }' || fail "snapshots closer than --snapshot-every-ms allows"
    no_orphans
    ;;
every_ms_rule)
    # each iteration sleeps 300 ms before its checkpoint, so each checkpoint
    # begins at least 300 ms after the previous one was committed (and its
    # snapshot taken): with T = 100 ms every version is the first checkpoint
    # T ms or more after the snapshot before it
    rec=$build/tests/recover
    job "$tmp/out" -n 2 --snapshot-dir "$D" --snapshot-every-ms 100 --snapshot-keep 100 \
        --keep-snapshots "$rec" 2000 6 300
    grep "snapshot:" "$tmp/out"
    have=$(ls "$D/recover" | tr '\n' ' ')
    want=$(for v in 1 2 3 4 5 6; do printf 'snap-%08d ' $v; done)
    [ "$have" = "$want" ] || fail "want every version snapshotted ($want), have: $have"
    no_orphans
    ;;
final)
    # --snapshot-final, no rhythm: one snapshot, of the last version, kept;
    # resuming it gives the finished model back
    job "$tmp/out" -n 2 --snapshot-dir "$D" --snapshot-final "$km" $KM
    cat "$tmp/out" | grep -v iteration
    v=$(grep -c '^\[0\] iteration ' "$tmp/out")
    last=$(printf 'snap-%08d' $((v + 1)))
    [ "$(ls "$D/rally-kmeans")" = "$last" ] || fail "want only $last, have: $(ls "$D/rally-kmeans")"
    "$snap" verify "$D/rally-kmeans/$last" >/dev/null || fail "$last does not verify"
    job "$tmp/resumed" -n 2 --snapshot-dir "$D" --resume latest "$km" $KM
    [ "$(digest "$tmp/resumed")" = "$(digest "$tmp/out")" ] || fail "the final model differs"
    grep -q '^\[0\] iteration ' "$tmp/resumed" && fail "a finished model ran another iteration"
    no_orphans
    ;;
busy)
    # --snapshot-busy skip: a 32 MiB model, no work between checkpoints, a
    # snapshot asked for every version: writes outlast iterations, so
    # requests are skipped and reports retried; workers (rank 0 too) die
    # meanwhile.  The model is the plain run's and every kept snapshot verifies.
    bench=$build/snapshot_bench bmock=$build/snapshot_bench_mock
    job "$tmp/plain" -n 4 "$bench" 32 12 0
    job "$tmp/out" -n 4 --snapshot-dir "$D" --snapshot-every 1 --snapshot-busy skip \
        --keep-snapshots --snapshot-keep 50 "$bmock" 32 12 0 rally_mock=1,5,0,0 rally_mock=0,9,0,0
    cat "$tmp/out"
    grep -q "deaths=2 recovered=2 " "$tmp/out" || fail "want two deaths, both recovered"
    grep -q "skipped: an older one is still being written" "$tmp/out" || fail "nothing was skipped"
    [ "$(digest "$tmp/out")" = "$(digest "$tmp/plain")" ] || fail "the model differs"
    n=0
    for s in "$D"/snapshot_bench_mock/snap-*; do
        [ -f "$s/MANIFEST.json" ] || continue
        "$snap" verify "$s" >/dev/null || fail "$s does not verify"
        n=$((n + 1))
    done
    # how many commit depends on how long the writes take (the deaths void
    # the ones in flight); the one in flight at the end is always reported
    # in finalize, so at least that one commits
    [ $n -ge 1 ] || fail "want at least 1 committed snapshot, have $n"
    no_orphans
    ;;
tier_dir | tier_s3)
    if [ "$case_" = tier_s3 ]; then
        rig=$tmp/rig
        trap 'sh "$here/../rigs/swift_rig.sh" stop "$rig"; cleanup' EXIT
        sh "$here/../rigs/swift_rig.sh" start "$rig" || fail "the Swift rig did not start"
        . "$rig/env"
        code=$(curl -sS -m 30 -o /dev/null -w '%{http_code}' --netrc-file "$SWIFT_RIG_NETRC" \
            --aws-sigv4 "aws:amz:$AWS_DEFAULT_REGION:s3" \
            -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' -X PUT "$AWS_ENDPOINT_URL/tier")
        [ "$code" = 200 ] || fail "cannot make the bucket: HTTP $code"
        T=s3://tier/jobs BAD=s3://no-such-bucket/jobs
    else
        # the job's directory there is a file: every copy fails when made
        T=$tmp/copies BAD=$tmp/bad
        mkdir -p "$BAD" && : >"$BAD/rally-kmeans"
    fi
    job "$tmp/plain" -n 4 "$km" $KM --pause-ms 60
    # 60 versions, 0.1 s each: time for three copies (the copier takes the
    # newest committed snapshot whenever it is free) long before the end
    KT="$KM --iters 60 --fixed-iters --pause-ms 100"
    job "$tmp/plain" -n 4 "$km" $KT
    : >"$tmp/out" # an earlier job's lines must not satisfy wait_line
    timeout -k 5 60 "$run" -n 4 --snapshot-dir "$D" --snapshot-copy "$T" --snapshot-every 1 \
        "$km" $KT >"$tmp/out" 2>&1 &
    launcher=$!
    i=0
    until [ "$(grep -c "snapshot: copied to $T/rally-kmeans/snap-.* (verified there" "$tmp/out")" -ge 3 ]; do
        i=$((i + 1))
        [ $i -gt 600 ] && fail "three snapshots were not copied to $T in 30 s"
        sleep 0.05
    done
    workers=$(sed -n 's/^\[[0-9]\] shard [0-9] fingerprint .* pid \([0-9]*\)$/\1/p' "$tmp/out")
    kill -9 $(launcher_of "$launcher") $workers 2>/dev/null
    wait "$launcher" 2>/dev/null
    grep -q "^\[0\] result:" "$tmp/out" && fail "the job finished before it was killed"
    no_orphans
    "$snap" ls "$T/rally-kmeans" >"$tmp/ls" || { cat "$tmp/ls"; fail "rally-snapshot ls $T failed"; }
    cat "$tmp/ls"
    [ "$(grep -c ' complete ' "$tmp/ls")" -ge 1 ] || fail "no complete copy in $T"
    # the host is lost with its directory; the resumed run keeps its snapshots
    rm -rf "$D"
    job "$tmp/resumed" -n 4 --snapshot-dir "$D" --snapshot-copy "$T" --snapshot-every 1 \
        --keep-snapshots --resume latest "$km" $KT
    grep -v iteration "$tmp/resumed"
    grep -q "^rally-run: resuming from $T/rally-kmeans/snap-[0-9]* (the second tier, --snapshot-copy): .* verified" \
        "$tmp/resumed" || fail "rally-run did not say it resumed from the second tier"
    grep -q "^\[0\] iteration 0 " "$tmp/resumed" && fail "the resumed job started from scratch"
    [ "$(digest "$tmp/resumed")" = "$(digest "$tmp/plain")" ] ||
        fail "digest $(digest "$tmp/resumed") after resume, want $(digest "$tmp/plain")"
    # retention per tier: of the resumed run's copies (its versions are past
    # the one it resumed; every copy was said by its end: finalize waits for
    # the copier), the newest two stay there, as in the first tier
    from=$(sed -n 's/^rally-run: resuming from .*snap-0*\([0-9][0-9]*\) (the second tier.*/\1/p' "$tmp/resumed")
    copied=$(grep -c "snapshot: copied to $T/rally-kmeans/" "$tmp/resumed")
    want=$((copied < 2 ? copied : 2))
    "$snap" ls "$T/rally-kmeans" >"$tmp/ls"
    cat "$tmp/ls"
    kept=$(awk -v from="$from" '{ for (i = 1; i < NF; i++) if ($i == "complete" && $(i + 1) > from) n++ }
        END { print n + 0 }' "$tmp/ls")
    [ "$copied" -ge 1 ] && [ "$kept" -eq "$want" ] ||
        fail "$copied copies of the resumed run, $kept kept in $T, want $want"
    [ "$(ls -d "$D"/rally-kmeans/snap-* | wc -l)" -eq 2 ] || fail "want 2 kept in the first tier"
    no_orphans
    # a run that succeeds removes its snapshots from both tiers
    job "$tmp/clean" -n 4 --snapshot-dir "$D" --snapshot-copy "$T" --job clean --snapshot-every 2 \
        "$km" $KM
    grep -q "^rally-run: the run succeeded: removed its" "$tmp/clean" ||
        { cat "$tmp/clean"; fail "the first tier was not cleaned"; }
    grep -q "^rally-run: $T: the run succeeded: removed its" "$tmp/clean" ||
        { cat "$tmp/clean"; fail "the second tier was not cleaned"; }
    "$snap" ls "$T/clean" | grep -q "no snapshots" || fail "$T/clean still holds snapshots"
    no_orphans
    # a bucket that does not exist is refused at the start (tests/jobs/tier2_test.sh)
    if [ "$case_" = tier_s3 ]; then
        rm -rf "$D"
        timeout -k 5 60 "$run" -n 4 --snapshot-dir "$D" --snapshot-copy "$BAD" "$km" $KM \
            >"$tmp/out" 2>&1 && fail "a missing bucket was not refused"
        grep -q "^rally-run: --snapshot-copy $BAD cannot take a write: " "$tmp/out" ||
            fail "the refusal does not name $BAD"
        no_orphans
        echo "snapshot_resume_test $case_: ok"
        exit 0
    fi
    # a second tier that cannot be written: logged, tried again, the job goes on
    rm -rf "$D"
    job "$tmp/badcopy" -n 4 --snapshot-dir "$D" --snapshot-copy "$BAD" --snapshot-every 20 "$km" $KT
    grep -q "snapshot: copying .* to $BAD failed (try 1 of 3" "$tmp/badcopy" ||
        { cat "$tmp/badcopy"; fail "a failed copy was not logged"; }
    grep -q "snapshot: could not copy .* to $BAD (3 tries)" "$tmp/badcopy" ||
        { cat "$tmp/badcopy"; fail "a copy given up was not said"; }
    [ "$(digest "$tmp/badcopy")" = "$(digest "$tmp/plain")" ] || fail "a failed copy changed the model"
    rm -rf "$D"
    timeout -k 5 60 "$run" -n 4 --snapshot-dir "$D" --snapshot-copy "$BAD" --snapshot-every 3 \
        --snapshot-required "$km" $KM >"$tmp/out" 2>&1 &&
        fail "--snapshot-required did not fail the job on a copy given up"
    grep -q "rally_snapshot_required: the job fails: could not copy" "$tmp/out" || { cat "$tmp/out";
        fail "the failure does not name the copy"; }
    no_orphans
    ;;
*)
    fail "unknown case"
    ;;
esac
echo "snapshot_resume_test $case_: ok"
