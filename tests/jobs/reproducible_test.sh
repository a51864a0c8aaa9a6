#!/bin/sh
# reproducible_test.sh CASE BUILD_DIR — trainers with --reproducible give the
# same model, bit for bit, at any N (docs/determinism.md, "Sums that do not
# depend on N").  Every job is bounded in time and must leave no process
# behind.
#   kmeans_n      rally-kmeans --reproducible: one digest at N = 1, 2, 3, 4, 5
#                 and 8, with thresholds that put the sums on the tree,
#                 halving-doubling and the ring, over shm and TCP, and with
#                 partition=hash (other rows on every rank); without the flag
#                 N = 1 and 3 differ on these rows (the test can tell)
#   kmeans_fail   the same digest after deaths in k-means++ and in a Lloyd
#                 iteration (rally_mock), a kill -9, and a shrink 4 -> 3
#                 (--max-restarts 0 --min-workers 2): the failure-free model
#                 of any N
#   kmeans_mpi    rally-kmeans-mpi --reproducible under mpirun at N = 1, 3, 4
#                 (MPI's own reduction order): the same digest
#   kmeans_sklearn  the objective equals scikit-learn's from the same initial
#                 centroids to 1e-9 relative
#   kmeans_exact  one Lloyd step's centroids equal an exact reference
#                 (tests/rigs/kmeans_exact.py: fractions) bit for bit, at N = 1, 3
#                 and 4 (partition=hash), on values the faster lane must hand
#                 to the accumulator (1e-30 beside 1e3, subnormals, -0, +0);
#                 without the flag they differ
#   linear_n      rally-linear --reproducible (L-BFGS): one digest at N = 1,
#                 2, 3, 4, 5 and 8, with small thresholds, over shm and TCP, on
#                 sparse rows (the gradient added into bins); without the flag
#                 N = 1 and 3 differ; --solver admm is refused with a sentence
#   linear_fail   the same digest after a death in an evaluation (rally_mock),
#                 a kill -9, and across a shrink 4 -> 3
#   linear_mpi    rally-linear-mpi --reproducible under mpirun at N = 1, 3, 4
#   linear_sklearn  the model agrees with scikit-learn's LogisticRegression
#                 (objective and coefficients, tests/rigs/linear_sklearn.py)
#   gbdt_n        rally-gbdt --reproducible (20 % missing values): one digest
#                 at N = 1, 2, 3, 4, 5 and 8, with small thresholds, over shm
#                 and TCP, with partition=hash, and for reg:squarederror at
#                 N = 1 and 3; without the flag N = 1 and 3 differ
#   gbdt_fail     the same digest after deaths in the quantile rounds, the
#                 gradient grid and a histogram (rally_mock), a kill -9, and
#                 a shrink 4 -> 3
#   gbdt_mpi      rally-gbdt-mpi --reproducible under mpirun at N = 1, 3, 4
#   gbdt_xgboost  the model agrees with xgboost's hist (tests/rigs/gbdt_xgb.py
#                 check: test loss and AUC or RMSE within 1 %), logistic with
#                 and without missing values, squared error
set -u
case_=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
run=$build/rally-run km=$build/rally-kmeans kmock=$build/rally-kmeans-mock
lr=$build/rally-linear lmock=$build/rally-linear-mock
gb=$build/rally-gbdt gmock=$build/rally-gbdt-mock
py=/usr/bin/python3
[ -x "$py" ] || py=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "reproducible_test $case_: $*"; [ -f "$tmp/out" ] && tail -40 "$tmp/out"; exit 1; }
. "$here/../rigs/trainer_lib.sh"
digest() { grep -o 'model_digest=[0-9a-f]*' "$1"; }
objective() { sed -n 's/.*result: .*objective=\([^ ]*\)$/\1/p' "$1"; }
SMALL="rally_ring_threshold_bytes=4096 rally_hd_threshold_bytes=60000 rally_chunk_bytes=1024"
same() { # out-file what: its digest must be the reference run's ($tmp/ref)
    [ -n "$(digest "$1")" ] && [ "$(digest "$1")" = "$(digest "$tmp/ref")" ] ||
        { cp "$1" "$tmp/out"; fail "$2 gave '$(digest "$1")', N = 1 gave $(digest "$tmp/ref")"; }
}
deaths() { # out-file n: rally-run counted n deaths and as many recoveries
    grep -q "deaths=$2 recovered=$2 " "$1" || { cp "$1" "$tmp/out"; fail "not $2 death(s) seen"; }
}
kill9_same() { # line rank prog args...: a kill -9 of rank once rank 0 printed line: the same model
    line=$1 victim=$2
    shift 2
    RALLY_TEST_TAG="repro-$$" timeout -k 5 90 "$run" -n 3 "$@" >"$tmp/kill" 2>&1 &
    jobpid=$!
    wait_line "$tmp/kill" "^\[0\] $line " "$line" 300 0.1
    kill_worker "$tmp/kill" "$victim"
    wait "$jobpid" || { cp "$tmp/kill" "$tmp/out"; fail "the job with a kill -9 failed"; }
    no_leftovers "repro-$$"
    deaths "$tmp/kill" 1
    same "$tmp/kill" "a kill -9"
}
shrink_same() { # rank version mock args...: rank dies at version, is given up: 4 -> 3, the same model
    lost=$1 at=$2
    shift 2
    "$here/../rigs/run_job.sh" 0 90 "$run" -n 4 --min-workers 2 --max-restarts 0 "$@" \
        rally_mock=$lost,$at,0,0 >"$tmp/s" 2>&1 || { cp "$tmp/s" "$tmp/out"; fail "the shrink"; }
    grep -q "^rally-run: rank $lost lost for good: going on with 3 workers from version $at$" \
        "$tmp/s" || { cp "$tmp/s" "$tmp/out"; fail "no shrink"; }
    same "$tmp/s" "a shrink 4 -> 3"
}
sweep() { # prog args...: the same model at N = 2, 3, 4, 5 and 8, with thresholds that put the
    # sums on the tree, halving-doubling and the ring (N = 3, 8), and over shm and TCP (N = 4)
    for n in 2 3 4 5 8; do
        job "$tmp/n$n" $n "$@"
        same "$tmp/n$n" "N = $n"
    done
    for n in 3 8; do
        job "$tmp/s$n" $n "$@" $SMALL
        same "$tmp/s$n" "N = $n, small thresholds"
    done
    for t in shm tcp; do
        RALLY_TRANSPORT=$t job "$tmp/$t" 4 "$@"
        same "$tmp/$t" "N = 4 over $t"
    done
}
mpi_same() { # prog args...: under mpirun at N = 1, 3, 4, the same model
    for n in 1 3 4; do
        "$here/../rigs/mpi_job.sh" 0 120 $n "$@" >"$tmp/m$n" 2>&1 || { cp "$tmp/m$n" "$tmp/out"; fail "mpirun -n $n"; }
        same "$tmp/m$n" "librally_mpi at N = $n"
    done
}

case $case_ in
kmeans_*)
    "$build/rally-datagen" --rows 12000 --features 10 --centers 5 --spread 4 --seed 11 \
        --format csv -o "$tmp/d.csv" >/dev/null 2>&1 || fail "rally-datagen failed"
    DATA="--data $tmp/d.csv --data-opt csv_label=0"
    KM="$DATA -k 5 --iters 15 --reproducible"
    job "$tmp/ref" 1 "$km" $KM
    ;;
linear_*)
    "$py" "$here/../rigs/linear_sklearn.py" gen-dense "$tmp/d" 20000 10 3 || fail "generating the data failed"
    LR="--data $tmp/d.train.csv --data-opt csv_label=0 --lambda 1e-3 --reproducible"
    job "$tmp/ref" 1 "$lr" $LR
    ;;
gbdt_*)
    "$py" "$here/../rigs/gbdt_xgb.py" gen "$tmp/d" 20000 8 7 0.2 binary:logistic ||
        fail "generating the data failed"
    GDATA="--data $tmp/d.train.csv --data-opt csv_label=0"
    GB="$GDATA --trees 12 --max-depth 5 --reproducible"
    job "$tmp/ref" 1 "$gb" $GB
    ;;
esac

case $case_ in
kmeans_n)
    sweep "$km" $KM
    job "$tmp/hash" 3 "$km" $KM --data-opt partition=hash
    same "$tmp/hash" "N = 3, partition=hash"
    job "$tmp/p1" 1 "$km" $DATA -k 5 --iters 15
    job "$tmp/p3" 3 "$km" $DATA -k 5 --iters 15
    [ "$(digest "$tmp/p1")" != "$(digest "$tmp/p3")" ] ||
        fail "without --reproducible N = 1 and 3 gave one digest: this data cannot tell"
    ;;
kmeans_fail)
    job "$tmp/k1" 4 "$kmock" $KM rally_mock=2,0,3,0 rally_mock=1,4,0,0
    same "$tmp/k1" "deaths in k-means++ and iteration 4"
    deaths "$tmp/k1" 2
    kill9_same "iteration 3" 1 "$km" $KM --pause-ms 80
    shrink_same 3 5 "$kmock" $KM
    ;;
kmeans_mpi) mpi_same "$build/rally-kmeans-mpi" $KM ;;
kmeans_exact)
    "$py" "$here/../rigs/kmeans_exact.py" gen "$tmp/e.csv" "$tmp/e_init.csv" || fail "generating the data failed"
    EX="--data $tmp/e.csv --data-opt csv_label=0 -k 4 --init-in $tmp/e_init.csv --iters 1"
    for n in 1 3 4; do
        opt=
        [ $n = 4 ] && opt="--data-opt partition=hash"
        job "$tmp/e$n" $n "$km" $EX $opt --reproducible --model-out "$tmp/e$n.bin"
        "$km" --show "$tmp/e$n.bin" >"$tmp/e$n.json" || fail "--show failed"
        "$py" "$here/../rigs/kmeans_exact.py" check "$tmp/e.csv" "$tmp/e_init.csv" "$tmp/e$n.json" ||
            fail "N = $n: the centroids are not the exact sums"
    done
    job "$tmp/ep" 1 "$km" $EX --model-out "$tmp/ep.bin"
    "$km" --show "$tmp/ep.bin" >"$tmp/ep.json" || fail "--show failed"
    "$py" "$here/../rigs/kmeans_exact.py" check "$tmp/e.csv" "$tmp/e_init.csv" "$tmp/ep.json" >/dev/null &&
        fail "without --reproducible the centroids were exact too: this data cannot tell"
    ;;
kmeans_sklearn)
    job "$tmp/conv" 3 "$km" $KM --iters 300 --init-out "$tmp/init.csv"
    "$py" "$here/../rigs/kmeans_sklearn.py" check "$tmp/d.csv" "$tmp/init.csv" 300 "$(objective "$tmp/conv")" ||
        fail "disagrees with scikit-learn"
    ;;
linear_n)
    sweep "$lr" $LR
    "$py" "$here/../rigs/linear_sklearn.py" gen-sparse "$tmp/s" 3000 5000 30 5 ||
        fail "generating the sparse data failed"
    SP="--data $tmp/s.train.svm --lambda 1e-3 --memory 5 --reproducible"
    job "$tmp/sp1" 1 "$lr" $SP
    job "$tmp/sp3" 3 "$lr" $SP
    [ "$(digest "$tmp/sp1")" = "$(digest "$tmp/sp3")" ] || fail "sparse rows: N = 3 differs from N = 1"
    job "$tmp/p1" 1 "$lr" --data "$tmp/d.train.csv" --data-opt csv_label=0 --lambda 1e-3
    job "$tmp/p3" 3 "$lr" --data "$tmp/d.train.csv" --data-opt csv_label=0 --lambda 1e-3
    [ "$(digest "$tmp/p1")" != "$(digest "$tmp/p3")" ] ||
        fail "without --reproducible N = 1 and 3 gave one digest: this data cannot tell"
    "$here/../rigs/run_job.sh" nonzero 30 "$run" -n 2 "$lr" $LR --solver admm >"$tmp/out" 2>&1 ||
        fail "--solver admm --reproducible was taken"
    grep -q "rally-linear: --reproducible needs --solver lbfgs" "$tmp/out" || fail "no refusal"
    ;;
linear_fail)
    job "$tmp/k" 4 "$lmock" $LR rally_mock=1,3,0,0
    deaths "$tmp/k" 1
    same "$tmp/k" "a death at version 3"
    kill9_same "iteration 3" 2 "$lr" $LR --pause-ms 60
    shrink_same 2 4 "$lmock" $LR
    ;;
linear_mpi) mpi_same "$build/rally-linear-mpi" $LR ;;
linear_sklearn)
    job "$tmp/n3" 3 "$lr" $LR --model-out "$tmp/m.bin"
    same "$tmp/n3" "N = 3"
    "$lr" --show "$tmp/m.bin" >"$tmp/model.json" || fail "--show failed"
    "$py" "$here/../rigs/linear_sklearn.py" check "$tmp/d.train.csv" "$tmp/d.test.csv" 10 1e-3 \
        "$tmp/model.json" "$(objective "$tmp/n3")" 1e-6 || fail "disagrees with scikit-learn"
    ;;
gbdt_n)
    sweep "$gb" $GB
    job "$tmp/hash" 3 "$gb" $GB --data-opt partition=hash
    same "$tmp/hash" "N = 3, partition=hash"
    "$py" "$here/../rigs/gbdt_xgb.py" gen "$tmp/r" 20000 8 9 0.1 reg:squarederror ||
        fail "generating the regression data failed"
    SQ="--data $tmp/r.train.csv --data-opt csv_label=0 --objective reg:squarederror --max-bin 64"
    job "$tmp/sq1" 1 "$gb" $SQ --trees 8 --reproducible
    job "$tmp/sq3" 3 "$gb" $SQ --trees 8 --reproducible
    [ "$(digest "$tmp/sq1")" = "$(digest "$tmp/sq3")" ] ||
        fail "reg:squarederror: N = 3 differs from N = 1"
    job "$tmp/p1" 1 "$gb" $GDATA --trees 12 --max-depth 5
    job "$tmp/p3" 3 "$gb" $GDATA --trees 12 --max-depth 5
    [ "$(digest "$tmp/p1")" != "$(digest "$tmp/p3")" ] ||
        fail "without --reproducible N = 1 and 3 gave one digest: this data cannot tell"
    ;;
gbdt_fail)
    # version 0: the bootstrap allreduce and allgather (seq 0, 1), then the
    # four quantile rounds (seq 2 .. 5); in a tree, seq 0 is the grid and 1
    # the root histogram
    job "$tmp/k1" 4 "$gmock" $GB rally_mock=2,0,3,0 rally_mock=3,2,0,0 rally_mock=1,4,1,0
    same "$tmp/k1" "deaths in a quantile round, a grid and a histogram"
    deaths "$tmp/k1" 3
    kill9_same "tree 3" 1 "$gb" $GB --pause-ms 80
    shrink_same 3 5 "$gmock" $GB
    ;;
gbdt_mpi) mpi_same "$build/rally-gbdt-mpi" $GB ;;
gbdt_xgboost)
    xgb() { # prefix seed missing objective N flags...: rally-gbdt --reproducible against xgboost
        p=$tmp/$1 obj=$4 n=$5
        "$py" "$here/../rigs/gbdt_xgb.py" gen "$p" 20000 8 "$2" "$3" "$obj" || fail "gbdt_xgb.py gen failed"
        shift 5
        job "$p.out" "$n" "$gb" --data "$p.train.csv" --data-opt csv_label=0 --objective "$obj" \
            --model-out "$p.json" --reproducible "$@"
        "$gb" predict "$p.json" "$p.test.csv" --data-opt csv_label=0 --out "$p.test.pred" ||
            fail "rally-gbdt predict failed"
        "$py" "$here/../rigs/gbdt_xgb.py" check "$p" "$p.json" "$p.test.pred" "$n" ||
            fail "disagrees with xgboost ($obj, $3 missing)"
    }
    xgb c 7 0 binary:logistic 2 --trees 30 --eta 0.1 --max-depth 4
    xgb m 7 0.2 binary:logistic 3 --trees 30 --eta 0.1 --max-depth 5
    xgb s 7 0 reg:squarederror 3 --trees 30 --eta 0.1 --max-depth 5 --lambda 2 \
        --min-child-weight 5 --gamma 0.5 --max-bin 128
    ;;
*) fail "no case $case_" ;;
esac
echo "reproducible_test $case_: ok"
