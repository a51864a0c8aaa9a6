#!/bin/sh
# lda_test.sh CASE BUILD_DIR — rally-lda (examples/lda) end to end.  Every job
# is bounded in time (run_job.sh, or timeout) and must leave no process behind.
#   help     --help and --version; bad flags, a CSV file, partition=hash and a
#            count that is not whole are refused with a sentence naming them;
#            --show prints a saved model as JSON with its digest
#   nsame    the model is the same bits at N = 1, 2, 3 and 4, after a rank
#            killed and recovered in place (rally_mock), after a shrink 4 -> 3
#            (rally_mock, --max-restarts 0, --min-workers 3: the documents'
#            topics move to their new owners) and after a grow 3 -> 4
#            (SIGUSR2, --max-workers 4)
#   chaos    seeded schedules (LDA_CHAOS_SEEDS, default 1 2 3 4) of 5 workers,
#            --min-workers 2, --max-restarts 1, mixing restarts in place and
#            shrinks: every run ends with the N = 1 run's digest
#   snapshot a snapshot of 4 workers resumed at 2 and at 8 ends with the bits
#            of the job that was not stopped
#   sklearn  held-out perplexity within 5% of scikit-learn's
#            LatentDirichletAllocation scored by the same rule
#            (tests/rigs/lda_sklearn.py), and the rule agrees with rally-lda's
set -u
case_=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
run=$build/rally-run lda=$build/rally-lda mock=$build/rally-lda-mock
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "lda_test $case_: $*"; [ -f "$tmp/out" ] && tail -40 "$tmp/out"; exit 1; }
. "$here/../rigs/trainer_lib.sh"
digest() { grep -o 'model_digest=[0-9a-f]*' "$1"; }
has() { grep -q -- "$2" "$1" || fail "no line '$2'"; }

# a corpus of 1500 documents: the first 1200 to train on, the rest held out
"$build/rally-datagen" --docs 1500 --vocab 300 --topics 8 --doc-words 40 --seed 5 \
    --topics-out "$tmp/topics.csv" -o "$tmp/all.svm" >/dev/null 2>&1 || fail "rally-datagen failed"
head -n 1200 "$tmp/all.svm" >"$tmp/d.svm"
tail -n 300 "$tmp/all.svm" >"$tmp/h.svm"
LDA="--data $tmp/d.svm --topics 8 --iters 20 --quiet"

same() { # out-file what: its digest must be the N = 1 run's
    [ -n "$(digest "$1")" ] && [ "$(digest "$1")" = "$(digest "$tmp/n1")" ] ||
        { cp "$1" "$tmp/out"; fail "$2 gave $(digest "$1"), N = 1 gave $(digest "$tmp/n1")"; }
}

case $case_ in
help)
    "$lda" --help | grep -q '^usage: rally-run -n N rally-lda' || fail "--help"
    "$lda" --version | grep -q '^rally-lda (rally) ' || fail "--version"
    "$lda" --topics 0 --data "$tmp/d.svm" >"$tmp/out" 2>&1 && fail "--topics 0 was taken"
    has "$tmp/out" "rally-lda: --topics '0' is not a whole number in \[1, 65535\]"
    "$lda" --alpha -1 --data "$tmp/d.svm" >"$tmp/out" 2>&1 && fail "--alpha -1 was taken"
    has "$tmp/out" "rally-lda: --alpha"
    printf '1,2,3\n4,5,6\n' >"$tmp/c.csv"
    "$here/../rigs/run_job.sh" nonzero 30 "$run" -n 2 "$lda" --data "$tmp/c.csv" >"$tmp/out" 2>&1 ||
        fail "a CSV file"
    has "$tmp/out" "c.csv: documents are LIBSVM lines 'label word:count ...', not CSV"
    "$here/../rigs/run_job.sh" nonzero 30 "$run" -n 2 "$lda" --data "$tmp/d.svm" \
        --data-opt partition=hash >"$tmp/out" 2>&1 || fail "partition=hash"
    has "$tmp/out" "only the range partition owns by (drop partition=hash)"
    printf '0 1:2 3:1\n0 2:2.5\n' >"$tmp/half.svm"
    "$here/../rigs/run_job.sh" nonzero 30 "$run" -n 1 "$lda" --data "$tmp/half.svm" >"$tmp/out" 2>&1 ||
        fail "a count of 2.5"
    has "$tmp/out" "half.svm: the document at byte 10 counts word 2 2.5 times; a count is a whole number from 0 to 1000000"
    job "$tmp/out" 2 "$lda" $LDA --model-out "$tmp/m.bin" --json --top-words 3
    "$lda" --show "$tmp/m.bin" >"$tmp/show" || fail "--show"
    grep -q "\"format\": \"rally-lda\", .*\"topics\": 8, \"vocabulary\": 300, \"iteration\": 20" \
        "$tmp/show" || fail "--show: $(head -2 "$tmp/show")"
    grep -q "\"model_digest\": \"$(digest "$tmp/out" | cut -d= -f2)\"" "$tmp/show" ||
        fail "--show's digest is not the result line's"
    grep -q '"top": \[\[[0-9]*, [0-9]*\], \[[0-9]*, [0-9]*\], \[[0-9]*, [0-9]*\]\]' "$tmp/out" ||
        fail "--json --top-words 3"
    printf 'RALLYLDA junk' >"$tmp/bad.bin"
    "$lda" --show "$tmp/bad.bin" >"$tmp/out" 2>&1 && fail "--show of junk"
    has "$tmp/out" "bad.bin: not a rally-lda model"
    ;;
nsame)
    job "$tmp/n1" 1 "$lda" $LDA
    for n in 2 3 4; do
        job "$tmp/n$n" $n "$lda" $LDA
        same "$tmp/n$n" "N = $n"
    done
    job "$tmp/k" 3 "$mock" $LDA rally_mock=1,7,0,0
    has "$tmp/k" "^\[1\] rank 1 restarted: resuming after iteration 6 (checkpoint version 7)$"
    same "$tmp/k" "a recovery in place"
    "$here/../rigs/run_job.sh" 0 90 "$run" -n 4 --min-workers 3 --max-restarts 0 "$mock" $LDA \
        rally_mock=2,5,0,0 >"$tmp/s" 2>&1 || { cp "$tmp/s" "$tmp/out"; fail "the shrink"; }
    has "$tmp/s" "^rally-run: rank 2 lost for good: going on with 3 workers from version 5$"
    has "$tmp/s" "^\[3\] rank 2 of 3 now: reading its shard again$"
    same "$tmp/s" "a shrink 4 -> 3"
    RALLY_TEST_TAG="lda-$$" timeout -k 5 90 "$run" -n 3 --max-workers 4 "$lda" $LDA \
        --iters 60 --pause-ms 40 >"$tmp/g" 2>&1 &
    jobpid=$!
    wait_line "$tmp/g" '^\[0\] shard 0 fingerprint' "the first shard" 300 0.1
    launcher=$(pgrep -o -P "$jobpid" -x rally-run)
    [ -n "$launcher" ] || fail "no rally-run under $jobpid"
    kill -USR2 "$launcher"
    wait "$jobpid" || { cp "$tmp/g" "$tmp/out"; fail "the grow failed"; }
    no_leftovers "lda-$$"
    cp "$tmp/g" "$tmp/out"
    has "$tmp/g" "^rally-run: taking in 1 worker: going on with 4 workers from version"
    job "$tmp/n1" 1 "$lda" $LDA --iters 60
    same "$tmp/g" "a grow 3 -> 4"
    ;;
chaos)
    # seeded schedules of 5 workers, --min-workers 2, --max-restarts 1: each
    # seed kills 2 to 4 ranks (rally_mock, as launched) at chosen versions,
    # some once (restarted in place), some twice (given up), never more than
    # two in one version (each local model has two copies besides its own:
    # rally_local_replica=2; three neighbours lost at once lose one, a clear
    # error that elastic_records pins); whatever the schedule, the model is
    # the failure-free one's
    job "$tmp/n1" 1 "$lda" $LDA
    for seed in ${LDA_CHAOS_SEEDS:-1 2 3 4}; do
        pts=$(awk -v seed="$seed" 'function at(lo, span,   v) { do v = lo + int(rand() * span)
                while (cnt[v] >= 2); cnt[v]++; return v }
            BEGIN { srand(seed); n = 2 + int(rand() * 3); gone = 0
            for (i = 0; i < n; i++) { r = int(rand() * 5); if (used[r]++) continue
                v = at(2, 12); printf "rally_mock=%d,%d,0,0 ", r, v
                if (gone < 3 && rand() < 0.5) { gone++; printf "rally_mock=%d,%d,0,1 ", r, at(v + 1, 4) } } }')
        "$here/../rigs/run_job.sh" 0 90 "$run" -n 5 --min-workers 2 --max-restarts 1 "$mock" $LDA $pts \
            >"$tmp/c" 2>&1 || { cp "$tmp/c" "$tmp/out"; fail "seed $seed: the job ($pts)"; }
        ! grep -q 'never fired' "$tmp/c" || { cp "$tmp/c" "$tmp/out"; fail "seed $seed: a kill point did not fire ($pts)"; }
        same "$tmp/c" "seed $seed ($pts)"
        echo "lda_test chaos: seed $seed: $pts-> $(grep -o 'deaths=.*' "$tmp/c"): $(digest "$tmp/c")"
    done
    ;;
snapshot)
    job "$tmp/n1" 4 --snapshot-dir "$tmp/s" --snapshot-every 5 --keep-snapshots --snapshot-keep 9 \
        "$lda" $LDA
    snap=$tmp/s/rally-lda/snap-00000010
    "$build/rally-snapshot" show "$snap" | grep -q '^local models *records' ||
        fail "rally-snapshot show does not say records"
    for n in 2 8; do
        "$here/../rigs/run_job.sh" 0 60 "$run" -n $n --snapshot-dir "$tmp/s$n" --resume "$snap" "$lda" \
            $LDA >"$tmp/r$n" 2>&1 || { cp "$tmp/r$n" "$tmp/out"; fail "the resume at $n"; }
        same "$tmp/r$n" "the resume at $n"
    done
    ;;
sklearn)
    job "$tmp/out" 2 "$lda" --data "$tmp/d.svm" --topics 8 --iters 200 --quiet \
        --heldout "$tmp/h.svm" --model-out "$tmp/m.bin"
    p=$(sed -n 's/.*result: .* perplexity=\([^ ]*\)$/\1/p' "$tmp/out")
    [ -n "$p" ] || fail "no perplexity on the result line"
    has "$tmp/out" "^\[0\] heldout: [0-9]* words scored, 0 outside the vocabulary skipped$"
    py=/usr/bin/python3 # Debian's, with python3-sklearn (scripts/deps.sh)
    [ -x "$py" ] || py=python3
    "$py" "$here/../rigs/lda_sklearn.py" "$tmp/d.svm" "$tmp/h.svm" "$tmp/topics.csv" \
        "$tmp/m.bin" "$p" >"$tmp/py" 2>&1 || { cp "$tmp/py" "$tmp/out"; fail "lda_sklearn.py"; }
    cat "$tmp/py"
    ;;
*)
    fail "unknown case"
    ;;
esac
exit 0
