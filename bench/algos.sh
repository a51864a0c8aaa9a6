#!/bin/bash
# bench/algos.sh <builddir> — the switch points between rally's allreduce
# algorithms (tree, halving-doubling, ring) from 64 KiB to 16 MiB, with
# OpenMPI over TCP as the reference.  bench/README.md describes the method.
#
# Environment knobs (all optional):
#   ALGOS_NS="2 4 8"   world sizes
#   ALGOS_ROUNDS=5     rounds; the table shows the median over rounds
#   ALGOS_MPI=1        0 skips OpenMPI
set -euo pipefail

die() { echo "algos: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: bench/algos.sh <builddir>"
BUILD=$(cd "$1" && pwd) || die "no build directory $1"
SRC=$(cd "$(dirname "$0")" && pwd)
NS=${ALGOS_NS:-"2 4 8"}
ROUNDS=${ALGOS_ROUNDS:-5}
OUT=$BUILD/bench-results
mkdir -p "$OUT" "$BUILD/bench-peers"
RAW=$OUT/algos.txt
: >"$RAW"
[ -x "$BUILD/bench/bench_algos" ] || die "$BUILD/bench/bench_algos is missing: build first (make build)"
PEER=$BUILD/bench-peers/peer_mpi
MPI=${ALGOS_MPI:-1}
if [ "$MPI" = 1 ] && [ ! -x "$PEER" ]; then
    mpicc -O3 -std=c11 -D_GNU_SOURCE -o "$PEER" "$SRC/peer_mpi.c" ||
        die "the MPI peer failed to build (bench/run.sh installs OpenMPI; or ALGOS_MPI=0)"
fi
MPIRUN=(mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl tcp,self
        --mca btl_tcp_if_include lo)
[ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)
SPECS="65536:30 131072:24 262144:20 524288:15 1048576:10 2097152:8 4194304:6 8388608:5 16777216:4"

# One job per size: the thresholds put BYTES on the tree, BYTES+4 on
# halving-doubling and BYTES+8 on the ring, interleaved rep by rep.
for ((i = 1; i <= ROUNDS; i++)); do
    for n in $NS; do
        echo "algos: round $i N=$n" >&2
        for spec in $SPECS; do
            b=${spec%%:*}
            "$BUILD/rally-run" -n "$n" "$BUILD/bench/bench_algos" "$spec" \
                rally_ring_threshold_bytes="$b" rally_hd_threshold_bytes=$((b + 4)) 2>&1 |
                sed -n 's/^\[0\] *ALGOS \(.*\)$/\1/p' |
                awk -v n="$n" '{print "tree", n, $1, $3; print "hd", n, $1, $4; print "ring", n, $1, $5}' >>"$RAW"
        done
        [ "$MPI" = 1 ] || continue
        "${MPIRUN[@]}" -n "$n" "$PEER" $SPECS 2>&1 | grep '^RESULT ' |
            awk -v n="$n" '{print "mpi-tcp", n, $2, $4}' >>"$RAW"
    done
done

# The table: bus bandwidth (GB/s) of the median over rounds, and the spread
# (slowest / fastest round) of the best algorithm.
awk '
{ k = $1 " " $2 " " $3; v[k] = v[k] " " $4; sz[$3] = 1; ns[$2] = 1 }
function median(s,    a, m, i, j, t) {
    m = split(s, a, " ")
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    lo = a[1]; hi = a[m]
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
function cell(p, n, b,    t) {
    if (!((p " " n " " b) in v)) return "-"
    t = median(v[p " " n " " b]); med[p] = t; spread[p] = hi / lo
    return sprintf("%.3f", 2.0 * (n - 1) / n * b / (t * 1e-6) / 1e9)
}
END {
    printf "%-3s %7s %8s %8s %8s %8s  %-5s %s\n", "N", "size", "tree", "hd", "ring", "mpi-tcp", "best", "spread"
    for (n = 1; n <= 4096; n++) {
        if (!(n in ns)) continue
        for (b = 65536; b <= 16777216; b *= 2) {
            if (!(b in sz)) continue
            c1 = cell("tree", n, b); c2 = cell("hd", n, b); c3 = cell("ring", n, b); c4 = cell("mpi-tcp", n, b)
            best = "tree"; if (med["hd"] < med[best]) best = "hd"; if (med["ring"] < med[best]) best = "ring"
            printf "%-3d %6dK %8s %8s %8s %8s  %-5s x%.2f\n", n, b / 1024, c1, c2, c3, c4, best, spread[best]
        }
    }
}' "$RAW"
echo "bus bandwidth in GB/s = 2(N-1)/N x bytes / time; raw (alg N bytes median_us per round): $RAW"
