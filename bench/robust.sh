#!/bin/sh
# bench/robust.sh <builddir> — what fault tolerance costs, and how long a
# recovery takes (called by bench/run.sh; runs alone too).
#   1. robust vs plain allreduce (float32 sum), interleaved rep by rep in one
#      job: the public call (result cached for recovery) against the plain
#      collective under it; median of the reps, max over ranks per rep.
#   2. verified results: the robust call with rally_verify_every=1 against
#      off, jobs interleaved A B B A.
#   3. recovery by the job's clock: rank 1 gets kill -9 on entering an
#      iteration; from the kill to every rank back at the failed position,
#      the survivors' stall, and beside them rally-run's "recovered" line
#      (the tracker's clock) and the restarted rank's own steps, for 1 MiB
#      and 100 MiB global models at N = 4, BENCH_RECOVERY_ROUNDS rounds (5):
#      min, median, max; one warm transfer of the model (a ring shift
#      between warm buffers, same job) and memcpy's rate and the load in the
#      same block (a whole host lost, copies against XOR parity:
#      bench/hostloss.sh).
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
. "$(dirname "$0")/lib.sh"
res=$(mktemp)
trap 'rm -f "$res" "$res.kill"' EXIT
rounds=${BENCH_RECOVERY_ROUNDS:-5}
echo "recovery by the job's clock: rank 1 of 4 gets kill -9 on entering iteration 4 of 8, is"
echo " restarted and loads the checkpoint (a global model) from the survivors; $rounds rounds, min,"
echo " median and max.  kill to all back: from the kill (the killer's stamp) to the end of the"
echo " survivors' first call after it, which needs every rank back at the failed position;"
echo " survivors' stall: their last call's end before the kill to that; rally-run's line: its"
echo " 'recovered: ... back in step T s' (the tracker's clock, from the death it saw to every rank's"
echo " IN_STEP); then the restarted rank's path, from the kill to its main, rally_init,"
echo " rally_load_checkpoint (and the page faults and CPU time it took), and the rest to back"
memcpy=$(memcpy_gbs "$build")
printf '  %-54s %9.1f  GB/s\n' "memcpy (this machine, same block)" "$memcpy"
load0=$(load1)
echo "  load (1-minute average) before: $load0"
for m in 1048576 104857600; do
    : >"$res"
    i=1
    while [ "$i" -le "$rounds" ]; do
        "$run" -n 4 --max-restarts 2 "$build/bench/bench_recovery" "$m" 8 "kill=4,$res.kill" 2>&1 |
            awk -v r="$i" '/rally-run: recovered:/ { sub(/.*back in step /, ""); print r, "line", $1 }
                $2 == "RECOVERY" { print r, "xfer", $6 }
                $2 == "JOBCLOCK" { print r, "back", $4; print r, "stall", $5; print r, "start", $6
                    print r, "init", $7; print r, "load", $8; print r, "copy", $9
                    print r, "catch", $10; print r, "flt", $11; print r, "cpu", $13 }' >>"$res"
        i=$((i + 1))
    done
    mib=$((m / 1048576))
    row "$mib MiB: kill to all back (the job's clock)" s "$res" back
    row "$mib MiB: survivors' stall" s "$res" stall
    row "$mib MiB: rally-run's line (the tracker's clock)" s "$res" line
    row "$mib MiB: kill to all back / rally-run's line" x "$res" back line
    row "$mib MiB: restarted: kill to main (seen, decided, exec)" s "$res" start
    row "$mib MiB: restarted: rally_init" s "$res" init
    row "$mib MiB: restarted: rally_load_checkpoint" s "$res" load
    row "$mib MiB: restarted: its page faults in the load" n "$res" flt
    row "$mib MiB: restarted: its CPU in the load (user + system)" s "$res" cpu
    row "$mib MiB: restarted: into its model (buffer kept)" s "$res" copy
    row "$mib MiB: restarted: then to back" s "$res" catch
    row "$mib MiB: one warm ring shift of the model" s "$res" xfer
    [ "$m" = 104857600 ] || continue
    # the summary's row: median (min-max) over the rounds
    mm() { spread "$res" "$@" | awk -v u="$u" '{ printf "%.2f%s (%.2f-%.2f)", $2, u, $1, $3 }'; }
    u=" s"
    back=$(mm back) line=$(mm line)
    u=x
    summary_row "recovery by the job's clock: kill -9 to every rank back, 100 MiB, N = 4" \
        "$back" "rally-run's line (tracker's clock): $line" "$(mm back line)" \
        "memcpy $memcpy GB/s, load $load0 -> $(load1)"
    target_row "recovery: kill -9 to every rank back at the failed position, 100 MiB, N = 4" \
        "$back" "$(spread "$res" back | awk '{ print $2 }')" "<=" "0.25 s"
done
echo "  load (1-minute average) after: $(load1)"

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
