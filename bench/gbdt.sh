#!/bin/bash
# bench/gbdt.sh <builddir> — seconds per tree of rally-gbdt at N = 1, 2, 4, 8
# beside xgboost.train(tree_method="hist") with nthread = N on the same data
# and machine, each tree on both sides with its train-logloss evaluation
# (rally-gbdt's progress line; xgboost's evals=[(dtrain, "train")]); where a tree's time goes (rank 0's progress lines); and the
# prediction-cache rebuild of a restarted worker against one tree's time, with
# the time from the kill to the job back in step (rally-run's "recovered"
# line).  `make bench` (bench/run.sh) ends with it (BENCH_TRAINERS=0 skips it);
# it also runs alone (examples/gbdt/README.md, "Benchmark", has a table).
#
# The machine may be shared, so each repeat runs rally-gbdt and xgboost back
# to back at every N, and the table gives medians over the repeats: of each
# side's seconds per tree and of the per-repeat ratio rally / xgboost.
#
# Data: BENCH_GBDT_ROWS (1000000) x BENCH_GBDT_FEATURES (32) dense, two
# overlapping Gaussian blobs (rally-datagen --centers 2 --spread 8), label =
# the blob.  Trees: BENCH_GBDT_TREES (200, what users train: the model grows
# past the sizes where a per-tree checkpoint could cost more than its copy),
# depth 6, max_bin 255, eta 0.3.
# Knobs: BENCH_GBDT_NS ("1 2 4 8"), BENCH_GBDT_REPEATS (3), BENCH_TIMEOUT
# (900 s per run), BENCH_GBDT_BEFORE (another build directory: its
# rally-gbdt is timed in the same repeats too, as "before").
set -euo pipefail

die() { echo "bench gbdt: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: bench/gbdt.sh <builddir>"
BUILD=$(cd "$1" && pwd) || die "no build directory $1"
SRC=$(cd "$(dirname "$0")/.." && pwd)
ROWS=${BENCH_GBDT_ROWS:-1000000}
FEATURES=${BENCH_GBDT_FEATURES:-32}
TREES=${BENCH_GBDT_TREES:-200}
NS=${BENCH_GBDT_NS:-"1 2 4 8"}
REPS=${BENCH_GBDT_REPEATS:-3}
BEFORE=${BENCH_GBDT_BEFORE:-}
TMO=${BENCH_TIMEOUT:-900}
OUT=$BUILD/bench-results/gbdt
DATADIR=$BUILD/bench-data
mkdir -p "$OUT" "$DATADIR"
for t in rally-run rally-gbdt rally-gbdt-mock rally-datagen; do
    [ -x "$BUILD/$t" ] || die "$BUILD/$t is missing: build first (make build)"
done
if [ -n "$BEFORE" ]; then
    BEFORE=$(cd "$BEFORE" && pwd) || die "no directory $BENCH_GBDT_BEFORE"
    [ -x "$BEFORE/rally-gbdt" ] || die "$BEFORE/rally-gbdt is missing"
fi
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

# one rally-gbdt run: "LABEL N REPEAT seconds histograms allreduce splits rows"
rally_run() { # label exe n rep
    local log=$OUT/$1-n$3-r$4.log start=$SECONDS
    printf 'bench gbdt: repeat %s N=%s %s ... ' "$4" "$3" "$1" >&2
    timeout "$TMO" "$BUILD/rally-run" -n "$3" "$2" "${GB[@]}" >"$log" 2>&1 ||
        { tail -n 20 "$log" >&2; die "rally-gbdt failed at N=$3 (log: $log)"; }
    echo "$((SECONDS - start)) s" >&2
    echo "$1 $3 $4 $(col "$log" 2) $(col "$log" 3) $(col "$log" 4) $(col "$log" 5) $(col "$log" 6)" >>"$RESULTS"
}

for rep in $(seq "$REPS"); do
    for n in $NS; do
        rally_run rally "$BUILD/rally-gbdt" "$n" "$rep"
        [ -z "$BEFORE" ] || rally_run before "$BEFORE/rally-gbdt" "$n" "$rep"
        printf 'bench gbdt: repeat %s N=%s xgboost ... ' "$rep" "$n" >&2
        start=$SECONDS
        x=$(timeout "$TMO" "$PY" "$SRC/tests/rigs/gbdt_xgb.py" time "$DATA" "$n" "$TREES" 6 255) ||
            die "the xgboost timing failed at N=$n"
        echo "$x" | awk -v r="$rep" '{print $1, $2, r, $3}' >>"$RESULTS"
        echo "$((SECONDS - start)) s" >&2
    done
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
echo "rally-gbdt: seconds per tree (median of trees 2..$TREES, then of $REPS repeats), $ROWS rows x"
echo "$FEATURES features dense, depth 6, max_bin 255; xgboost $("$PY" -c 'import xgboost; print(xgboost.__version__)') hist with nthread = N;"
echo "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); ratio = median over repeats of rally / xgboost"
echo
awk -v before="$BEFORE" '
function med(s,    a, n, i, j, t) { # median of a space-separated list
    n = split(s, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ t[$1, $2, $3] = $4 }
$1 == "rally" { if (!($2 in seen)) { seen[$2] = 1; ns[++k] = $2 }
    h[$2] = h[$2] " " $5; a[$2] = a[$2] " " $6; s[$2] = s[$2] " " $7; w[$2] = w[$2] " " $8 }
END {
    printf "%-3s %9s %9s %7s", "N", "rally", "xgboost", "ratio"
    if (before != "") printf " %9s %7s", "before", "ratio"
    printf "   %s\n", "rally: histograms / allreduce / splits / rows"
    for (i = 1; i <= k; i++) {
        n = ns[i]; R = X = Q = B = QB = ""
        for (r = 1; (("rally", n, r) in t); r++) {
            R = R " " t["rally", n, r]; X = X " " t["xgboost", n, r]
            Q = Q " " t["rally", n, r] / t["xgboost", n, r]
            if (before != "") { B = B " " t["before", n, r]; QB = QB " " t["before", n, r] / t["xgboost", n, r] }
        }
        printf "%-3s %9.4f %9.4f %6.2fx", n, med(R), med(X), med(Q)
        if (before != "") printf " %9.4f %6.2fx", med(B), med(QB)
        printf "   %.4f / %.4f / %.4f / %.4f\n", med(h[n]), med(a[n]), med(s[n]), med(w[n])
    }
}' "$RESULTS"
echo
echo "prediction-cache rebuild (N=4, rank 1: $rows1 rows, $v trees): $rebuild s;" \
    "one tree at N=4: $(awk '$1 == "rally" && $2 == 4 && $3 == 1 {t = $4} END {print (t == "" ? "(N = 4 not timed)" : t " s")}' "$RESULTS");" \
    "kill to back in step: $back s"
