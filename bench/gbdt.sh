#!/bin/bash
# bench/gbdt.sh <builddir> — seconds per tree of rally-gbdt at N = 1, 2, 4, 8
# beside xgboost.train(tree_method="hist") with nthread = N on the same data
# and machine; where a tree's time goes (rank 0's progress lines); and the
# prediction-cache rebuild of a restarted worker against one tree's time, with
# the time from the kill to the job back in step (rally-run's "recovered"
# line).  `make bench` (bench/run.sh) ends with it (BENCH_TRAINERS=0 skips it);
# it also runs alone (examples/gbdt/README.md, "Benchmark", has a table).
#
# Data: BENCH_GBDT_ROWS (1000000) x BENCH_GBDT_FEATURES (32) dense, two
# overlapping Gaussian blobs (rally-datagen --centers 2 --spread 8), label =
# the blob.  Trees: BENCH_GBDT_TREES (10), depth 6, max_bin 255, eta 0.3.
# Knobs: BENCH_GBDT_NS ("1 2 4 8"), BENCH_TIMEOUT (900 s per run).
set -euo pipefail

die() { echo "bench gbdt: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: bench/gbdt.sh <builddir>"
BUILD=$(cd "$1" && pwd) || die "no build directory $1"
SRC=$(cd "$(dirname "$0")/.." && pwd)
ROWS=${BENCH_GBDT_ROWS:-1000000}
FEATURES=${BENCH_GBDT_FEATURES:-32}
TREES=${BENCH_GBDT_TREES:-10}
NS=${BENCH_GBDT_NS:-"1 2 4 8"}
TMO=${BENCH_TIMEOUT:-900}
OUT=$BUILD/bench-results/gbdt
DATADIR=$BUILD/bench-data
mkdir -p "$OUT" "$DATADIR"
for t in rally-run rally-gbdt rally-gbdt-mock rally-datagen; do
    [ -x "$BUILD/$t" ] || die "$BUILD/$t is missing: build first (make build)"
done
PY=/usr/bin/python3
"$PY" -c 'import xgboost' 2>/dev/null || die "python3-xgboost is missing (scripts/deps.sh installs it)"

DATA=$DATADIR/gbdt-r$ROWS-f$FEATURES-c2-s8-seed1.csv
if [ ! -s "$DATA" ]; then
    echo "bench gbdt: generating $DATA" >&2
    "$BUILD/rally-datagen" --rows "$ROWS" --features "$FEATURES" --centers 2 --spread 8 \
        --seed 1 --format csv -o "$DATA" >&2
    sync
fi
GB=(--data "$DATA" --data-opt csv_label=0 --trees "$TREES" --max-depth 6 --max-bin 255 --eta 0.3)
RESULTS=$OUT/results.txt
: >"$RESULTS"

# median of a column over trees 2.. of rank 0's progress lines
# (tree T ... time S s (histograms H, allreduce A, splits P, rows R))
col() { # log field
    sed -n 's/^\[0\] tree \([0-9]*\) train-[a-z]* [^ ]* time \([0-9.]*\) s (histograms \([0-9.]*\), allreduce \([0-9.]*\), splits \([0-9.]*\), rows \([0-9.]*\))$/\1 \2 \3 \4 \5 \6/p' "$1" |
        awk -v f="$2" '$1 > 1 {print $f}' | sort -g |
        awk '{v[NR] = $1} END {if (NR == 0) exit 1; print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

for n in $NS; do
    log=$OUT/rally-n$n.log
    printf 'bench gbdt: N=%s rally ... ' "$n" >&2
    start=$SECONDS
    timeout "$TMO" "$BUILD/rally-run" -n "$n" "$BUILD/rally-gbdt" "${GB[@]}" >"$log" 2>&1 ||
        { tail -n 20 "$log" >&2; die "rally-gbdt failed at N=$n (log: $log)"; }
    echo "$((SECONDS - start)) s" >&2
    echo "rally $n $(col "$log" 2) $(col "$log" 3) $(col "$log" 4) $(col "$log" 5) $(col "$log" 6)" >>"$RESULTS"
    printf 'bench gbdt: N=%s xgboost ... ' "$n" >&2
    start=$SECONDS
    timeout "$TMO" "$PY" "$SRC/tests/gbdt_xgb.py" time "$DATA" "$n" "$TREES" 6 255 >>"$RESULTS" ||
        die "the xgboost timing failed at N=$n"
    echo "$((SECONDS - start)) s" >&2
done

# The rebuild: rank 1 of 4 dies entering tree TREES - 1's first allreduce
# (version TREES - 2), restarts, and rebuilds its cache from TREES - 2 trees.
v=$((TREES - 2))
log=$OUT/rally-rebuild.log
printf 'bench gbdt: N=4 with a failure in tree %s ... ' "$((v + 1))" >&2
start=$SECONDS
timeout "$TMO" "$BUILD/rally-run" -n 4 "$BUILD/rally-gbdt-mock" "${GB[@]}" "rally_mock=1,$v,0,0" \
    >"$log" 2>&1 || { tail -n 20 "$log" >&2; die "the run with a failure failed (log: $log)"; }
echo "$((SECONDS - start)) s" >&2
rebuild=$(sed -n 's/.*rebuilt from [0-9]* trees in \([0-9.]*\) s$/\1/p' "$log")
back=$(sed -n 's/.*job back in step \([0-9.]*\) s after the failure.*/\1/p' "$log")
rows1=$(sed -n 's/.*prediction cache of \([0-9]*\) rows.*/\1/p' "$log")

echo
echo "rally-gbdt: seconds per tree (median of trees 2..$TREES), $ROWS rows x $FEATURES features dense,"
echo "depth 6, max_bin 255; xgboost $("$PY" -c 'import xgboost; print(xgboost.__version__)') hist with nthread = N; $(nproc) CPUs"
echo
printf '%-3s %10s %10s %8s   %-44s\n' N rally xgboost ratio "rally: histograms / allreduce / splits / rows"
awk '
$1 == "rally" { r[$2] = $3; h[$2] = $4; a[$2] = $5; s[$2] = $6; w[$2] = $7; ns[++k] = $2 }
$1 == "xgboost" { x[$2] = $3 }
END {
    for (i = 1; i <= k; i++) {
        n = ns[i]
        printf "%-3s %10.4f %10.4f %7.2fx   %.4f / %.4f / %.4f / %.4f\n", n, r[n], x[n], r[n] / x[n], h[n], a[n], s[n], w[n]
    }
}' "$RESULTS"
echo
echo "prediction-cache rebuild (N=4, rank 1: $rows1 rows, $v trees): $rebuild s;" \
    "one tree at N=4: $(awk '$1 == "rally" && $2 == 4 {print $3}' "$RESULTS") s;" \
    "kill to back in step: $back s"
