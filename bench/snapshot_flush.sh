#!/bin/sh
# bench/snapshot_flush.sh BUILD_DIR — the flush lag of the second tier at
# MIB MiB a version (make bench; issue 20 item 8's last figure): a real job,
# rally-run -n N snapshot_bench MIB ITERS COMPUTE_MS (a MIB-MiB global model
# checkpointed every iteration after COMPUTE_MS of sleep standing in for
# work), with --snapshot-dir on the build directory's disk and
# --snapshot-every 1, run three ways, interleaved A B C C B A (ROUNDS each):
#   none  no --snapshot-copy (the baseline)
#   dir   --snapshot-copy to a directory on the same disk
#   s3    --snapshot-copy s3://bench/flush-ROUND on the Swift rig
#         (tests/rigs/swift_rig.sh on 127.0.0.1, started by bench/lib.sh's
#         rig_start outside the timings)
# For each tier, over every copy of every run:
#   - commit -> verified copy: from the snapshot's commit (the mtime of its
#     MANIFEST.json in the first tier) to its copy verified there.  The end
#     is the moment the copier took the snapshot (dir: the first read of the
#     first tier's global.bin, its atime, the copier being its only reader;
#     s3: the start of the first request for the copy's name in the proxy's
#     log) plus the copier's own figure.  With noatime (the dir tier's atime
#     unchanged) the copy's own MANIFEST.json mtime stands in, before its
#     read-back, and the table says so
#   - of which the wait before the copier took it (the commit is handed to
#     the copier at the next checkpoint; a copy in flight delays it more)
#   - the copier's own figure, parsed from its lines "copied to ...
#     (verified there, X s after the job reported it)": X runs from the
#     report (the checkpoint after the commit) that hands every rank's files
#     to its copier, not from the commit
#   - versions committed, copied and skipped (committed, never copied: a
#     newer one was taken instead) per run
# and for all three: rank 0's stall per snapshot (rally's line "each stalled
# the training thread X ms on average"), the job's wall time (rally-run's,
# process start included; it ends once the last version is copied), the
# training loop's (rank 0's, snapshot_bench's loop_ms; and its median
# rally_checkpoint, ckpt_ms_median) and the rest (start-up,
# and the end: the last snapshot, and with a copy finalize waiting for
# the last one to be copied), rank 0's peak RSS
# and CPU time (getrusage after rally_finalize, every thread), rank 1's peak
# RSS (no committer, no copier), and the Swift servers' CPU time during a
# run (/proc).  Each snapshot is kept (--keep-snapshots, --snapshot-keep
# ITERS + 1) so that its times can be read afterwards: no retention runs in
# either tier; each run's files are removed after it.  The table gives min,
# median and max over the copies or the rounds; a ratio's are those of the
# rounds' own ratios.  timeout bounds the whole (LIMIT s).
#   BENCH_MIB=100 BENCH_COMPUTE_MS=1000 BENCH_FLUSH_ITERS=10 BENCH_FLUSH_N=2
#   BENCH_FLUSH_ROUNDS=4 BENCH_FLUSH_LIMIT=900
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ -z "${BENCH_FLUSH_INNER:-}" ] &&
    BENCH_FLUSH_INNER=1 exec timeout -k 20 "${BENCH_FLUSH_LIMIT:-900}" sh "$0" "$@"
build=$(cd "$1" && pwd)
mib=${BENCH_MIB:-100} compute=${BENCH_COMPUTE_MS:-1000} iters=${BENCH_FLUSH_ITERS:-10}
n=${BENCH_FLUSH_N:-2} rounds=${BENCH_FLUSH_ROUNDS:-4}
keep=$((iters + 1))
. "$here/lib.sh"
tool=$build/rally-snapshot prog=$build/snapshot_bench
for p in "$build/rally-run" "$tool" "$prog"; do
    [ -x "$p" ] || { echo "bench/snapshot_flush.sh: build first ($p)" >&2; exit 1; }
done
rig_scratch "$build" snapflush # bench/lib.sh: $tmp and $rig, cleaned up on exit
res=$tmp/results copies=$tmp/copies
: >"$res"
: >"$copies"
rig_start "$rig" || exit 1 # bench/lib.sh: the rig, its variables, the bucket

# rig_cpu: the Swift servers' CPU seconds so far (utime + stime)
rig_cpu() {
    for p in $SWIFT_RIG_PIDS; do sed 's/.*) //' "/proc/$p/stat"; done |
        awk -v hz="$(getconf CLK_TCK)" '{ s += $12 + $13 } END { printf "%.3f\n", s / hz }'
}
# start_of ROUND SNAP: the start of the first request the proxy logged for
# the copy s3://bench/flush-ROUND/.../SNAP/ (the copier taking it)
start_of() {
    grep -a '^proxy-server: 127\.0\.0\.1 127\.0\.0\.1 ' "$rig/proxy.log" |
        awk -v p="/bench/flush-$1/" -v s="/$2/" 'index($6, p) == 1 && index($6, s) {
            if (t == "" || $(NF - 2) < t) t = $(NF - 2) } END { print t }'
}
noatime=0

# job TIER ROUND: one run of the job; "KEY VALUE" lines, and per copy
# "ROUND.VERSION KEY VALUE" lines into $copies
job() {
    tier=$1 r=$2 d=$tmp/$1-$2
    mkdir -p "$d"
    case $tier in
    none) set -- ;;
    dir) set -- --snapshot-copy "$d/copy" ;;
    s3) set -- --snapshot-copy "s3://bench/flush-$2" ;;
    esac
    c0=$(rig_cpu)
    BENCH_LOG=$d/out # secs keeps the output there
    t=$(secs "$build/rally-run" -n "$n" --snapshot-dir "$d/snaps" --snapshot-every 1 \
        --keep-snapshots --snapshot-keep "$keep" "$@" "$prog" "$mib" "$iters" "$compute")
    c1=$(rig_cpu)
    out=$d/out
    echo "wall_$tier $t"
    sed -n 's/^\[0\] bench: .* loop_ms=\([0-9.]*\).*/\1/p' "$out" |
        awk -v t="$tier" -v w="$t" '{ print "loop_" t, $1 / 1000; print "rest_" t, w - $1 / 1000 }'
    sed -n 's/^\[0\] bench: .* ckpt_ms_median=\([0-9.]*\).*/\1/p' "$out" | awk -v k="ckpt_$tier" '{ print k, $1 }'
    sed -n 's/.*stalled the training thread \([0-9.]*\) ms on average.*/\1/p' "$out" |
        awk -v k="stall_$tier" '{ print k, $1 }'
    sed -n 's/^\[\([0-9]*\)\] bench: rank=[0-9]* maxrss_kib=\([0-9]*\) cpu_ms=\([0-9]*\).*/\1 \2 \3/p' "$out" |
        awk -v t="$tier" '$1 == 0 { print "rss0_" t, $2 / 1024; print "cpu0_" t, $3 / 1000 }
            $1 == 1 { print "rss1_" t, $2 / 1024 }'
    echo "swiftcpu_$tier $(awk -v a="$c0" -v b="$c1" 'BEGIN { print b - a }')"
    nc=$(grep -c 'snapshot: committed ' "$out" || :)
    echo "committed_$tier $nc"
    if [ "$tier" = none ]; then
        rm -rf "$d/snaps"
        return 0
    fi
    ncp=$(grep -c 'snapshot: copied to ' "$out" || :)
    echo "copied_$tier $ncp"
    echo "skipped_$tier $((nc - ncp))"
    echo "failed_$tier $(grep -c 'snapshot: copying .* failed\|snapshot: could not copy' "$out" || :)"
    sed -n 's/.*snapshot: copied to \(.*\)\/\(snap-[0-9]*\) (verified there, \([0-9.]*\) s after the job reported it).*/\1 \2 \3/p' "$out" |
        while read -r where snap own; do
            src=$(echo "$d"/snaps/*/"$snap")
            commit=$(stat -c %.9Y "$src/MANIFEST.json")
            if [ "$tier" = s3 ]; then
                took=$(start_of "$r" "$snap")
                done_=$(awk -v a="$took" -v b="$own" 'BEGIN { printf "%.6f", a + b }')
            else
                st=$(stat -c '%.9X %.9Y' "$src/global.bin") # atime, mtime
                if awk -v a="${st% *}" -v m="${st#* }" 'BEGIN { exit !(a > m) }'; then
                    took=${st% *}
                    done_=$(awk -v a="$took" -v b="$own" 'BEGIN { printf "%.6f", a + b }')
                else # noatime: the copy's manifest, before its read-back
                    noatime=1
                    done_=$(stat -c %.9Y "$where/$snap/MANIFEST.json")
                    took=$(awk -v a="$done_" -v b="$own" 'BEGIN { printf "%.6f", a - b }')
                fi
            fi
            v=$(echo "$snap" | sed 's/snap-0*//')
            awk -v k="$r.$v" -v t="$tier" -v c="$commit" -v took="$took" -v d="$done_" -v own="$own" 'BEGIN {
                printf "%s lag_%s %.3f\n%s wait_%s %.3f\n%s own_%s %s\n", k, t, d - c, k, t, took - c, k, t, own }' >>"$copies"
            if [ "$tier" = s3 ]; then "$tool" rm "$where/$snap" >/dev/null; fi
            if [ "$noatime" = 1 ]; then echo "noatime 1"; fi
        done
    rm -rf "$d/snaps" "$d/copy"
}
job_none() { job none "$1"; }
job_dir() { job dir "$1"; }
job_s3() { job s3 "$1"; }

echo "bench/snapshot_flush.sh: $mib MiB, $iters versions of $compute ms at N = $n, $rounds rounds a tier ..." >&2
interleave "$rounds" job_none job_dir job_s3 >>"$res"

fs=$(df -PT "$tmp" | awk 'NR == 2 { print $2 " (" $1 ")" }')
sfs=$fs
[ -f "$rig/srv.tmpfs" ] && sfs="tmpfs (no user xattrs on $fs)"
total() { awk -v k="$1" '$2 == k { s += $3 } END { print s + 0 }' "$res"; }
echo "snapshot flush lag: a $mib MiB global model, rally-run -n $n snapshot_bench, a snapshot every version"
echo "  ($iters versions of $compute ms sleep), $rounds rounds a tier, A B C C B A; first tier --snapshot-dir on $fs;"
echo "  the copy to a directory on the same disk, or to Swift $(dpkg-query -W -f='${Version}' python3-swift 2>/dev/null)" \
    "(s3api, one proxy) on 127.0.0.1, objects on $sfs; $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
printf "  %-54s %9s %9s %9s\n" "what" min median max
for t in dir s3; do
    [ $t = dir ] && echo "  --snapshot-copy DIR, the same disk ($(total copied_dir) copies of $(total committed_dir) committed versions)"
    [ $t = s3 ] && echo "  --snapshot-copy s3://... ($(total copied_s3) copies of $(total committed_s3) committed versions)"
    row "commit -> copy verified there" s "$copies" "lag_$t"
    row "  of which waiting for the copier to take it" s "$copies" "wait_$t"
    row "  the copier's own figure (its line: from the report)" s "$copies" "own_$t"
    row "versions committed, a run" n "$res" "committed_$t"
    row "versions copied, a run" n "$res" "copied_$t"
    row "versions skipped (a newer one taken instead), a run" n "$res" "skipped_$t"
    [ "$(total "failed_$t")" = 0 ] || row "copy tries that failed, a run" n "$res" "failed_$t"
done
[ "$(total noatime)" = 0 ] ||
    echo "  (noatime here: the directory tier's end is its copy's manifest, before the read-back)"
echo "  the training thread: stall per snapshot (rank 0's mean, rally's line)"
row "no copy" ms/snapshot "$res" stall_none
row "copy to a directory" ms/snapshot "$res" stall_dir
row "copy to s3" ms/snapshot "$res" stall_s3
echo "  the job ($iters versions)"
row "wall time (rally-run), no copy" s "$res" wall_none
row "wall time, copy to a directory" s "$res" wall_dir
row "wall time, copy to s3" s "$res" wall_s3
row "  copy to a directory / no copy" x "$res" wall_dir wall_none
row "  copy to s3 / no copy" x "$res" wall_s3 wall_none
row "training loop (rank 0), no copy" s "$res" loop_none
row "training loop, copy to a directory" s "$res" loop_dir
row "training loop, copy to s3" s "$res" loop_s3
row "  copy to a directory / no copy" x "$res" loop_dir loop_none
row "  copy to s3 / no copy" x "$res" loop_s3 loop_none
row "  rally_checkpoint (rank 0's median), no copy" ms "$res" ckpt_none
row "  rally_checkpoint, copy to a directory" ms "$res" ckpt_dir
row "  rally_checkpoint, copy to s3" ms "$res" ckpt_s3
row "wall - loop (start-up, the end), no copy" s "$res" rest_none
row "wall - loop, copy to a directory" s "$res" rest_dir
row "wall - loop, copy to s3" s "$res" rest_s3
echo "  memory and CPU (getrusage after rally_finalize, all threads)"
row "rank 0 peak RSS, no copy" MiB "$res" rss0_none
row "rank 0 peak RSS, copy to a directory" MiB "$res" rss0_dir
row "rank 0 peak RSS, copy to s3" MiB "$res" rss0_s3
row "rank 1 peak RSS (no copier), copy to s3" MiB "$res" rss1_s3
row "rank 0 CPU time, no copy" s "$res" cpu0_none
row "rank 0 CPU time, copy to a directory" s "$res" cpu0_dir
row "rank 0 CPU time, copy to s3" s "$res" cpu0_s3
row "Swift's CPU time (its servers) during the run, s3" s "$res" swiftcpu_s3
row "Swift's CPU time during the run, no copy" s "$res" swiftcpu_none
