#!/bin/sh
# bench/robust.sh <builddir> — what fault tolerance costs, and how long a
# recovery takes (called by bench/run.sh; runs alone too).
#   1. robust vs plain allreduce (float32 sum), interleaved rep by rep in one
#      job: the public call (result cached for recovery) against the plain
#      collective under it; median of the reps, max over ranks per rep.
#   2. verified results: the robust call with rally_verify_every=1 against
#      off, jobs interleaved A B B A.
#   3. time from a kill to the job back in step: rank 1 dies (mock) on
#      entering an iteration; the iteration's time minus the median
#      iteration, max over ranks, for 1 MiB and 100 MiB global models;
#      beside it one warm transfer of the model (a ring shift between warm
#      buffers, same run) and what recovery took beyond it (a whole host
#      lost, copies against XOR parity: bench/hostloss.sh).
#   4. what a checkpoint costs: a copied global model vs a lazy one, and
#      local models replicated to k = 1, 2, 3 ring successors; beside each
#      its reference in the same run (a warm memcpy of the model, or k warm
#      ring shifts of it) and the ratio checkpoint / reference.
set -e
build=${1:-build}
NS=${BENCH_NS:-"2 4 8"}
run="$build/rally-run"

echo
echo "robust vs plain allreduce (float32 sum; median us; overhead = robust / plain - 1;"
echo " out_of_place = the plain collective into a second buffer, the part of the overhead"
echo " that keeps the input intact for a retry; the rest is the copy back and the cache)"
printf '%-3s %10s %12s %14s %12s %9s %13s\n' N bytes plain_us out_of_place_us robust_us overhead out_of_place
for n in $NS; do
    "$run" -n "$n" "$build/bench/bench_robust" 8:300 4096:300 65536:100 1048576:30 16777216:9 \
        67108864:5 268435456:3 2>&1 |
        awk -v n="$n" '$2 == "ROBUST" { printf "%-3s %10s %12.1f %14.1f %12.1f %8.1f%% %12.1f%%\n",
            n, $3, $5, $7, $6, ($6 / $5 - 1) * 100, ($7 / $5 - 1) * 100 }'
done

echo
echo "verified results (rally_verify_every=1 against 0: robust allreduce, median us per job;"
echo " jobs interleaved A B B A, 4 each; range = the lowest and highest job median)"
printf '%-3s %10s %20s %20s %9s\n' N bytes off_us_range verify1_us_range ratio
vn=${BENCH_VERIFY_N:-4}
for k in 0 1 1 0 0 1 1 0; do
    "$run" -n "$vn" "$build/bench/bench_robust" 8:300 65536:100 1048576:30 16777216:9 \
        rally_verify_every=$k 2>&1 | awk -v k="$k" '$2 == "ROBUST" { print k, $3, $5 }'
done | awk -v n="$vn" '
    { v[$1, $2, ++c[$1, $2]] = $3; sizes[$2] = 1 }
    function med(k, b,   i, j, t, a, m) { m = c[k, b]; for (i = 1; i <= m; i++) a[i] = v[k, b, i]
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        lo = a[1]; hi = a[m]; return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
    END { for (b in sizes) { m0 = med(0, b); l0 = lo; h0 = hi; m1 = med(1, b)
        printf "%-3s %10s %9.1f-%-10.1f %9.1f-%-10.1f %8.3f\n", n, b, l0, h0, lo, hi, m1 / m0 } }' |
    sort -k2 -n

echo
echo "recovery: time from a kill to the job back in step (rank 1 dies, restarts, catches up)"
echo " (transfer_s = one warm ring shift of the model; beyond_s = recovery_s - transfer_s)"
printf '%-3s %12s %12s %16s %12s %10s\n' N model_bytes recovery_s iteration_s transfer_s beyond_s
for n in 4 8; do
    for m in 1048576 104857600; do
        "$run" -n "$n" --max-restarts 2 "$build/bench/bench_recovery" "$m" 8 rally_mock=1,4,0,0 2>&1 |
            awk -v n="$n" '$2 == "RECOVERY" { printf "%-3s %12s %12.3f %16.4f %12.4f %10.3f\n",
                n, $3, $4, $5, $6, $4 - $6 }'
    done
done

echo
echo "checkpoint cost at N=4 (median us, max over ranks): copy vs lazy; local models by replicas k;"
echo " ref_us = a warm memcpy of the model (global), k warm ring shifts of it (local k); x = checkpoint / ref"
printf '%-12s %-6s %14s %10s %10s %6s\n' model_bytes k checkpoint_us lazy_us ref_us x
for m in 1048576 104857600; do
    "$run" -n 4 "$build/bench/bench_ckpt" "$m" 7 2>&1 |
        awk '$2 == "CKPT" { printf "%-12s %-6s %14.1f %10.1f %10.1f %6.2f\n", $3, "global", $5, $6,
            $7, ($7 > 0 ? $5 / $7 : 0) }'
    for k in 1 2 3; do
        RALLY_LOCAL_REPLICA=$k "$run" -n 4 "$build/bench/bench_ckpt" "$m" 5 local 2>&1 |
            awk '$2 == "CKPT" { printf "%-12s %-6s %14.1f %10s %10.1f %6.2f\n", $3, "local" $4, $5,
                "-", $7, ($7 > 0 ? $5 / $7 : 0) }'
    done
done

echo
echo "the checkpoint digest (XXH3-64, rally_digest64) against the store's copy, one process (median us)"
printf '%-12s %10s %10s %10s %12s %8s\n' model_bytes dup_us memcpy_us digest_us digest/dup GB/s
"$build/bench/bench_digest" | awk '$1 == "DIGEST" { printf "%-12s %10s %10s %10s %12s %8s\n", $2, $3, $4, $5, $6, $7 }'
