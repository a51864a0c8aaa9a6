#!/bin/bash
# bench/exact.sh <builddir> — what an exact sum costs (bench/bench_exact.c):
# RALLY_SUM_EXACT against RALLY_SUM of the same doubles at 8 B, 1 MiB and
# 16 MiB, interleaved rep by rep (A B B A) in one job, at N = 2 and 4; the
# bytes each sends; and an accumulator's additions against a plain loop.
set -euo pipefail
build=$(cd "$1" && pwd)
echo "exact sums: RALLY_SUM_EXACT / RALLY_SUM of doubles, interleaved (median, min-max of per-rep ratios)"
printf '%-3s %10s %12s %12s %8s %15s %10s\n' N bytes sum_us exact_us ratio range wire_x
for n in 2 4; do
    "$build/rally-run" -n "$n" "$build/bench/bench_exact" 8:400 1048576:30 16777216:8 2>&1 |
        awk -v n="$n" '$2 == "EXACT" { printf "%-3s %10s %12s %12s %8s %15s %10.2f\n", n, $3, $5,
            $6, $7 "x", $8 "-" $9, $10 / $3 }
            $2 == "XSUM_ADD" && n == 2 { add = sprintf("rows into 64 elements: plain %s ns, exact %s ns a value (%sx)", $4, $5, $6) }
            $2 == "XSUM_BINS" && n == 2 { bins = sprintf("values into 4096 bins:  plain %s ns, exact %s ns a value (%sx)", $4, $5, $6) }
            END { if (add != "") print "accumulator, " add "\naccumulator, " bins }'
done

# The trainers with and without --reproducible: seconds an iteration (the
# median of iterations 5 .. 20 of one run; for rally-gbdt of trees 5 .. 200),
# runs interleaved A B B A.
reps=${BENCH_EXACT_REPS:-4}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/rally-datagen" --rows 200000 --features 50 --centers 10 --seed 4 -o "$tmp/k.svm" >/dev/null 2>&1
"$build/rally-datagen" --rows 200000 --features 50 --centers 2 --spread 6 --seed 9 -o "$tmp/l.svm" >/dev/null 2>&1
"$build/rally-datagen" --rows 200000 --features 50 --centers 2 --spread 8 --seed 9 -o "$tmp/g.svm" >/dev/null 2>&1
iter_s() { # N trainer-args...: the median iteration time of one run
    n=$1
    shift
    "$build/rally-run" -n "$n" "$@" 2>&1 |
        grep -E '^\[0\] (iteration ([5-9]|1[0-9]|20)|tree ([5-9]|[1-9][0-9]|1[0-9][0-9]|200)) ' |
        grep -o 'time [0-9.]*' | awk '{print $2}' | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
}
echo
echo "trainers, 200,000 rows x 50 features: seconds an iteration, --reproducible against plain ($reps runs each, A B B A)"
printf '%-8s %-3s %-22s %-22s %s\n' trainer N plain reproducible ratio
for t in kmeans linear gbdt; do
    case $t in
    kmeans) args="$build/rally-kmeans --data $tmp/k.svm -k 10 --iters 20 --fixed-iters" ;;
    linear) args="$build/rally-linear --data $tmp/l.svm --iters 20 --tol 1e-30" ;;
    gbdt) args="$build/rally-gbdt --data $tmp/g.svm --trees 200" ;; # overlapping blobs, as bench/gbdt.sh
    esac
    for n in 2 4; do
        for ((i = 0; i < reps; i++)); do
            if ((i % 2 == 0)); then
                echo "p $(iter_s $n $args)"; echo "r $(iter_s $n $args --reproducible)"
            else
                echo "r $(iter_s $n $args --reproducible)"; echo "p $(iter_s $n $args)"
            fi
        done | awk -v t=$t -v n=$n '
            { v[$1, ++c[$1]] = $2 }
            function cell(k,   i, j, x, a, m) { m = c[k]; for (i = 1; i <= m; i++) a[i] = v[k, i]
                for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
                med[k] = a[int((m + 1) / 2)]; return sprintf("%.4f (%.4f-%.4f)", med[k], a[1], a[m]) }
            END { p = cell("p"); r = cell("r")
                  printf "%-8s %-3s %-22s %-22s %.2fx\n", t, n, p, r, med["r"] / med["p"] }'
    done
done
echo "targets (issue): k-means and L-BFGS within 1.5x, GBDT within 2x"
