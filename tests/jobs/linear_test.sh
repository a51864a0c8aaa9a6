#!/bin/sh
# linear_test.sh CASE BUILD_DIR — rally-linear end to end (examples/linear):
# logistic regression by L-BFGS and by consensus ADMM (local models).
# BUILD_DIR holds rally-run, rally-linear, rally-linear-mock.  Data comes
# from tests/rigs/linear_sklearn.py (float32 values, so both sides read the same
# numbers).  Every job is bounded in time and must leave no process behind.
#   help         --help lists the flags; a bad flag is exit status 2
#   sklearn      L-BFGS at N = 4: the objective within 1e-6 relative of
#                scikit-learn's LogisticRegression(solver="lbfgs",
#                C = 1 / (lambda n)), test accuracy within one row; N = 1 and
#                N = 3 agree to 1e-9; two runs at N = 4 give the same digest;
#                --show's JSON carries the run's digest; the same rows as
#                LIBSVM with an 11th, absent feature (the sparse path, not
#                the dense one) give the same objective bit for bit
#   sparse       100,000-feature LIBSVM (CSR, never densified), N = 2: the
#                same agreement with scikit-learn on its sparse input
#   admm_sklearn ADMM at N = 4 reaches scikit-learn's objective to 1e-7
#                relative (--tol 1e-6), test accuracy within one row
#   mock_op      L-BFGS: rank 3 dies in the bootstrap's row-count allreduce,
#                rank 1 entering the evaluation of iteration 3, rank 0 in the
#                second line-search trial of iteration 9
#   mock_checkpoint  rank 2 dies inside the checkpoint of iteration 4
#   mock_recovery    rank 1 dies, then rank 2 while serving its recovery
#                (a rally_mock group: rank 1 dies only once rank 2 is inside
#                the same call, else rank 2 may serve the recovery a call
#                early and never die)
#   mock_load        rank 1 dies, then again inside rally_load_checkpoint
#   kill9        kill -9 of a live L-BFGS worker mid-run
#   admm_mock    ADMM: rank 1 dies entering iteration 3's allreduce, rank 2
#                inside iteration 6's checkpoint
#   admm_mock_recovery  rank 1 dies, rank 3 while serving its recovery (a
#                group, as in mock_recovery), and rank 1 again inside
#                rally_load_checkpoint
#   admm_kill9   kill -9 of a live ADMM worker mid-run
#   admm_k1_adjacent / admm_k2_adjacent  rally_local_replica=k and k adjacent
#                ranks die at once (k = 2: a group, so both are gone before
#                either is restarted): their local models come back from the
#                replicas
#                (mock_*, kill9, admm_*: the digest equals the failure-free
#                run's, rally-run counts exactly the deaths and as many
#                recovered, a restarted rank logs the same shard fingerprint)
#   labels       a label 2 in rank 3's shard: every worker stops (exit status
#                2), the error names the label and its byte offset, no hang
#   admm_k1_lost / admm_k2_lost  k + 1 adjacent ranks die at once (a group:
#                one victim a call behind would otherwise serve its restarted
#                neighbour's local model, and the job would survive): the job
#                fails, naming rank 1's local model as lost
#   snap_resume / admm_snap_resume  durable snapshots (rally-run
#                --snapshot-dir D --snapshot-every 2): once rank 0 printed
#                "committed" for a given snapshot, the launcher and every
#                worker are frozen (SIGSTOP) and killed (-9) together; the
#                job left unfinished, with no process behind; `rally-run
#                --resume latest` continues from it (every rank says it
#                resumed; ADMM: with its local model restored from the
#                snapshot's per-rank files) and the result: line equals the
#                uninterrupted run's; ADMM on another world size is refused
# Points in a rally_mock group (the sixth field) die together; run_job.sh
# gives each job the rally_mock_sync directory they meet in.
set -u
case_=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
run=$build/rally-run lr=$build/rally-linear mock=$build/rally-linear-mock
py=/usr/bin/python3
[ -x "$py" ] || py=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "linear_test $case_: $*"; [ -f "$tmp/out" ] && tail -40 "$tmp/out"; exit 1; }

# 20,000 rows x 10 features (and 5,000 test rows) from a logistic model:
# L-BFGS converges in about 15 iterations, ADMM at N = 4 in about 60.
"$py" "$here/../rigs/linear_sklearn.py" gen-dense "$tmp/d" 20000 10 3 || fail "generating the data failed"
LAMBDA=1e-3
LR="--data $tmp/d.train.csv --data-opt csv_label=0 --lambda $LAMBDA"
ADMM="$LR --solver admm"

. "$here/../rigs/trainer_lib.sh"
digest() { grep -o 'model_digest=[0-9a-f]*' "$1"; }
objective() { sed -n 's/.*result: .*objective=\([^ ]*\)$/\1/p' "$1"; }

# sk_check result-out model.bin train test features rtol
sk_check() {
    "$lr" --show "$2" >"$tmp/model.json" || fail "--show failed"
    grep -q "\"model_digest\": \"$(digest "$1" | cut -d= -f2)\"" "$tmp/model.json" ||
        fail "--show does not give the run's digest"
    "$py" "$here/../rigs/linear_sklearn.py" check "$3" "$4" "$5" "$LAMBDA" "$tmp/model.json" \
        "$(objective "$1")" "$6" || fail "disagrees with scikit-learn"
}

# check_recovery out deaths: exact counts and stable fingerprints
check_recovery() {
    summary=$(grep 'rally-run: summary:' "$1")
    echo "$summary" | grep -q "deaths=$2 recovered=$2 " || fail "want deaths=$2 recovered=$2: $summary"
    per=$(echo "$summary" | sed -n 's/.*per-rank-deaths=\([0-9:,]*\).*/\1/p')
    for rd in $(echo "$per" | tr ',' ' '); do
        r=${rd%%:*} d=${rd#*:}
        lines=$(grep -c "^\[$r\] shard $r fingerprint " "$1")
        [ "$lines" -eq $((d + 1)) ] || fail "rank $r logged $lines fingerprints after $d deaths"
        kinds=$(grep "^\[$r\] shard $r fingerprint " "$1" | awk '{print $5}' | sort -u | wc -l)
        [ "$kinds" -eq 1 ] || fail "rank $r read different shards after its restart"
    done
}

mock_case() { # deaths args points...
    deaths=$1 args=$2
    shift 2
    job "$tmp/plain" 4 "$lr" $args
    "$here/../rigs/run_job.sh" 0 90 "$run" -n 4 --max-restarts 4 "$mock" $args "$@" >"$tmp/out" 2>&1 ||
        fail "the run with failures failed"
    grep -E 'restarted|rally-run|result' "$tmp/out"
    [ "$(digest "$tmp/out")" = "$(digest "$tmp/plain")" ] ||
        fail "digest $(digest "$tmp/out"), want $(digest "$tmp/plain")"
    check_recovery "$tmp/out" "$deaths"
}

lost_case() { # k: k + 1 adjacent ranks (1 .. k+1) die together in iteration 4
    pts=""
    for r in $(seq 1 $(($1 + 1))); do pts="$pts rally_mock=$r,4,0,0,op,lost"; done
    GREP="the local models of ranks 1 are lost" "$here/../rigs/run_job.sh" nonzero 60 "$run" -n 4 \
        --max-restarts 4 "$mock" $ADMM rally_local_replica=$1 $pts >"$tmp/out" 2>&1 ||
        fail "want a non-zero exit naming rank 1's lost local model"
    grep -m1 'are lost' "$tmp/out"
}

kill_case() { # args pause-ms (about 2 s of the run left after iteration 3)
    job "$tmp/plain" 4 "$lr" $1
    RALLY_TEST_TAG="linear-$$" timeout -k 5 60 "$run" -n 4 "$lr" $1 --pause-ms $2 \
        >"$tmp/out" 2>&1 &
    jobpid=$!
    wait_line "$tmp/out" '^\[0\] iteration 3 ' "iteration 3" 300 0.1
    kill_worker "$tmp/out" 2
    wait "$jobpid" || fail "the job failed after kill -9"
    grep -E 'restarted|rally-run|result' "$tmp/out"
    [ "$(digest "$tmp/out")" = "$(digest "$tmp/plain")" ] ||
        fail "digest $(digest "$tmp/out"), want $(digest "$tmp/plain")"
    grep -q '^\[2\] rank 2 restarted: resuming after iteration' "$tmp/out" ||
        fail "rank 2 did not say it resumed"
    check_recovery "$tmp/out" 1
    no_leftovers "linear-$$"
}

snap_case() { # args committed-version pause-ms [local]: whole-job kill -9, --resume latest
    job "$tmp/plain" 4 "$lr" $1
    D=$tmp/snaps tag="linear-snap-$$"
    RALLY_TEST_TAG="$tag" timeout -k 5 60 "$run" -n 4 --snapshot-dir "$D" --snapshot-every 2 \
        "$lr" $1 --pause-ms $3 >"$tmp/out" 2>&1 &
    jobpid=$!
    want=$(printf 'snap-%08d' "$2")
    wait_line "$tmp/out" "^\[0\] rally: rank 0: snapshot: committed .*/$want " "$want's commit" \
        600 0.05
    kill_job "$tag"
    wait "$jobpid" 2>/dev/null
    grep -q '^\[0\] result:' "$tmp/out" && fail "the job finished before it was killed"
    grep -v iteration "$tmp/out"
    no_leftovers "$tag"
    "$build/rally-snapshot" ls "$D/rally-linear" >"$tmp/ls" || fail "rally-snapshot ls failed"
    cat "$tmp/ls"
    # the newest complete one (a write cut short by the kill stays incomplete)
    s=$D/rally-linear/$(sed -n 's/^  \* \(snap-[0-9]*\) .*/\1/p' "$tmp/ls")
    [ -d "$s" ] || fail "rally-snapshot ls marks no newest complete snapshot"
    "$build/rally-snapshot" verify "$s" >/dev/null || fail "$s does not verify"
    inputs_kept "$tmp/out" "$s" 4
    if [ -n "${4:-}" ]; then
        for r in 0 1 2 3; do
            [ -f "$s/local-000$r.bin" ] || fail "no local model of rank $r in $s"
        done
        "$here/../rigs/run_job.sh" nonzero 60 "$run" -n 3 --resume "$s" "$lr" $1 --pause-ms $3 \
            >"$tmp/n3" 2>&1 || fail "local models were resumed on another world size"
        grep -q "taken by 4 workers .* this job has 3" "$tmp/n3" || fail "the refusal names no sizes"
    fi
    job "$tmp/resumed" 4 --snapshot-dir "$D" --snapshot-every 2 --resume latest "$lr" $1 \
        --pause-ms $3
    grep -v iteration "$tmp/resumed"
    grep -q "^rally-run: resuming from .*snap-[0-9]*: .* verified" "$tmp/resumed" ||
        fail "rally-run did not say what it resumed from"
    grep -q '^\[0\] iteration 0 ' "$tmp/resumed" && fail "the resumed job started from scratch"
    for r in 0 1 2 3; do
        grep -q "^\[$r\] rank $r restarted: resuming after iteration [0-9]* (checkpoint version [0-9]*${4:-})" \
            "$tmp/resumed" || fail "rank $r did not say it resumed${4:+ with its local model}"
    done
    [ "$(digest "$tmp/resumed")" = "$(digest "$tmp/plain")" ] ||
        fail "digest $(digest "$tmp/resumed") after resume, want $(digest "$tmp/plain")"
    [ "$(objective "$tmp/resumed")" = "$(objective "$tmp/plain")" ] || fail "the objective differs"
    echo "resumed: $(digest "$tmp/resumed"), uninterrupted: $(digest "$tmp/plain")"
}

case $case_ in
help)
    "$lr" --help >"$tmp/out" 2>&1 || fail "--help failed"
    for f in --data --data-opt --solver --lambda --C --no-intercept --iters --tol --memory \
        --rho --model-out --json --show; do
        grep -q -- "$f" "$tmp/out" || fail "--help does not list $f"
    done
    "$lr" --no-such-flag >"$tmp/out" 2>&1
    [ $? -eq 2 ] || fail "a bad flag must exit 2"
    "$lr" --lambda -1 --data x >"$tmp/out" 2>&1
    [ $? -eq 2 ] || fail "--lambda -1 must exit 2"
    "$lr" --solver sgd --data x >"$tmp/out" 2>&1
    [ $? -eq 2 ] || fail "--solver sgd must exit 2"
    ;;
sklearn)
    job "$tmp/n4" 4 "$lr" $LR --model-out "$tmp/m.bin"
    cat "$tmp/n4"
    sk_check "$tmp/n4" "$tmp/m.bin" "$tmp/d.train.csv" "$tmp/d.test.csv" 10 1e-6
    job "$tmp/n4b" 4 "$lr" $LR --quiet
    [ "$(digest "$tmp/n4")" = "$(digest "$tmp/n4b")" ] || fail "two runs at N=4 differ"
    job "$tmp/n1" 1 "$lr" $LR --quiet
    job "$tmp/n3" 3 "$lr" $LR --quiet
    "$py" -c 'import sys
v = [float(x) for x in sys.argv[1:]]
print("objectives at N = 4, 1, 3:", v)
sys.exit(1 if not v or any(abs(x - v[0]) > 1e-9 * abs(v[0]) for x in v) else 0)' \
        "$(objective "$tmp/n4")" "$(objective "$tmp/n1")" "$(objective "$tmp/n3")" ||
        fail "objectives differ across N"
    awk -F, '{printf "%s", $1; for (i = 2; i <= NF; i++) printf " %d:%s", i - 1, $i; print ""}' \
        "$tmp/d.train.csv" >"$tmp/d.svm"
    job "$tmp/svm" 4 "$lr" --data "$tmp/d.svm" --data-opt num_features=11 --lambda $LAMBDA
    grep -q 'x 11 features' "$tmp/svm" || fail "want 11 features from num_features=11"
    [ "$(objective "$tmp/svm")" = "$(objective "$tmp/n4")" ] ||
        fail "the sparse path gives $(objective "$tmp/svm"), the dense one $(objective "$tmp/n4")"
    ;;
sparse)
    "$py" "$here/../rigs/linear_sklearn.py" gen-sparse "$tmp/s" 6000 100000 30 5 ||
        fail "generating the sparse data failed"
    job "$tmp/s" 2 "$lr" --data "$tmp/s.train.svm" --lambda $LAMBDA --memory 5 \
        --model-out "$tmp/s.bin"
    tail -3 "$tmp/s"
    grep -q 'x 100000 features' "$tmp/s" || fail "want 100000 features"
    sk_check "$tmp/s" "$tmp/s.bin" "$tmp/s.train.svm" "$tmp/s.test.svm" 100000 1e-6
    ;;
admm_sklearn)
    job "$tmp/a" 4 "$lr" $ADMM --model-out "$tmp/a.bin"
    tail -3 "$tmp/a"
    grep -q ' converged$' "$tmp/a" || fail "ADMM did not converge"
    sk_check "$tmp/a" "$tmp/a.bin" "$tmp/d.train.csv" "$tmp/d.test.csv" 10 1e-7
    ;;
mock_op) mock_case 3 "$LR" rally_mock=3,0,1,0 rally_mock=1,3,0,0 rally_mock=0,9,1,0 ;;
mock_checkpoint) mock_case 1 "$LR" rally_mock=2,4,1,0,checkpoint ;;
mock_recovery) mock_case 2 "$LR" rally_mock=1,5,0,0,op,g rally_mock=2,5,0,0,recovery,g ;;
mock_load) mock_case 2 "$LR" rally_mock=1,5,0,0 rally_mock=1,0,0,1,load ;;
kill9) kill_case "$LR" 150 ;;
admm_mock) mock_case 2 "$ADMM" rally_mock=1,3,0,0 rally_mock=2,6,1,0,checkpoint ;;
admm_mock_recovery)
    mock_case 3 "$ADMM" rally_mock=1,5,0,0,op,g rally_mock=3,5,0,0,recovery,g \
        rally_mock=1,0,0,1,load ;;
admm_kill9) kill_case "$ADMM" 40 ;;
admm_k1_adjacent) mock_case 1 "$ADMM rally_local_replica=1" rally_mock=2,4,0,0 ;;
admm_k2_adjacent)
    mock_case 2 "$ADMM rally_local_replica=2" rally_mock=1,4,0,0,op,adj rally_mock=2,4,0,0,op,adj ;;
labels)
    # line 19000 lies in rank 3's quarter; its label becomes 2
    sed '19000s/^[01],/2,/' "$tmp/d.train.csv" >"$tmp/bad.csv"
    GREP="has the label 2; want -1, 0 or 1" "$here/../rigs/run_job.sh" nonzero 60 "$run" -n 4 "$lr" \
        --data "$tmp/bad.csv" --data-opt csv_label=0 >"$tmp/out" 2>&1 ||
        fail "want a non-zero exit naming the bad label"
    grep -q "^rally-run: rank . exited with status 2" "$tmp/out" || fail "want a worker's clean exit status 2"
    grep -m1 'has the label' "$tmp/out"
    ;;
admm_k1_lost) lost_case 1 ;;
admm_k2_lost) lost_case 2 ;;
snap_resume) snap_case "$LR" 4 150 ;;
admm_snap_resume) snap_case "$ADMM" 10 40 ", local model restored" ;;
*)
    fail "unknown case"
    ;;
esac
echo "linear_test $case_: passed"
