#!/bin/sh
# kmeans_test.sh CASE BUILD_DIR — rally-kmeans end to end (examples/kmeans).
# BUILD_DIR holds rally-run, rally-datagen, rally-kmeans, rally-kmeans-mock.
# Every job is bounded in time (run_job.sh, or timeout for the kill -9 case)
# and must leave no process behind.
#   help         --help lists the flags; a bad flag is exit status 2
#   sklearn      the final objective equals scikit-learn's KMeans(init=the same
#                centroids, n_init=1, algorithm="lloyd", tol=0) to 1e-9
#                relative, run to convergence and stopped after 2 iterations;
#                the saved model prints as JSON
#   nagree       N = 1, 2, 4, 8 (and the same rows as LIBSVM) agree to 1e-9
#                relative; two runs at N = 4 give the same digest bit for bit
#   mock_allreduce   rank 1 dies entering the allreduce of Lloyd iteration 3
#   mock_checkpoint  rank 2 dies inside the checkpoint of iteration 4
#   mock_init        rank 3 dies during k-means++ and rank 0 in iteration 2
#   kill9        kill -9 of a live worker mid-run
#                (mock_* and kill9: the digest equals the failure-free run's,
#                rally-run counts exactly the deaths and as many recovered, and
#                a restarted rank logs the same shard fingerprint every time)
#   input_changed    rank 1 dies (rally_mock) and its replacement reads a shard
#                with one row edited (a wrapper picks the file by a marker the
#                first incarnation left): the job fails, exit status 4, naming
#                rank 1 and both fingerprints once; rally_input_check=0 lets
#                the same job finish
#   malformed    a bad number in rank 3's shard: every worker stops, exit
#                status non-zero, the error names file:line:column, no hang
#   files        the centroid file is read by rally's CSV reader (plain CSV
#                whatever its name; its errors name file:line:column; an empty
#                field or a wrong k stops every worker with status 2); the
#                model file is written through a temporary that does not stay
#                behind, and an unwritable one is exit status 1
set -u
case_=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
run=$build/rally-run km=$build/rally-kmeans mock=$build/rally-kmeans-mock
py=/usr/bin/python3
[ -x "$py" ] || py=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "kmeans_test $case_: $*"; [ -f "$tmp/out" ] && tail -40 "$tmp/out"; exit 1; }

# 20,000 rows x 8 features around 6 centres: converges in 7 iterations.
data=$tmp/d.csv
"$build/rally-datagen" --rows 20000 --features 8 --centers 6 --spread 2 --seed 7 --format csv \
    -o "$data" >/dev/null 2>&1 || fail "rally-datagen failed"
KM="--data $data --data-opt csv_label=0 -k 6"

. "$here/../rigs/trainer_lib.sh"
digest() { grep -o 'model_digest=[0-9a-f]*' "$1"; }
objective() { sed -n 's/.*result: .*objective=\([^ ]*\)$/\1/p' "$1"; }

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
        if [ "$d" -gt 0 ]; then
            echo "rank $r: $lines fingerprint lines, all $(grep "^\[$r\] shard $r fingerprint " "$1" |
                head -1 | awk '{print $5}')"
        fi
    done
}

mock_case() { # deaths points...
    deaths=$1
    shift
    job "$tmp/plain" 4 "$km" $KM
    "$here/../rigs/run_job.sh" 0 90 "$run" -n 4 --max-restarts 4 "$mock" $KM "$@" >"$tmp/out" 2>&1 ||
        fail "the run with failures failed"
    cat "$tmp/out"
    [ "$(digest "$tmp/out")" = "$(digest "$tmp/plain")" ] ||
        fail "digest $(digest "$tmp/out"), want $(digest "$tmp/plain")"
    check_recovery "$tmp/out" "$deaths"
}

case $case_ in
help)
    "$km" --help >"$tmp/out" 2>&1 || fail "--help failed"
    for f in --data --data-opt --clusters --iters --seed --init-in --init-out --model-out --json \
        --show; do
        grep -q -- "$f" "$tmp/out" || fail "--help does not list $f"
    done
    "$km" --no-such-flag >"$tmp/out" 2>&1
    [ $? -eq 2 ] || fail "a bad flag must exit 2"
    "$km" -k 0 --data x >"$tmp/out" 2>&1
    [ $? -eq 2 ] || fail "-k 0 must exit 2"
    ;;
sklearn)
    job "$tmp/conv" 2 "$km" $KM --init-out "$tmp/init.csv" --model-out "$tmp/model.bin" --json
    cat "$tmp/conv"
    "$py" "$here/../rigs/kmeans_sklearn.py" check "$data" "$tmp/init.csv" 300 "$(objective "$tmp/conv")" ||
        fail "disagrees with scikit-learn (run to convergence)"
    job "$tmp/two" 2 "$km" $KM --init-in "$tmp/init.csv" --iters 2
    "$py" "$here/../rigs/kmeans_sklearn.py" check "$data" "$tmp/init.csv" 2 "$(objective "$tmp/two")" ||
        fail "disagrees with scikit-learn (2 iterations)"
    "$km" --show "$tmp/model.bin" >"$tmp/json" || fail "--show failed"
    "$py" -c 'import json, sys
m = json.load(open(sys.argv[1]))
assert m["k"] == 6 and m["features"] == 8 and len(m["centroids"]) == 6, m
assert m["model_digest"] == sys.argv[2], (m["model_digest"], sys.argv[2])
print("json: k=%d features=%d iteration=%d converged=%s" % (m["k"], m["features"], m["iteration"], m["converged"]))' \
        "$tmp/json" "$(digest "$tmp/conv" | cut -d= -f2)" || fail "--show printed bad JSON"
    ;;
nagree)
    for n in 1 2 4 8; do
        job "$tmp/n$n" "$n" "$km" $KM
        echo "N=$n: $(grep 'result:' "$tmp/n$n")"
    done
    job "$tmp/n4b" 4 "$km" $KM
    # the same rows as LIBSVM (other byte ranges, the feature count by MAX)
    "$build/rally-datagen" --rows 20000 --features 8 --centers 6 --spread 2 --seed 7 \
        --format libsvm -o "$tmp/d.svm" >/dev/null 2>&1 || fail "rally-datagen failed"
    job "$tmp/svm" 4 "$km" --data "$tmp/d.svm" -k 6
    echo "N=4 LIBSVM: $(grep 'result:' "$tmp/svm")"
    [ "$(digest "$tmp/n4")" = "$(digest "$tmp/n4b")" ] || fail "two runs at N=4 differ"
    "$py" -c 'import sys
v = [float(x) for x in sys.argv[1:]]
bad = [x for x in v if abs(x - v[0]) > 1e-9 * abs(v[0])]
sys.exit(1 if bad or not v else 0)' "$(objective "$tmp/n1")" "$(objective "$tmp/n2")" \
        "$(objective "$tmp/n4")" "$(objective "$tmp/n8")" "$(objective "$tmp/svm")" || fail "objectives differ across N"
    ;;
mock_allreduce) mock_case 1 rally_mock=1,3,0,0 ;;
mock_checkpoint) mock_case 1 rally_mock=2,4,1,0,checkpoint ;;
mock_init) mock_case 2 rally_mock=3,0,5,0 rally_mock=0,2,0,0 ;;
kill9)
    job "$tmp/plain" 4 "$km" $KM
    RALLY_TEST_TAG="kmeans-$$" timeout -k 5 60 "$run" -n 4 "$km" $KM --pause-ms 100 \
        >"$tmp/out" 2>&1 &
    jobpid=$!
    wait_line "$tmp/out" '^\[0\] iteration 3 ' "iteration 3" 300 0.1
    kill_worker "$tmp/out" 2
    wait "$jobpid" || fail "the job failed after kill -9"
    cat "$tmp/out"
    [ "$(digest "$tmp/out")" = "$(digest "$tmp/plain")" ] ||
        fail "digest $(digest "$tmp/out"), want $(digest "$tmp/plain")"
    grep -q '^\[2\] rank 2 restarted: resuming after iteration' "$tmp/out" ||
        fail "rank 2 did not say it resumed"
    check_recovery "$tmp/out" 1
    no_leftovers "kmeans-$$"
    ;;
input_changed)
    # line 7000 lies in rank 1's quarter: its second field changes
    sed '7000s/^\([^,]*\),[^,]*/\1,0.5/' "$data" >"$tmp/edited.csv"
    cat >"$tmp/pick.sh" <<EOS
#!/bin/sh
# the first incarnation of each rank reads d.csv, a restarted one edited.csv
if [ -e "$tmp/started.\$RALLY_TASK_ID" ]; then d=$tmp/edited.csv; else d=$data; fi
touch "$tmp/started.\$RALLY_TASK_ID"
exec "$mock" --data "\$d" "\$@"
EOS
    chmod +x "$tmp/pick.sh"
    "$here/../rigs/run_job.sh" 4 60 "$run" -n 4 "$tmp/pick.sh" --data-opt csv_label=0 -k 6 \
        rally_mock=1,2,0,0 >"$tmp/out" 2>&1 || fail "want exit status 4"
    cat "$tmp/out"
    fps=$(sed -n 's/^\[1\] shard 1 fingerprint \([0-9a-f]*\) .*/\1/p' "$tmp/out")
    first=$(echo "$fps" | sed -n 1p) second=$(echo "$fps" | sed -n 2p)
    [ -n "$second" ] && [ "$first" != "$second" ] || fail "rank 1's replacement read the same rows"
    want="rank 1 read another input after its restart: incarnation 2 has fingerprint $second"
    want="$want (scheme range), incarnation 1 had $first (scheme range)"
    [ "$(grep -c -- "$want" "$tmp/out")" -eq 1 ] || fail "want once: $want"
    grep -q "^rally-run: $want" "$tmp/out" || fail "rally-run does not name the cause"
    ! grep -q 'model_digest=' "$tmp/out" || fail "a model came out of the changed input"
    rm -f "$tmp"/started.*
    "$here/../rigs/run_job.sh" 0 60 "$run" -n 4 "$tmp/pick.sh" --data-opt csv_label=0 -k 6 \
        rally_mock=1,2,0,0 rally_input_check=0 >"$tmp/out" 2>&1 ||
        fail "rally_input_check=0 did not let the job finish"
    grep -q 'model_digest=' "$tmp/out" || fail "no model with rally_input_check=0"
    ;;
malformed)
    # line 19000 lies in rank 3's quarter; its third field becomes "1.5x"
    sed '19000s/^\([^,]*,[^,]*\),[^,]*/\1,1.5x/' "$data" >"$tmp/bad.csv"
    col=$(sed -n '19000p' "$tmp/bad.csv" | awk -F, '{print length($1) + length($2) + 3}')
    GREP="bad.csv:19000:$col: the field '1.5x' is not a number" "$here/../rigs/run_job.sh" nonzero 60 "$run" -n 4 \
        "$km" --data "$tmp/bad.csv" --data-opt csv_label=0 -k 6 >"$tmp/out" 2>&1 ||
        fail "want a non-zero exit and the error's file:line:column"
    cat "$tmp/out"
    grep -q "^rally-run: rank . exited with status 2" "$tmp/out" || fail "want a worker's clean exit status 2"
    ;;
files)
    mkdir "$tmp/m"
    job "$tmp/a" 2 "$km" $KM --init-out "$tmp/init.csv" --model-out "$tmp/m/model.bin"
    [ "$(ls -A "$tmp/m")" = "model.bin" ] || fail "the model directory holds: $(ls -A "$tmp/m")"
    "$km" --show "$tmp/m/model.bin" | grep -q "\"$(digest "$tmp/a" | cut -d= -f2)\"" ||
        fail "--show does not give the run's digest"
    # the same centroids, read back under a name that would mean tabs to the
    # data reader's auto mode: the same final centroids and objective (not
    # the same digest: the model holds the RNG state, which k-means++ moved)
    cp "$tmp/init.csv" "$tmp/init.tsv"
    job "$tmp/a2" 2 "$km" $KM --init-in "$tmp/init.csv" --json
    job "$tmp/b" 2 "$km" $KM --init-in "$tmp/init.tsv" --json
    job "$tmp/a" 2 "$km" $KM --json
    for o in a2 b; do
        [ "$(objective "$tmp/$o")" = "$(objective "$tmp/a")" ] &&
            [ "$(grep '^\[0\]  *\[' "$tmp/$o")" = "$(grep '^\[0\]  *\[' "$tmp/a")" ] &&
            [ "$(grep -c '^\[0\]  *\[' "$tmp/a")" -eq 6 ] ||
            fail "--init-in of --init-out's centroids ($o) ends elsewhere than k-means++ did"
    done
    sed '2s/^\([^,]*,[^,]*\),[^,]*/\1,1.5x/' "$tmp/init.csv" >"$tmp/bad.csv"
    col=$(sed -n '2p' "$tmp/bad.csv" | awk -F, '{print length($1) + length($2) + 3}')
    sed '3s/^\([^,]*\),[^,]*/\1,/' "$tmp/init.csv" >"$tmp/hole.csv"
    head -n 5 "$tmp/init.csv" >"$tmp/five.csv"
    for c in "bad.csv:bad.csv:2:$col: the field '1.5x' is not a number" \
        "hole.csv:hole.csv: centroid 3 (the line at byte " \
        "five.csv:five.csv holds 5 centroids of 8 numbers; want k = 6 of 8"; do
        f=${c%%:*} want=${c#*:}
        GREP=$want "$here/../rigs/run_job.sh" nonzero 60 "$run" -n 2 "$km" $KM --init-in "$tmp/$f" \
            >"$tmp/out" 2>&1 || fail "--init-in $f: want a non-zero exit and '$want'"
        grep -q "^rally-run: rank 0 exited with status 2" "$tmp/out" ||
            fail "--init-in $f: want rank 0's exit status 2"
        echo "--init-in $f: $(grep -m1 'rally-kmeans: ' "$tmp/out")"
    done
    GREP="no-such-dir/model.bin.tmp." "$here/../rigs/run_job.sh" nonzero 60 "$run" -n 2 "$km" $KM \
        --model-out "$tmp/no-such-dir/model.bin" >"$tmp/out" 2>&1 ||
        fail "--model-out into a missing directory: want a non-zero exit and the file's name"
    grep -q "^rally-run: rank 0 exited with status 1" "$tmp/out" ||
        fail "--model-out into a missing directory: want rank 0's exit status 1"
    ;;
*)
    fail "unknown case"
    ;;
esac
echo "kmeans_test $case_: passed"
