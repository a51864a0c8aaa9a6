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
