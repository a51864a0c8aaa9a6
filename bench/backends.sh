#!/bin/bash
# bench/backends.sh <builddir> — one program (bench_allreduce, public API
# only) on both engines: rally's own under rally-run (TCP loopback) and
# librally_mpi under mpirun (bench_allreduce_mpi), the latter over OpenMPI's
# shared memory (btl vader,self) and over TCP (btl tcp,self on lo); and raw
# MPI_Allreduce (peer_mpi, built here with mpicc) over shared memory, for
# what librally_mpi adds on top of MPI.  Same method as bench/run.sh
# (bench_common.h); float32 sum, in place.
#
# Knobs: BENCH_NS="2 4", BENCH_SPECS="BYTES:REPS ...", BENCH_TIMEOUT=600.
set -euo pipefail
die() { echo "bench: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: bench/backends.sh <builddir>"
BUILD=$(cd "$1" && pwd) || die "no build directory $1"
SRC=$(cd "$(dirname "$0")" && pwd)
NS=${BENCH_NS:-"2 4"}
SPECS=${BENCH_SPECS:-"8:400 4096:400 65536:100 1048576:30 16777216:10 67108864:5"}
TMO=${BENCH_TIMEOUT:-600}
OUT=$BUILD/bench-results
mkdir -p "$OUT" "$BUILD/bench-peers"
[ -x "$BUILD/bench/bench_allreduce_mpi" ] || die "bench_allreduce_mpi is missing (MPI not found at build time?)"
mpicc -O3 -std=c11 -D_GNU_SOURCE -o "$BUILD/bench-peers/peer_mpi" "$SRC/peer_mpi.c" ||
    die "bench/peer_mpi.c failed to build"
MPIRUN=(mpirun --oversubscribe --bind-to none --mca pml ob1)
[ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)
RESULTS=$OUT/backends.txt
: >"$RESULTS"

run() { # column N: RESULT lines of rank 0
    local col=$1 n=$2 log=$OUT/backend-$1-n$2.log
    case $col in
    rally) timeout "$TMO" "$BUILD/rally-run" -n "$n" "$BUILD/bench/bench_allreduce" $SPECS >"$log" 2>&1 &&
        sed -n 's/^\[0\] *\(RESULT .*\)$/\1/p' "$log" ;;
    rally_mpi-shm) timeout "$TMO" "${MPIRUN[@]}" -n "$n" --mca btl vader,self \
        "$BUILD/bench/bench_allreduce_mpi" $SPECS >"$log" 2>&1 && grep '^RESULT ' "$log" ;;
    rally_mpi-tcp) timeout "$TMO" "${MPIRUN[@]}" -n "$n" --mca btl tcp,self --mca btl_tcp_if_include lo \
        "$BUILD/bench/bench_allreduce_mpi" $SPECS >"$log" 2>&1 && grep '^RESULT ' "$log" ;;
    mpi-shm) timeout "$TMO" "${MPIRUN[@]}" -n "$n" --mca btl vader,self \
        "$BUILD/bench-peers/peer_mpi" $SPECS >"$log" 2>&1 && grep '^RESULT ' "$log" ;;
    esac
}
COLS="rally rally_mpi-tcp rally_mpi-shm mpi-shm"
for n in $NS; do
    for col in $COLS; do
        printf 'bench: N=%s %-14s ... ' "$n" "$col" >&2
        lines=$(run "$col" "$n") || { echo FAILED >&2; tail -20 "$OUT/backend-$col-n$n.log" >&2; exit 1; }
        echo ok >&2
        echo "$lines" | awk -v c="$col" -v n="$n" '{print c, n, $2, $3, $4, $5, $6}' >>"$RESULTS"
    done
done
# <= 4 KiB: median latency in us; above: bus bandwidth 2(N-1)/N x bytes / time, GB/s
awk -v cols="$COLS" '
{ med[$1, $2, $3] = $5; if (!($2 in hn)) { hn[$2] = 1; ns = ns " " $2 } if (!($3 in hb)) { hb[$3] = 1; bs = bs " " $3 } }
END {
    nc = split(cols, C, " "); split(ns, N, " "); nb = split(bs, B, " ")
    printf "| N | bytes |"; for (i = 1; i <= nc; i++) printf " %s |", C[i]; printf "\n|---|---|"
    for (i = 1; i <= nc; i++) printf "---|"; printf "\n"
    for (k = 1; k in N; k++) for (j = 1; j <= nb; j++) {
        n = N[k]; b = B[j]; printf "| %d | %s |", n, b
        for (i = 1; i <= nc; i++) {
            if (!((C[i] SUBSEP n SUBSEP b) in med)) { printf " - |"; continue }
            t = med[C[i], n, b]
            if (b <= 4096) printf " %.1f us |", t
            else printf " %.2f GB/s |", 2.0 * (n - 1) / n * b / (t * 1e-6) / 1e9
        }
        printf "\n"
    }
}' "$RESULTS"
echo "raw results (column N bytes reps median_us min_us max_us): $RESULTS"
