#!/bin/bash
# bench/kmeans.sh <builddir> — seconds per Lloyd iteration of rally-kmeans at
# N = 1, 2, 4, 8 beside scikit-learn's Lloyd iteration on the same data and
# machine (bench/README.md, "k-means").  Called by bench/run.sh; runs alone too.
#
# Knobs: BENCH_KMEANS_ROWS (1000000), BENCH_KMEANS_FEATURES (32), BENCH_KMEANS_K (16),
#        BENCH_KMEANS_NS ("1 2 4 8"), BENCH_KMEANS_ITERS (11), BENCH_TIMEOUT (900 s per run)
set -euo pipefail

die() { echo "bench kmeans: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: bench/kmeans.sh <builddir>"
BUILD=$(cd "$1" && pwd) || die "no build directory $1"
SRC=$(cd "$(dirname "$0")/.." && pwd)
ROWS=${BENCH_KMEANS_ROWS:-1000000}
FEATURES=${BENCH_KMEANS_FEATURES:-32}
K=${BENCH_KMEANS_K:-16}
NS=${BENCH_KMEANS_NS:-"1 2 4 8"}
ITERS=${BENCH_KMEANS_ITERS:-11}
TMO=${BENCH_TIMEOUT:-900}
OUT=$BUILD/bench-results/kmeans
DATADIR=$BUILD/bench-data
mkdir -p "$OUT" "$DATADIR"
for t in rally-run rally-kmeans rally-datagen; do
    [ -x "$BUILD/$t" ] || die "$BUILD/$t is missing: build first (make build)"
done

# scikit-learn from Debian (the reference), installed when missing.
PY=/usr/bin/python3
if ! "$PY" -c 'import sklearn' 2>/dev/null; then
    echo "bench kmeans: installing python3-sklearn" >&2
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-sklearn python3-numpy >/dev/null
fi

# The data set, generated once and kept (its name says how it was made).
# Spread 8 around 16 centres in [-10, 10): overlapping blobs, so Lloyd takes
# many iterations before it converges and every timed iteration is a full one.
DATA=$DATADIR/kmeans-r$ROWS-f$FEATURES-c$K-s8-seed1.csv
if [ ! -s "$DATA" ]; then
    echo "bench kmeans: generating $DATA" >&2
    "$BUILD/rally-datagen" --rows "$ROWS" --features "$FEATURES" --centers "$K" --spread 8 \
        --seed 1 --format csv -o "$DATA" >&2
    sync # the file's dirty pages would otherwise be written back during the first runs
fi
INIT=$OUT/init.csv
RESULTS=$OUT/results.txt
: >"$RESULTS"

# median of the iteration times after the first, from rank 0's progress lines
median_iter() {
    sed -n 's/^\[0\] iteration \([0-9]*\) objective [^ ]* time \([0-9.]*\) s.*/\1 \2/p' "$1" |
        awk '$1 > 1 {print $2}' | sort -g |
        awk '{v[NR] = $1} END {if (NR == 0) exit 1; print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

first=1
for n in $NS; do
    log=$OUT/rally-n$n.log
    printf 'bench kmeans: N=%s rally ... ' "$n" >&2
    start=$SECONDS
    if [ $first -eq 1 ]; then # k-means++ here; every other run starts from its centroids
        init=(--init-out "$INIT")
        first=0
    else
        init=(--init-in "$INIT")
    fi
    timeout "$TMO" "$BUILD/rally-run" -n "$n" "$BUILD/rally-kmeans" --data "$DATA" \
        --data-opt csv_label=0 -k "$K" --iters "$ITERS" --fixed-iters "${init[@]}" >"$log" 2>&1 ||
        { tail -n 20 "$log" >&2; die "rally-kmeans failed at N=$n (log: $log)"; }
    t=$(median_iter "$log") || die "no iteration times in $log"
    echo "$((SECONDS - start)) s" >&2
    echo "rally $n $t" >>"$RESULTS"
done

printf 'bench kmeans: scikit-learn ... ' >&2
start=$SECONDS
sk=$("$PY" "$SRC/tests/rigs/kmeans_sklearn.py" time "$DATA" "$INIT" 2 $((ITERS + 1))) ||
    die "the scikit-learn timing failed"
echo "$((SECONDS - start)) s" >&2
sk_t=$(echo "$sk" | awk '{print $2}')
echo "sklearn 0 $sk_t" >>"$RESULTS"
threads=$("$PY" -c 'import sklearn.cluster
from threadpoolctl import threadpool_info as t
print(max([i["num_threads"] for i in t() if i["user_api"] == "openmp"] or [1]))' 2>/dev/null || echo "?")
sk_version=$("$PY" -c 'import sklearn; print(sklearn.__version__)')

cat <<HDR
== rally-kmeans: seconds per Lloyd iteration ==================================
data    : $ROWS rows x $FEATURES features (CSV, float32 values, computed in float64), k = $K;
          $(basename "$DATA") in $DATADIR
method  : rally: rally-run -n N rally-kmeans --iters $ITERS --fixed-iters, all N from the same
          k-means++ centroids; an iteration = the distance pass over the shard + one
          allreduce of $((K * FEATURES + K + 1)) doubles + a checkpoint, timed by rank 0 between
          consecutive iterations; the median of iterations 2..$ITERS.
          scikit-learn $sk_version: KMeans(init=the same centroids, n_init=1, algorithm="lloyd",
          tol=0) on the same float64 data; (fit time at max_iter=$((ITERS + 1)) - at max_iter=2) /
          (iterations run between them), best of 3 fits each; its threads: $threads.
          speed-up = scikit-learn time / rally time (> 1: rally is faster).
          N > $(nproc) cores is oversubscribed (workers are single-threaded).
HDR
awk -v sk="$sk_t" '
    BEGIN { printf "%-3s %14s %16s %9s\n", "N", "rally s/iter", "sklearn s/iter", "speed-up" }
    $1 == "rally" { printf "%-3s %14.4f %16.4f %9.2f\n", $2, $3, sk, sk / $3 }' "$RESULTS"
echo "logs and raw results (peer N seconds): $OUT"
