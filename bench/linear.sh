#!/bin/bash
# bench/linear.sh <builddir> — seconds per iteration of rally-linear (L-BFGS and
# consensus ADMM) at N = 1, 2, 4, 8 beside scikit-learn's
# LogisticRegression(solver="lbfgs") on the same data and machine.  `make bench`
# (bench/run.sh) ends with it (BENCH_TRAINERS=0 skips it); it also runs alone.
#
# Knobs: BENCH_LINEAR_ROWS (1000000), BENCH_LINEAR_FEATURES (32),
#        BENCH_LINEAR_NS ("1 2 4 8"), BENCH_LINEAR_ITERS (20), BENCH_LINEAR_ADMM_ITERS (10),
#        BENCH_LINEAR_ROUNDS (2: L-BFGS plain and --reproducible, A B B A),
#        BENCH_TIMEOUT (900 s per run)
set -euo pipefail

die() { echo "bench linear: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: bench/linear.sh <builddir>"
BUILD=$(cd "$1" && pwd) || die "no build directory $1"
ROWS=${BENCH_LINEAR_ROWS:-1000000}
FEATURES=${BENCH_LINEAR_FEATURES:-32}
NS=${BENCH_LINEAR_NS:-"1 2 4 8"}
ITERS=${BENCH_LINEAR_ITERS:-20}
AITERS=${BENCH_LINEAR_ADMM_ITERS:-10}
TMO=${BENCH_TIMEOUT:-900}
LAMBDA=1e-4
OUT=$BUILD/bench-results/linear
DATADIR=$BUILD/bench-data
mkdir -p "$OUT" "$DATADIR"
for t in rally-run rally-linear rally-linear-mock rally-datagen; do
    [ -x "$BUILD/$t" ] || die "$BUILD/$t is missing: build first (make build)"
done
PY=/usr/bin/python3
. "$(dirname "$0")/lib.sh"
"$PY" -c 'import sklearn' 2>/dev/null || die "scikit-learn is missing (scripts/deps.sh installs it)"

# Two overlapping Gaussian blobs (labels 0 and 1), dense, as LIBSVM: rally's
# reader and scikit-learn's load_svmlight_file both read it quickly.
DATA=$DATADIR/linear-r$ROWS-f$FEATURES-c2-s8-seed1.svm
if [ ! -s "$DATA" ]; then
    echo "bench linear: generating $DATA" >&2
    "$BUILD/rally-datagen" --rows "$ROWS" --features "$FEATURES" --centers 2 --spread 8 \
        --seed 1 --format libsvm -o "$DATA" >&2
    sync
fi
RESULTS=$OUT/results.txt
: >"$RESULTS"
: >"$OUT/recovery.txt"

# median of the iteration times after the first, from rank 0's progress lines
median_iter() {
    sed -n 's/^\[0\] iteration \([0-9]*\) .* time \([0-9.]*\) s.*/\1 \2/p' "$1" |
        awk '$1 > 1 {print $2}' | sort -g |
        awk '{v[NR] = $1} END {if (NR == 0) exit 1; print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# lbfgs-exact: L-BFGS with --reproducible (exact sums), run beside the
# plain one at each N, ROUNDS times A B B A (plain, exact on odd rounds;
# exact, plain on even ones), so that each ratio compares runs of the same
# minute; the table shows round 1, make bench's summary every round
# ($OUT/rounds.txt: "ROUND exactN|plainN SECONDS").
ROUNDS=${BENCH_LINEAR_ROUNDS:-2}
: >"$OUT/rounds.txt"
for solver in lbfgs admm; do
    its=$ITERS
    [ $solver = admm ] && its=$AITERS
    rounds=1
    [ $solver = lbfgs ] && rounds=$ROUNDS
    for n in $NS; do
      for ((round = 1; round <= rounds; round++)); do
        runs=$solver
        if [ $solver = lbfgs ]; then
            runs="lbfgs lbfgs-exact"
            [ $((round % 2)) = 1 ] || runs="lbfgs-exact lbfgs"
        fi
        for run in $runs; do
            flag=
            [ $run = lbfgs ] || [ $run = admm ] || flag=--reproducible
            log=$OUT/$run-n$n.log
            printf 'bench linear: %s N=%s ... ' "$run" "$n" >&2
            start=$SECONDS
            timeout "$TMO" "$BUILD/rally-run" -n "$n" "$BUILD/rally-linear" --data "$DATA" \
                --solver $solver $flag --lambda $LAMBDA --iters "$its" --tol 1e-300 >"$log" 2>&1 ||
                { tail -n 20 "$log" >&2; die "rally-linear failed at N=$n (log: $log)"; }
            t=$(median_iter "$log") || die "no iteration times in $log"
            echo "$((SECONDS - start)) s" >&2
            if [ "$round" = 1 ]; then echo "$run $n $t" >>"$RESULTS"; fi
            if [ $solver = lbfgs ]; then echo "$round ${run#lbfgs-}$n $t" >>"$OUT/rounds.txt"; fi
        done
      done
    done
done

# The time from a kill to the job back in step (rally-run's "recovered" line):
# rank 1 dies (librally_mock) entering the first collective of iteration 5.
RN=${BENCH_LINEAR_RECOVERY_N:-4}
for solver in lbfgs admm; do
    log=$OUT/$solver-recovery-n$RN.log
    printf 'bench linear: %s N=%s with a death ... ' "$solver" "$RN" >&2
    start=$SECONDS
    timeout "$TMO" "$BUILD/rally-run" -n "$RN" "$BUILD/rally-linear-mock" --data "$DATA" \
        --solver $solver --lambda $LAMBDA --iters 8 --tol 1e-300 rally_mock=1,5,0,0 >"$log" 2>&1 ||
        { tail -n 20 "$log" >&2; die "rally-linear-mock failed (log: $log)"; }
    echo "$((SECONDS - start)) s" >&2
    back=$(sed -n 's/.*job back in step \([0-9.]*\) s after the failure.*/\1/p' "$log" | head -1)
    echo "recovery $solver $RN ${back:-?}" >>"$OUT/recovery.txt"
done

printf 'bench linear: scikit-learn ... ' >&2
start=$SECONDS
sk=$("$PY" - "$DATA" "$FEATURES" "$LAMBDA" "$ITERS" <<'PY'
import sys, time, warnings
import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import LogisticRegression
X, y = load_svmlight_file(sys.argv[1], n_features=int(sys.argv[2]), dtype=np.float32)
X = X.toarray().astype(np.float64)
lam, iters = float(sys.argv[3]), int(sys.argv[4])
warnings.simplefilter("ignore")
best = None
for _ in range(2):
    m = LogisticRegression(solver="lbfgs", C=1 / (lam * X.shape[0]), tol=1e-300, max_iter=iters)
    t = time.perf_counter()
    m.fit(X, y)
    t = (time.perf_counter() - t) / m.n_iter_[0]
    best = t if best is None or t < best else best
print(best)
PY
) || die "the scikit-learn timing failed"
echo "$((SECONDS - start)) s" >&2
sk_version=$("$PY" -c 'import sklearn; print(sklearn.__version__)')

cat <<HDR
== rally-linear: seconds per iteration ========================================
data    : $ROWS rows x $FEATURES features, dense, as LIBSVM (float32 values, computed in
          float64), 2 overlapping blobs; $(basename "$DATA") in $DATADIR; lambda = $LAMBDA
method  : rally: rally-run -n N rally-linear --solver S --iters I --tol 1e-300 (never stops
          early); an L-BFGS iteration = the line search's evaluations (each a pass over the
          shard + one allreduce of $((FEATURES + 2)) doubles) + a checkpoint; an ADMM iteration =
          the worker's local L-BFGS solve + one allreduce + a checkpoint with local models.
          Timed by rank 0 between consecutive iterations; the median of iterations 2..I.
          scikit-learn $sk_version: LogisticRegression(solver="lbfgs", C = 1/(lambda n), tol=1e-300,
          max_iter=$ITERS) on the same float64 data; fit time / iterations, best of 2.
          N > $(nproc) cores is oversubscribed (workers are single-threaded).
HDR
awk -v sk="$sk" '
    BEGIN { printf "%-11s %-3s %12s %16s %10s\n", "solver", "N", "s/iter", "sklearn s/iter", "/ plain" }
    { t[$1, $2] = $3; row[NR] = $0 }
    END { for (i = 1; i <= NR; i++) { split(row[i], f, " ")
            x = f[1] == "lbfgs-exact" && t["lbfgs", f[2]] > 0 ? sprintf("%9.2fx", f[3] / t["lbfgs", f[2]]) : ""
            printf "%-11s %-3s %12.4f %16.4f %10s\n", f[1], f[2], f[3], sk, x } }' "$RESULTS"
echo "lbfgs-exact: --reproducible (exact sums: the same model at any N), its run beside the plain one"
echo "  exact / plain over $ROUNDS rounds A B B A, median (min-max); load $(load1)," \
    "memcpy $(memcpy_gbs "$BUILD") GB/s:"
for n in $NS; do
    x=$(spread "$OUT/rounds.txt" "exact$n" "lbfgs$n" | awk '{ printf "%.2fx (%.2f-%.2f)", $2, $1, $3 }')
    echo "  N = $n: $x"
    case " 2 4 " in *" $n "*) ;; *) continue ;; esac
    summary_row "L-BFGS --reproducible, s per iteration, N = $n ($ROWS x $FEATURES)" \
        "$(spread "$OUT/rounds.txt" "exact$n" | awk '{ printf "%.4f s", $2 }')" \
        "the plain iteration $(spread "$OUT/rounds.txt" "lbfgs$n" | awk '{ printf "%.4f s", $2 }')" \
        "$(spread "$OUT/rounds.txt" "lbfgs$n" "exact$n" | awk '{ printf "%.2fx (%.2f-%.2f)", $2, $1, $3 }')" \
        "memcpy $(memcpy_gbs "$BUILD") GB/s, load $(load1)"
    target_row "L-BFGS --reproducible within 1.5x of the plain iteration, N = $n: exact / plain" \
        "$x" "$(spread "$OUT/rounds.txt" "exact$n" "lbfgs$n" | awk '{ print $2 }')" "<=" 1.5x
done
echo "time from a kill to the job back in step (rank 1 killed entering iteration 5, N = $RN;"
echo "the restarted worker reads its shard again, then is served the checkpoint):"
awk '{ printf "  %-6s %s s\n", $2, $4 }' "$OUT/recovery.txt"
echo "logs and raw results (solver N seconds): $OUT"
