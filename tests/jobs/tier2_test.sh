#!/bin/sh
# tier2_test.sh CASE BUILD_DIR — the second tier (rally-run --snapshot-copy)
# where it meets retention, deaths, a tier that cannot be written and
# elastic jobs.  tier_hold (tests/progs/tier_hold.c) holds one rank's copy
# of one version until a file exists, so the rest happens meanwhile, with
# no timing to hope for.  Every job is bounded in time and must leave no
# process behind.
#   fresh      a fresh start over a second tier that holds another run's
#              snapshots of the job is refused at the start, naming them
#   retention  --snapshot-keep 2, a snapshot every version, rank 0's copy
#              of version 1 (the first is always copied) held (global.bin
#              read, local-0000.bin not yet) until the first tier committed
#              version 3, whose retention keeps two: the snapshot being
#              copied stays until its copy settles, so version 1 is copied
#              and --snapshot-required does not fail the job
#   lost       a snapshot every 2 versions, rank 1's copy of version 2 (the
#              first) held, rank 1 killed at version 3 (rally_mock; no
#              snapshot pending then) and restarted: its copy is void, said as such
#              (the tier did not refuse it), the job goes on with
#              --snapshot-required and later versions are copied
#   verdict    --snapshot-required with a second tier whose job directory
#              is a file: the job fails, and rally-run's verdict names the
#              cause, not only "rank R exited with status 1"
#   wrong_secret  an S3 second tier (tests/rigs/swift_rig.sh) with a wrong AWS
#              secret, and one in a bucket that does not exist: refused
#              before any worker starts, naming the tier; the right secret
#              copies
#   elastic    --min-workers with --snapshot-copy: a rank lost for good
#              (--max-restarts 0) and the job goes on with 3 of 4; the copies
#              follow: the last one in the second tier is of 3 workers,
#              records the change and verifies, and a resume from it alone
#              gives the digest of a resume from the first tier's; with
#              --max-workers alone, a worker taken in (SIGUSR2) and the
#              last copy is of 5 workers (rank 0 held at a gate until the new
#              worker waits to join)
#   required   what --snapshot-required guarantees in the first tier: a
#              snapshot every version, rank 1 killed (rally_mock) after the
#              commit that took version 4 and before the ranks reported it:
#              the death voids version 4, said as such (the tier refused
#              nothing), and the job ends with status 0 and the digest of a
#              run without deaths, its last version in both tiers; the same
#              job with version 6's directory a symbolic link (the tier
#              cannot take it) fails, naming version 6
#   bad_bucket an S3 tier (tests/rigs/swift_rig.sh) whose bucket name S3 refuses
#              (Bad_Bucket: InvalidBucketName): --snapshot-copy is refused
#              before any worker starts, and rally-snapshot cp (whose first
#              request is a HEAD, whose answer has no body) too, each
#              saying "the bucket name Bad_Bucket is not valid" with S3's
#              code; a HEAD refused for a wrong secret names S3's code too
set -u
case_=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
run=$build/rally-run hold=$build/tier_hold hmock=$build/tier_hold_mock snap=$build/rally-snapshot
tmp=$(mktemp -d)
tag="tier2-$$"
export RALLY_TEST_TAG="$tag"
# rally processes of this test still running (this shell carries the tag too)
ours() {
    for p in $(grep -l "RALLY_TEST_TAG=$tag" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do
        case $(cat "/proc/$p/comm" 2>/dev/null) in rally* | tier_hold*) echo "$p" ;; esac
    done
}
cleanup() {
    left=$(ours)
    [ -n "$left" ] && kill -9 $left 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "tier2_test $case_: $*"; [ -f "$tmp/out" ] && tail -40 "$tmp/out"; exit 1; }
wait_line() { # pattern what: until it shows in $tmp/out (60 s at most)
    i=0
    until grep -q -- "$1" "$tmp/out"; do
        i=$((i + 1))
        [ $i -gt 1200 ] && fail "$2"
        sleep 0.05
    done
}
no_orphans() {
    sleep 0.3
    left=$(ours)
    [ -z "$left" ] || { kill -9 $left 2>/dev/null; fail "processes left behind: $left"; }
}
D=$tmp/snaps T=$tmp/copies

case $case_ in
retention)
    : >"$tmp/out"
    timeout -k 5 120 "$run" -n 3 --snapshot-dir "$D" --snapshot-copy "$T" --snapshot-every 1 \
        --snapshot-keep 2 --snapshot-required "$hold" 10 "hold=0,1,$tmp/go" >"$tmp/out" 2>&1 &
    job=$!
    wait_line "tier_hold: rank 0 holds its copy of version 1" "rank 0 did not hold the copy"
    # the commit of 3 ran retention keeping two (2 and 3): 1 is older
    wait_line "snapshot: committed $D/tier_hold/snap-00000003 " "version 3 was not committed"
    touch "$tmp/go"
    wait "$job"
    rc=$?
    cat "$tmp/out"
    [ $rc -eq 0 ] || fail "exit status $rc, want 0"
    grep -q "snapshot: copied to $T/tier_hold/snap-00000001 (verified there" "$tmp/out" ||
        fail "version 1, held while retention ran, was not copied"
    grep -q "cannot open\|not copied" "$tmp/out" && fail "a copy failed"
    no_orphans
    ;;
lost)
    "$here/../rigs/run_job.sh" 0 120 "$run" -n 3 --snapshot-dir "$D" --snapshot-copy "$T" \
        --snapshot-every 2 --snapshot-required "$hmock" 12 "hold=1,2,$tmp/never" \
        rally_mock=1,3,0,0 >"$tmp/out" 2>&1
    rc=$?
    cat "$tmp/out"
    [ $rc -eq 0 ] || fail "the job failed"
    # (whether rank 1 said it holds depends on its copier reaching the
    # hold before the kill: its copy cannot end before either way)
    grep -q "deaths=1 recovered=1 " "$tmp/out" || fail "want one death, recovered"
    grep -q "snapshot: version 2 not copied to $T: a rank was restarted while it copied its files" \
        "$tmp/out" || fail "the void copy was not said as such"
    grep -q "snapshot: copied to $T/tier_hold_mock/snap-000000[01][0-9] (verified there" \
        "$tmp/out" || fail "nothing was copied after the death"
    ;;
fresh)
    # a run kept its snapshots in both tiers; the first tier's are gone (a
    # host's disk), the second's stay: a fresh start is refused naming them
    # (their names would collide with the new run's copies, and every copy
    # fail), and --resume latest takes the second tier's newest
    "$here/../rigs/run_job.sh" 0 120 "$run" -n 3 --snapshot-dir "$D" --snapshot-copy "$T" \
        --snapshot-every 2 --keep-snapshots "$hold" 6 >"$tmp/out" 2>&1 || fail "the first run"
    rm -rf "$D/tier_hold"
    "$here/../rigs/run_job.sh" 1 60 "$run" -n 3 --snapshot-dir "$D" --snapshot-copy "$T" \
        --snapshot-every 2 "$hold" 6 >"$tmp/out" 2>&1 || fail "a fresh start was not refused"
    grep -q "^rally-run: $T/tier_hold already holds [0-9]* snapshots: .*snap-00000006 (complete); continue it with --resume latest, or start over with --overwrite$" \
        "$tmp/out" || fail "the refusal does not name the second tier's snapshots"
    grep -q "^\[[0-9]\]" "$tmp/out" && fail "a worker started"
    "$here/../rigs/run_job.sh" 0 120 "$run" -n 3 --snapshot-dir "$D" --snapshot-copy "$T" \
        --snapshot-every 2 --resume latest "$hold" 6 >"$tmp/out" 2>&1 || fail "the resume"
    grep -q "resuming from $T/tier_hold/snap-00000006 (the second tier" "$tmp/out" ||
        fail "the resume did not take the second tier's newest"
    ;;
verdict)
    mkdir -p "$T" && : >"$T/tier_hold"
    "$here/../rigs/run_job.sh" nonzero 120 "$run" -n 3 --snapshot-dir "$D" --snapshot-copy "$T" \
        --snapshot-every 2 --snapshot-required "$hold" 6 >"$tmp/out" 2>&1 || fail "the job"
    cat "$tmp/out"
    grep -q "^rally-run: .*rally_snapshot_required: .*could not copy" "$tmp/out" ||
        fail "rally-run's own lines do not name the cause"
    grep "^rally-run: " "$tmp/out" | grep -q "rank [0-9] exited with status 1$" &&
        fail "the verdict is only an exit status"
    ;;
wrong_secret)
    rig=$tmp/rig
    trap 'sh "$here/../rigs/swift_rig.sh" stop "$rig"; cleanup' EXIT
    sh "$here/../rigs/swift_rig.sh" start "$rig" || fail "the Swift rig did not start"
    . "$rig/env"
    code=$(curl -sS -m 30 -o /dev/null -w '%{http_code}' --netrc-file "$SWIFT_RIG_NETRC" \
        --aws-sigv4 "aws:amz:$AWS_DEFAULT_REGION:s3" \
        -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' -X PUT "$AWS_ENDPOINT_URL/tier")
    [ "$code" = 200 ] || fail "cannot make the bucket: HTTP $code"
    good=$AWS_SECRET_ACCESS_KEY
    for bad in secret bucket; do
        T=s3://tier/jobs
        if [ $bad = secret ]; then
            AWS_SECRET_ACCESS_KEY=not-$good
        else
            AWS_SECRET_ACCESS_KEY=$good T=s3://no-such-bucket/jobs
        fi
        export AWS_SECRET_ACCESS_KEY
        "$here/../rigs/run_job.sh" 1 120 "$run" -n 3 --snapshot-dir "$D" --snapshot-copy "$T" \
            --snapshot-every 2 "$hold" 6 >"$tmp/out" 2>&1 || fail "a wrong $bad: not exit 1"
        cat "$tmp/out"
        grep -q "^rally-run: --snapshot-copy $T cannot take a write: " "$tmp/out" ||
            fail "a wrong $bad was not refused naming the tier"
        grep -q "^\[0\]" "$tmp/out" && fail "a wrong $bad: a worker started"
    done
    AWS_SECRET_ACCESS_KEY=$good
    T=s3://tier/jobs
    "$here/../rigs/run_job.sh" 0 120 "$run" -n 3 --snapshot-dir "$D" --snapshot-copy "$T" \
        --snapshot-every 2 "$hold" 6 >"$tmp/out" 2>&1 || fail "the right secret"
    grep -q "snapshot: copied to $T/tier_hold/snap-00000006 (verified there" "$tmp/out" ||
        fail "the right secret copied nothing"
    ;;
elastic)
    # a shrink: 4 -> 3 at version 4
    "$here/../rigs/run_job.sh" 0 120 "$run" -n 4 --min-workers 3 --max-restarts 0 --snapshot-dir "$D" \
        --snapshot-copy "$T" --snapshot-every 2 --keep-snapshots --snapshot-keep 50 \
        --snapshot-required "$hmock" 12 nolocal rally_mock=2,4,0,0 >"$tmp/out" 2>&1
    rc=$?
    cat "$tmp/out"
    [ $rc -eq 0 ] || fail "the elastic job with --snapshot-copy failed"
    grep -q "^rally-run: rank 2 lost for good: going on with 3 workers from version 4$" \
        "$tmp/out" || fail "no shrink"
    last=$T/tier_hold_mock/snap-00000012
    "$snap" verify "$last" >/dev/null || fail "$last does not verify"
    "$snap" show "$last" >"$tmp/show" || fail "rally-snapshot show $last"
    grep -q "^world size *3$" "$tmp/show" || { cat "$tmp/show"; fail "the last copy is not of 3"; }
    [ "$(grep '^workers ' "$tmp/show" | tr -s ' ')" = "$(printf 'workers 4 from version 0\nworkers 3 from version 4')" ] ||
        { cat "$tmp/show"; fail "the copy does not record the change"; }
    # a copy after the change resumes as the first tier's does
    v8=snap-00000008
    "$snap" verify "$T/tier_hold_mock/$v8" >/dev/null || fail "$v8 was not copied"
    "$here/../rigs/run_job.sh" 0 120 "$run" -n 3 --snapshot-dir "$tmp/r1" --resume "$D/tier_hold_mock/$v8" \
        "$hold" 12 nolocal >"$tmp/r1.out" 2>&1 || { cp "$tmp/r1.out" "$tmp/out"; fail "resume from $D"; }
    "$here/../rigs/run_job.sh" 0 120 "$run" -n 3 --snapshot-dir "$tmp/r2" --resume "$T/tier_hold_mock/$v8" \
        "$hold" 12 nolocal >"$tmp/r2.out" 2>&1 || { cp "$tmp/r2.out" "$tmp/out"; fail "resume from $T"; }
    a=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/r1.out") b=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/r2.out")
    [ -n "$a" ] && [ "$a" = "$b" ] || fail "resumed from the copy: $b, from the first tier: $a"
    # a growth: 4 -> 5, the copy of the last version is of 5
    rm -rf "$D" "$T"
    : >"$tmp/out"
    timeout -k 5 120 "$run" -n 4 --max-workers 5 --snapshot-dir "$D" --snapshot-copy "$T" \
        --snapshot-every 2 --keep-snapshots --snapshot-keep 50 --snapshot-required \
        "$hold" 12 nolocal "gate=5,$tmp/go" >"$tmp/out" 2>&1 &
    job=$!
    wait_line "tier_hold: at the gate" "rank 0 did not reach the gate"
    launcher=$(pgrep -o -P "$job" -x rally-run)
    [ -n "$launcher" ] || fail "no rally-run under $job"
    kill -USR2 "$launcher"
    wait_line "^rally-run: tracker: the worker with task id '4' waits to join" "no joiner"
    touch "$tmp/go"
    wait "$job"
    rc=$?
    cat "$tmp/out"
    [ $rc -eq 0 ] || fail "the growing job with --snapshot-copy failed"
    grep -q "^rally-run: taking in 1 worker: going on with 5 workers from version" "$tmp/out" ||
        fail "no growth"
    last=$(ls -d "$T"/tier_hold/snap-* | sort | tail -1)
    "$snap" verify "$last" >/dev/null || fail "$last does not verify"
    "$snap" show "$last" | grep -q "^world size *5$" || fail "the last copy, $last, is not of 5"
    no_orphans
    ;;
required)
    "$here/../rigs/run_job.sh" 0 120 "$run" -n 3 "$hold" 8 >"$tmp/plain" 2>&1 ||
        { cp "$tmp/plain" "$tmp/out"; fail "the run without deaths"; }
    want=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/plain")
    "$here/../rigs/run_job.sh" 0 120 "$run" -n 3 --snapshot-dir "$D" --snapshot-copy "$T" \
        --snapshot-every 1 --snapshot-keep 50 --keep-snapshots --snapshot-required "$hmock" 8 \
        rally_mock=1,4,0,0 >"$tmp/out" 2>&1
    rc=$?
    cat "$tmp/out"
    [ $rc -eq 0 ] || fail "a snapshot void by a death failed the job"
    grep -q "deaths=1 recovered=1 " "$tmp/out" || fail "want one death, recovered"
    grep -q "snapshot: version 4 void: rank 1 died before it was reported" "$tmp/out" ||
        fail "the void snapshot was not said as such"
    [ -e "$D/tier_hold_mock/snap-00000004/MANIFEST.json" ] && fail "the void snapshot was committed"
    [ "$(grep -o 'model_digest=[0-9a-f]*' "$tmp/out")" = "$want" ] ||
        fail "the model differs from the run without deaths ($want)"
    for t in "$D" "$T"; do
        "$snap" verify "$t/tier_hold_mock/snap-00000008" >/dev/null ||
            fail "the last version is not in $t"
    done
    # a write the first tier refuses still fails the job, with the sentence
    rm -rf "$D" "$T"
    mkdir -p "$D/tier_hold_mock" "$tmp/elsewhere"
    ln -s "$tmp/elsewhere" "$D/tier_hold_mock/snap-00000006"
    "$here/../rigs/run_job.sh" nonzero 120 "$run" -n 3 --snapshot-dir "$D" --snapshot-copy "$T" \
        --snapshot-every 1 --snapshot-required --overwrite "$hmock" 8 rally_mock=1,4,0,0 \
        >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "a write the tier refused did not fail the job"; }
    cat "$tmp/out"
    grep -q "^rally-run: .*rally_snapshot_required: rank 0 could not write its part of the snapshot of version 6" \
        "$tmp/out" || fail "the failure does not name the version the tier refused"
    grep -q "result:" "$tmp/out" && fail "the job finished although its snapshot failed"
    ;;
bad_bucket)
    rig=$tmp/rig
    trap 'sh "$here/../rigs/swift_rig.sh" stop "$rig"; cleanup' EXIT
    sh "$here/../rigs/swift_rig.sh" start "$rig" || fail "the Swift rig did not start"
    . "$rig/env"
    bad="the bucket name Bad_Bucket is not valid (HTTP 400 InvalidBucketName: "
    T=s3://Bad_Bucket/jobs
    "$here/../rigs/run_job.sh" 1 120 "$run" -n 3 --snapshot-dir "$D" --snapshot-copy "$T" \
        --snapshot-every 2 "$hold" 6 >"$tmp/out" 2>&1 || fail "--snapshot-copy $T: not exit 1"
    cat "$tmp/out"
    grep -q "^rally-run: --snapshot-copy $T cannot take a write: .*$bad" "$tmp/out" ||
        fail "--snapshot-copy $T was not refused naming the reason"
    grep -q "^\[0\]" "$tmp/out" && fail "a worker started"
    # a snapshot to copy there by hand
    "$here/../rigs/run_job.sh" 0 120 "$run" -n 3 --snapshot-dir "$D" --snapshot-every 2 \
        --keep-snapshots "$hold" 2 >"$tmp/out" 2>&1 || fail "the job that makes a snapshot"
    s=$D/tier_hold/snap-00000002
    timeout 60 "$snap" cp "$s" "$T" >"$tmp/out" 2>&1 && fail "rally-snapshot cp into $T worked"
    cat "$tmp/out"
    grep -q "$bad" "$tmp/out" || fail "rally-snapshot cp into $T does not name the reason"
    code=$(curl -sS -m 30 -o /dev/null -w '%{http_code}' --netrc-file "$SWIFT_RIG_NETRC" \
        --aws-sigv4 "aws:amz:$AWS_DEFAULT_REGION:s3" \
        -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' -X PUT "$AWS_ENDPOINT_URL/tier")
    [ "$code" = 200 ] || fail "cannot make the bucket: HTTP $code"
    AWS_SECRET_ACCESS_KEY=not-$AWS_SECRET_ACCESS_KEY timeout 60 "$snap" cp "$s" s3://tier/jobs \
        >"$tmp/out" 2>&1 && fail "rally-snapshot cp with a wrong secret worked"
    cat "$tmp/out"
    grep -q "access denied (HTTP 403 [A-Za-z]*: " "$tmp/out" ||
        fail "a HEAD refused for a wrong secret does not name S3's reason"
    ;;
*)
    fail "unknown case"
    ;;
esac
echo "tier2_test $case_: ok"
