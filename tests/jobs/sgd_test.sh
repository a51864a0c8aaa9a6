#!/bin/sh
# sgd_test.sh CASE BUILD_DIR — rally-linear --solver sgd and its data cursor
# end to end (docs/data.md "The data cursor"): 1000 samples, a global batch
# of 64 (16 steps an epoch, the last of 40 ids), 3 epochs, --reproducible.
# Every epoch line must say "consumed 1000 samples" with the digest of the
# ids 0 .. 999 (computed here from docs/data.md's formula, not by rally),
# and every job must end with the model digest of the failure-free run at
# N = 1.  Every job is bounded in time and must leave no process behind.
#   worlds       N = 1, 2 and 4 without failures
#   kill9        N = 4, rank 2 killed (SIGKILL, rally_mock) between the two
#                allreduces of step 21 (epoch 2, position 256) and restarted:
#                it resumes at that position
#   shrink       the same death with --max-restarts 0 --min-workers 3: the job
#                goes on with 3 workers from version 20, mid-epoch
#   grow         N = 3, --max-workers 4: rank 0 held before step 21 until a
#                fourth worker waits to join; it is taken in mid-epoch 2
#   snapshot     N = 4 with a snapshot every 5 steps (never an epoch's end),
#                the whole job killed after snap-25; --resume latest at N = 2
#                goes on with the same epoch
#   negative_control  the shrink with --forget-cursor (the cursor not loaded
#                from the checkpoint): the check above must fail
set -u
case_=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
run=$build/rally-run lr=$build/rally-linear mock=$build/rally-linear-mock
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "sgd_test $case_: $*"; [ -f "$tmp/out" ] && tail -40 "$tmp/out"; exit 1; }
. "$here/../rigs/trainer_lib.sh"

"$build/rally-datagen" --rows 1000 --features 6 --centers 2 --seed 3 --format csv \
    -o "$tmp/d.csv" >/dev/null 2>&1 || fail "rally-datagen failed"
SGD="--data $tmp/d.csv --data-opt csv_label=0 --solver sgd --epochs 3 --batch 64 --reproducible"

# the digest of the ids 0 .. 999: the sum mod 2^64 of splitmix64's
# finaliser of id + 0x9e3779b97f4a7c15 (docs/data.md)
want=$(/usr/bin/python3 -c '
M = (1 << 64) - 1
def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)
print("%016x" % (sum(mix((i + 0x9E3779B97F4A7C15) & M) for i in range(1000)) & M))')
[ -n "$want" ] || fail "no expected digest"

digest() { grep -o 'model_digest=[0-9a-f]*' "$1"; }

# epochs_ok out first: epochs first .. 3 each said, every time alike, with
# the whole epoch's count and digest; the reason on stdout otherwise
epochs_ok() {
    e=$2
    while [ "$e" -le 3 ]; do
        lines=$(grep "^\[0\] epoch $e: " "$1" | sort -u)
        [ -n "$lines" ] || { echo "no line for epoch $e"; return 1; }
        [ "$lines" = "[0] epoch $e: consumed 1000 samples, ids digest $want" ] ||
            { echo "epoch $e: $lines; want 1000 samples, ids digest $want"; return 1; }
        e=$((e + 1))
    done
}

# check out [first]: the epochs and the failure-free model digest
check() {
    why=$(epochs_ok "$1" "${2:-1}") || { cp "$1" "$tmp/out"; fail "$why"; }
    [ "$(digest "$1")" = "$plain" ] || { cp "$1" "$tmp/out"; fail "$(digest "$1"), want $plain"; }
}

job "$tmp/n1" 1 "$lr" $SGD
plain=$(digest "$tmp/n1")
[ -n "$plain" ] || { cp "$tmp/n1" "$tmp/out"; fail "no digest at N = 1"; }
check "$tmp/n1"

shrink_job() { # out args...: rank 2 lost for good inside step 21
    o=$1
    shift
    "$here/../rigs/run_job.sh" 0 60 "$run" -n 4 --min-workers 3 --max-restarts 0 "$mock" $SGD "$@" \
        rally_mock=2,20,1,0 >"$o" 2>&1 || { cp "$o" "$tmp/out"; fail "the job failed"; }
    grep -q "^rally-run: rank 2 lost for good: going on with 3 workers from version 20$" "$o" ||
        { cp "$o" "$tmp/out"; fail "no shrink at version 20"; }
}

case $case_ in
worlds)
    for n in 2 4; do
        job "$tmp/n$n" $n "$lr" $SGD
        check "$tmp/n$n"
    done
    grep '^\[0\] epoch' "$tmp/n4"
    ;;
kill9)
    "$here/../rigs/run_job.sh" 0 60 "$run" -n 4 "$mock" $SGD rally_mock=2,20,1,0 >"$tmp/k" 2>&1 ||
        { cp "$tmp/k" "$tmp/out"; fail "the job failed"; }
    grep -q "^rally-run: rank 2 died (killed by signal 9)" "$tmp/k" ||
        { cp "$tmp/k" "$tmp/out"; fail "rank 2 did not die of signal 9"; }
    grep -q '^\[2\] rank 2 restarted: resuming after step 20 at epoch 2 position 256 ' "$tmp/k" ||
        { cp "$tmp/k" "$tmp/out"; fail "rank 2 did not resume at epoch 2 position 256"; }
    check "$tmp/k"
    ;;
shrink)
    shrink_job "$tmp/s"
    for r in 0 1 3; do
        grep -q "^\[$r\] rank [0-2] restarted: resuming after step 20 at epoch 2 position 256 " \
            "$tmp/s" || { cp "$tmp/s" "$tmp/out"; fail "launched rank $r did not resume"; }
    done
    check "$tmp/s"
    grep -E '^\[0\] epoch|lost for good' "$tmp/s"
    ;;
grow)
    RALLY_TEST_TAG="sgd-$$" timeout -k 5 90 "$run" -n 3 --max-workers 4 "$lr" $SGD \
        --gate "20,$tmp/go" >"$tmp/out" 2>&1 &
    jobpid=$!
    wait_line "$tmp/out" '^\[0\] at the gate before step 20$' "the gate" 300 0.1
    launcher=$(pgrep -o -P "$jobpid" -x rally-run)
    [ -n "$launcher" ] || fail "no rally-run under $jobpid"
    kill -USR2 "$launcher"
    wait_line "$tmp/out" "^rally-run: tracker: the worker with task id '3' waits to join" \
        "the joiner waiting" 300 0.1
    touch "$tmp/go"
    wait "$jobpid" || fail "the job failed"
    no_leftovers "sgd-$$"
    grep -q "^rally-run: taking in 1 worker: going on with 4 workers from version 2[0-9]$" \
        "$tmp/out" || fail "no grow to 4 workers in epoch 2"
    grep -q "^\[3\] rank 3 restarted: resuming after step 2[0-9] at epoch 2 position" "$tmp/out" ||
        fail "the new worker did not start mid-epoch 2"
    cp "$tmp/out" "$tmp/g"
    check "$tmp/g"
    grep -E '^\[0\] epoch|taking in' "$tmp/g"
    ;;
snapshot)
    D=$tmp/snaps tag="sgd-snap-$$"
    RALLY_TEST_TAG="$tag" timeout -k 5 60 "$run" -n 4 --snapshot-dir "$D" --snapshot-every 5 \
        "$lr" $SGD --pause-ms 40 >"$tmp/out" 2>&1 &
    jobpid=$!
    wait_line "$tmp/out" "^\[0\] rally: rank 0: snapshot: committed .*/snap-00000025 " \
        "snap-00000025's commit" 600 0.05
    kill_job "$tag"
    wait "$jobpid" 2>/dev/null
    grep -q '^\[0\] result:' "$tmp/out" && fail "the job finished before it was killed"
    no_leftovers "$tag"
    job "$tmp/r" 2 --snapshot-dir "$D" --snapshot-every 5 --resume latest "$lr" $SGD --pause-ms 40
    v=$(sed -n 's/^\[0\] rank 0 restarted: resuming after step \([0-9]*\) at epoch .*/\1/p' "$tmp/r")
    case $v in
    25 | 30 | 35 | 40 | 45) ;;
    *) cp "$tmp/r" "$tmp/out"; fail "resumed after step '$v', want a snapshot of 25 .. 45" ;;
    esac
    grep '^\[.\] rank . restarted\|^\[0\] epoch' "$tmp/r"
    check "$tmp/r" $((v / 16 + 1))
    ;;
negative_control)
    shrink_job "$tmp/s" --forget-cursor
    if why=$(epochs_ok "$tmp/s" 1); then
        cp "$tmp/s" "$tmp/out"
        fail "the cursor was not restored, yet every epoch was whole"
    fi
    echo "sgd_test negative_control: the check fails as it must: $why"
    [ "$(digest "$tmp/s")" != "$plain" ] || fail "the model is the plain run's all the same"
    ;;
*)
    fail "unknown case"
    ;;
esac
echo "sgd_test $case_: passed"
