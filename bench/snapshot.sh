#!/bin/sh
# bench/snapshot.sh BUILD_DIR [DIR] — what durable snapshots cost (make
# bench): a MIB-MiB global model (default 100) checkpointed every
# iteration at N = 4 with COMPUTE_MS (default 1000) of "work" per iteration,
# without snapshots and with one every version.  The stall per snapshot is
# rank 0's own account (the time its training thread spent taking the
# snapshot in the commit and reporting it in the next checkpoint: immune to
# a load that differs between runs), beside the difference of the two runs'
# median rally_checkpoint; the slowdown is that stall over the plain run's
# median iteration, beside the two runs' median iterations compared.  The write throughput is the model's size over
# the time the writer alone takes (the durable write the background thread
# runs) beside dd with fsync to the same directory, in turns, best of five
# each; the resume time is rally_load_checkpoint's with rally_resume.  DIR
# (default: a temporary directory under the build directory, on its disk)
# receives the snapshots.
#   BENCH_MIB=100 BENCH_ITERS=8 BENCH_COMPUTE_MS=1000 BENCH_N=4
set -eu
build=$1
dir=${2:-}
mib=${BENCH_MIB:-100} iters=${BENCH_ITERS:-8} compute=${BENCH_COMPUTE_MS:-1000} n=${BENCH_N:-4}
prog=$build/snapshot_bench
[ -x "$prog" ] || { echo "bench/snapshot.sh: build first ($prog)"; exit 1; }
if [ -z "$dir" ]; then
    dir=$(mktemp -d "$build/snapbench.XXXXXX")
    trap 'rm -rf "$dir"' EXIT
fi
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" "$2"; }
. "$(dirname "$0")/lib.sh" # writer_ms, dd_fsync_s

"$build/rally-run" -n "$n" "$prog" "$mib" "$iters" "$compute" >"$dir/plain" 2>&1
"$build/rally-run" -n "$n" --snapshot-dir "$dir/s" --snapshot-every 1 --keep-snapshots \
    --snapshot-keep 1 "$prog" "$mib" "$iters" "$compute" >"$dir/snap" 2>&1
latest=$(ls -d "$dir"/s/snapshot_bench/snap-* | tail -1)
"$build/rally-run" -n "$n" --resume "$latest" "$prog" "$mib" "$iters" "$compute" >"$dir/resume" 2>&1
# the writer alone beside dd with fsync, on the same disk, in turns (a busy
# machine slows both alike), each the best of five fresh files
w_ms= dd_s=
for k in 1 2 3 4 5; do
    t=$(writer_ms "$prog" "$dir/w" "$mib" "$k")
    w_ms=$(awk -v a="$w_ms" -v b="$t" 'BEGIN { print (a == "" || b < a) ? b : a }')
    t=$(dd_fsync_s "$dir/dd.bin" "$mib")
    dd_s=$(awk -v a="$dd_s" -v b="$t" 'BEGIN { print (a == "" || b < a) ? b : a }')
done
rm -rf "$dir/dd.bin" "$dir/w"

p_ck=$(field ckpt_ms_median "$dir/plain") s_ck=$(field ckpt_ms_median "$dir/snap")
p_it=$(field iter_ms_median "$dir/plain") s_it=$(field iter_ms_median "$dir/snap")
load=$(field load_ms "$dir/resume")
# rank 0's own account of its stall (take + report), mean and max
st=$(sed -n 's/.*stalled the training thread \([0-9.]*\) ms on average (\([0-9.]*\) ms at most).*/\1 \2/p' "$dir/snap")
awk -v mib="$mib" -v n="$n" -v c="$compute" -v pck="$p_ck" -v sck="$s_ck" -v pit="$p_it" \
    -v sit="$s_it" -v wms="$w_ms" -v dd="$dd_s" -v load="$load" -v st="$st" 'BEGIN {
    split(st, S, " ")
    printf "snapshot benchmark: %d MiB global model, N = %d, %d ms of work per iteration\n", mib, n, c
    printf "  %-46s %10s\n", "what", "value"
    printf "  %-46s %8.1f ms\n", "rally_checkpoint, no snapshots (median)", pck
    printf "  %-46s %8.1f ms\n", "rally_checkpoint, a snapshot every version", sck
    printf "  %-46s %8.1f ms\n", "  difference (two runs)", sck - pck
    printf "  %-46s %8.1f ms\n", "stall per snapshot, rank 0 alone (mean)", S[1]
    printf "  %-46s %8.1f ms\n", "stall per snapshot, rank 0 alone (max)", S[2]
    printf "  %-46s %8.1f %%\n", "slowdown: mean stall / plain median iteration", S[1] / pit * 100
    printf "  %-46s %8.1f %%\n", "slowdown of the median iteration (two runs)", (sit / pit - 1) * 100
    wr = wms / 1000
    printf "  %-46s %8.1f MiB/s\n", "snapshot writer, durable write (best of 5)", (wr > 0 ? mib / wr : 0)
    printf "  %-46s %8.1f MiB/s\n", "dd bs=1M conv=fsync, same directory (best of 5)", (dd > 0 ? mib / dd : 0)
    printf "  %-46s %8.0f %%\n", "write throughput / dd", (wr > 0 && dd > 0) ? dd / wr * 100 : 0
    printf "  %-46s %8.1f ms\n", "resume: rally_load_checkpoint (verify + read)", load
}'
