#!/bin/sh
# gbdt_test.sh CASE BUILD_DIR — rally-gbdt end to end (examples/gbdt).
# BUILD_DIR holds rally-run, rally-gbdt, rally-gbdt-mock.  Data: 20,000
# training rows x 8 features from tests/rigs/gbdt_xgb.py (a fixed seed), 20 % of
# the values missing except in the xgboost case.  Every job is bounded in
# time and must leave no process behind.
#   help         --help lists the flags; a bad flag is exit status 2
#   badinput     a label 2 for binary:logistic in rank 1's shard, or a bad
#                number: every worker stops with status 2, the error names
#                the row, no hang
#   xgboost      against xgboost.train(tree_method="hist") with the same
#                parameters and nthread = N: the same number of trees, test
#                log loss and AUC (logistic, N = 2) or RMSE (squared error,
#                N = 3) within 1 % relative
#   missing      the same with 20 % missing values, both default directions
#                learned; predictions of `rally-gbdt predict` on the saved
#                JSON model equal the job's own (--pred-out) byte for byte;
#                --show reads the JSON back to the same digest
#   mock_op          rank 1 dies entering a histogram allreduce of tree 4
#   mock_checkpoint  rank 2 dies inside the checkpoint of tree 5
#   mock_recovery    rank 1 dies in tree 3, rank 3 while serving its recovery
#                    (a rally_mock group, which run_job.sh gives a
#                    rally_mock_sync directory: rank 1 dies only once rank 3
#                    is inside the same call, else rank 3 may serve the
#                    recovery a call early and never die)
#   mock_load        rank 2 dies in tree 4, and again inside its
#                    rally_load_checkpoint
#   mock_bootstrap   rank 3 dies in the sketch allgather, rank 0 in tree 1
#   mock_interval    --checkpoint-every 3: rank 1 dies in tree 5, resumes
#                    after tree 3 and replays tree 4 and 5
#   kill9        kill -9 of a live worker mid-run
#                (mock_* and kill9: the model digest AND the digest of every
#                row's cached prediction equal the failure-free run's,
#                rally-run counts exactly the deaths and as many recovered, a
#                restarted rank reads the same shard and, when it restored
#                trees, says it rebuilt its prediction cache)
#   snap_resume  durable snapshots (rally-run --snapshot-dir D
#                --snapshot-every 2): once rank 0 printed "committed" for
#                snap-00000004, the launcher and every worker are frozen
#                (SIGSTOP) and killed (-9) together; the job left unfinished,
#                with no process behind; `rally-run --resume latest` continues
#                from it, every rank says it rebuilt its prediction cache from
#                the snapshot's trees, and the model digest AND the predictions
#                digest equal the uninterrupted run's
set -u
case_=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
run=$build/rally-run gb=$build/rally-gbdt mock=$build/rally-gbdt-mock
py=/usr/bin/python3
[ -x "$py" ] || py=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "gbdt_test $case_: $*"; [ -f "$tmp/out" ] && tail -40 "$tmp/out"; exit 1; }

gen() { # prefix missing objective
    "$py" "$here/../rigs/gbdt_xgb.py" gen "$tmp/$1" 20000 8 7 "$2" "$3" || fail "gbdt_xgb.py gen failed"
}
. "$here/../rigs/trainer_lib.sh"
digests() { grep -o 'model_digest=[0-9a-f]*\|predictions: digest=[0-9a-f]*' "$1" | tr '\n' ' '; }

check_recovery() { # out deaths
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

# compare out plain: both digests equal, and each printed
same_digests() {
    a=$(digests "$1") b=$(digests "$2")
    echo "failure-free: $b"
    echo "with failures: $a"
    [ -n "$b" ] && [ "$a" = "$b" ] || fail "digests differ"
}

GB="--data $tmp/m.train.csv --data-opt csv_label=0 --trees 8 --max-depth 3 --eta 0.3"
mock_case() { # deaths [gbdt flags --] rally_mock points...
    deaths=$1
    shift
    flags=""
    if [ "$1" = "--checkpoint-every" ]; then flags="$1 $2"; shift 2; fi
    gen m 0.2 binary:logistic
    job "$tmp/plain" 4 "$gb" $GB
    "$here/../rigs/run_job.sh" 0 90 "$run" -n 4 --max-restarts 4 "$mock" $GB $flags "$@" >"$tmp/out" 2>&1 ||
        fail "the run with failures failed"
    cat "$tmp/out"
    same_digests "$tmp/out" "$tmp/plain"
    check_recovery "$tmp/out" "$deaths"
}

xgb_case() { # prefix objective N flags...
    p=$1 obj=$2 n=$3
    shift 3
    job "$tmp/$p.out" "$n" "$gb" --data "$tmp/$p.train.csv" --data-opt csv_label=0 \
        --objective "$obj" --model-out "$tmp/$p.json" --pred-out "$tmp/$p.train.pred" "$@"
    grep -q '^\[0\] tree 1 train-' "$tmp/$p.out" || fail "no progress line per tree"
    "$gb" predict "$tmp/$p.json" "$tmp/$p.test.csv" --data-opt csv_label=0 \
        --out "$tmp/$p.test.pred" || fail "rally-gbdt predict failed"
    "$py" "$here/../rigs/gbdt_xgb.py" check "$tmp/$p" "$tmp/$p.json" "$tmp/$p.test.pred" "$n" ||
        fail "disagrees with xgboost ($obj)"
}

case $case_ in
help)
    "$gb" --help >"$tmp/out" 2>&1 || fail "--help failed"
    for f in --data --data-opt --objective --trees --max-depth --eta --lambda --gamma \
        --min-child-weight --max-bin --checkpoint-every --model-out --pred-out --json --show predict; do
        grep -q -- "$f" "$tmp/out" || fail "--help does not list $f"
    done
    "$gb" --no-such-flag >"$tmp/out" 2>&1
    [ $? -eq 2 ] || fail "a bad flag must exit 2"
    "$gb" --max-bin 256 --data x >"$tmp/out" 2>&1
    [ $? -eq 2 ] || fail "--max-bin 256 must exit 2"
    ;;
badinput)
    gen c 0 binary:logistic
    sed '15000s/^0,/2,/; 15000s/^1,/2,/' "$tmp/c.train.csv" >"$tmp/label.csv"
    GREP="label.csv: the row at byte .* has label 2; binary:logistic wants 0 or 1" \
        "$here/../rigs/run_job.sh" nonzero 60 "$run" -n 2 "$gb" --data "$tmp/label.csv" \
        --data-opt csv_label=0 >"$tmp/out" 2>&1 || fail "want a non-zero exit and the label's row"
    grep -q "^rally-run: rank . exited with status 2" "$tmp/out" || fail "want exit status 2"
    sed '300s/^\([^,]*,[^,]*\),[^,]*/\1,1.5x/' "$tmp/c.train.csv" >"$tmp/bad.csv"
    GREP="bad.csv:300:" "$here/../rigs/run_job.sh" nonzero 60 "$run" -n 2 "$gb" --data "$tmp/bad.csv" \
        --data-opt csv_label=0 >"$tmp/out" 2>&1 || fail "want a non-zero exit and file:line"
    grep -q "^rally-run: rank . exited with status 2" "$tmp/out" || fail "want exit status 2"
    cat "$tmp/out"
    ;;
xgboost)
    gen c 0 binary:logistic
    xgb_case c binary:logistic 2 --trees 30 --eta 0.1 --max-depth 4
    gen s 0 reg:squarederror
    xgb_case s reg:squarederror 3 --trees 30 --eta 0.1 --max-depth 5 --lambda 2 \
        --min-child-weight 5 --gamma 0.5 --max-bin 128
    ;;
missing)
    gen c 0.2 binary:logistic
    xgb_case c binary:logistic 3 --trees 30 --eta 0.1 --max-depth 5
    for dl in true false; do
        grep -q "\"default_left\": $dl" "$tmp/c.json" || fail "no split sends missing values $dl"
    done
    # predict on the training rows from the JSON model: the job's predictions
    "$gb" predict "$tmp/c.json" "$tmp/c.train.csv" --data-opt csv_label=0 >"$tmp/again" ||
        fail "rally-gbdt predict failed"
    [ "$(wc -l <"$tmp/again")" -eq 20000 ] || fail "predict printed $(wc -l <"$tmp/again") rows"
    cmp "$tmp/again" "$tmp/c.train.pred" || fail "predict from JSON differs from the job's predictions"
    "$gb" --show "$tmp/c.json" >"$tmp/shown" || fail "--show failed"
    cmp "$tmp/shown" "$tmp/c.json" || fail "--show does not give back the same JSON"
    grep -q "model_digest=$(sed -n 's/.*"model_digest": "\([0-9a-f]*\)".*/\1/p' "$tmp/c.json")" \
        "$tmp/c.out" || fail "the JSON's digest is not the job's"
    # a tampered model is refused
    sed 's/"leaf": -/"leaf": /' "$tmp/c.json" >"$tmp/bad.json"
    "$gb" predict "$tmp/bad.json" "$tmp/c.test.csv" --data-opt csv_label=0 >"$tmp/out" 2>&1 &&
        fail "a tampered model was accepted"
    grep -q "do not give its model_digest" "$tmp/out" || fail "want the digest complaint"
    echo "predict from JSON: 20000 rows equal to the job's; --show round-trips"
    ;;
mock_op) mock_case 1 rally_mock=1,3,1,0 ;;
mock_checkpoint) mock_case 1 rally_mock=2,4,4,0,checkpoint ;;
mock_recovery) mock_case 2 rally_mock=1,2,2,0,op,g rally_mock=3,2,2,0,recovery,g ;;
mock_load) mock_case 2 rally_mock=2,3,1,0 rally_mock=2,0,0,1,load ;;
mock_bootstrap) mock_case 2 rally_mock=3,0,2,0 rally_mock=0,0,4,0 ;;
mock_interval)
    mock_case 1 --checkpoint-every 3 rally_mock=1,1,7,0
    grep -q '^\[1\] rank 1 restarted: resuming after tree 3 (checkpoint version 1); prediction cache of [0-9]* rows rebuilt from 3 trees' \
        "$tmp/out" || fail "rank 1 did not resume after tree 3 with a rebuilt cache"
    ;;
kill9)
    gen m 0.2 binary:logistic
    job "$tmp/plain" 4 "$gb" $GB
    RALLY_TEST_TAG="gbdt-$$" timeout -k 5 60 "$run" -n 4 "$gb" $GB --pause-ms 150 \
        >"$tmp/out" 2>&1 &
    jobpid=$!
    wait_line "$tmp/out" '^\[0\] tree 3 ' "tree 3" 300 0.1
    kill_worker "$tmp/out" 2
    wait "$jobpid" || fail "the job failed after kill -9"
    cat "$tmp/out"
    same_digests "$tmp/out" "$tmp/plain"
    grep -q '^\[2\] rank 2 restarted: resuming after tree [0-9]* .*prediction cache of [0-9]* rows rebuilt' \
        "$tmp/out" || fail "rank 2 did not say it resumed with a rebuilt cache"
    check_recovery "$tmp/out" 1
    no_leftovers "gbdt-$$"
    ;;
snap_resume)
    gen m 0.2 binary:logistic
    job "$tmp/plain" 4 "$gb" $GB
    D=$tmp/snaps tag="gbdt-snap-$$"
    RALLY_TEST_TAG="$tag" timeout -k 5 60 "$run" -n 4 --snapshot-dir "$D" --snapshot-every 2 \
        "$gb" $GB --pause-ms 300 >"$tmp/out" 2>&1 &
    jobpid=$!
    wait_line "$tmp/out" '^\[0\] rally: rank 0: snapshot: committed .*/snap-00000004 ' \
        "snap-00000004's commit" 600 0.05
    kill_job "$tag"
    wait "$jobpid" 2>/dev/null
    grep -q '^\[0\] result:' "$tmp/out" && fail "the job finished before it was killed"
    cat "$tmp/out"
    no_leftovers "$tag"
    "$build/rally-snapshot" ls "$D/rally-gbdt" >"$tmp/ls" || fail "rally-snapshot ls failed"
    cat "$tmp/ls"
    # the newest complete one (a write cut short by the kill stays incomplete)
    s=$D/rally-gbdt/$(sed -n 's/^  \* \(snap-[0-9]*\) .*/\1/p' "$tmp/ls")
    [ -d "$s" ] || fail "rally-snapshot ls marks no newest complete snapshot"
    "$build/rally-snapshot" verify "$s" >/dev/null || fail "$s does not verify"
    inputs_kept "$tmp/out" "$s" 4
    job "$tmp/resumed" 4 --snapshot-dir "$D" --snapshot-every 2 --resume latest "$gb" $GB \
        --pause-ms 300
    cat "$tmp/resumed"
    grep -q "^rally-run: resuming from .*snap-[0-9]*: .* verified" "$tmp/resumed" ||
        fail "rally-run did not say what it resumed from"
    grep -q '^\[0\] tree 1 ' "$tmp/resumed" && fail "the resumed job started from scratch"
    for r in 0 1 2 3; do
        grep -q "^\[$r\] rank $r restarted: resuming after tree [1-9][0-9]* .*prediction cache of [0-9]* rows rebuilt from [1-9][0-9]* trees" \
            "$tmp/resumed" || fail "rank $r did not say it rebuilt its prediction cache"
    done
    same_digests "$tmp/resumed" "$tmp/plain"
    ;;
*)
    fail "unknown case"
    ;;
esac
echo "gbdt_test $case_: passed"
