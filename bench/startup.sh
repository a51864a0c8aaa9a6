#!/bin/sh
# bench/startup.sh BUILD_DIR — start-up at scale (issue 48): the seconds
# from `rally-run -n N` to its exit for a trivial worker (bench_startup:
# rally_init, one allreduce, rally_finalize, linked to librally.so) beside
# `mpirun --oversubscribe -n N` of a trivial MPI program (peer_mpi_init.c:
# MPI_Init, MPI_Finalize), at N = 256 and 1024, interleaved rally, mpirun,
# mpirun, rally, ... in each block.  Each block prints the median and range
# of both and of the ratio mpirun / rally round by round (above 1: rally
# starts faster), with the load average and this machine's memcpy rate
# (bench/ceiling) before and after it.  Where mpirun cannot start N here
# (bounded by BENCH_STARTUP_TIMEOUT), the block says so and shows rally's
# figure alone with the load.
#   BENCH_STARTUP_NS="256 1024"  BENCH_STARTUP_ROUNDS=4  BENCH_STARTUP_TIMEOUT=120
set -eu
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/bench/lib.sh"
ns=${BENCH_STARTUP_NS:-"256 1024"}
rounds=${BENCH_STARTUP_ROUNDS:-4}
tmo=${BENCH_STARTUP_TIMEOUT:-120}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# rally-run holds a few descriptors per worker (its output, the tracker's
# connection): 1024 workers want several thousand
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 8192 ] ||
    echo "bench/startup: ulimit -n is $(ulimit -n): 1024 workers may not start"

# The peer: OpenMPI's mpirun of MPI_Init/MPI_Finalize, when mpicc is here.
mpi=
if command -v mpicc >/dev/null && command -v mpirun >/dev/null &&
    mpicc -O2 -o "$out/mpi_init" "$src/bench/peer_mpi_init.c" 2>"$out/mpicc.log"; then
    mpi=$out/mpi_init
fi
asroot=
[ "$(id -u)" = 0 ] && asroot=--allow-run-as-root
n=0
# Each run is bounded by timeout, which signals its whole process group
# (rally-run kills its workers; mpirun its ranks); a run that fails or times
# out prints no line, and the block says how many of each it lost.
rally_s() {
    s=$(BENCH_LOG=$out/rally.log secs timeout -k 5 "$tmo" "$build/rally-run" -n "$n" \
        "$build/bench/bench_startup" 2>/dev/null) && echo "rally $s"
}
mpi_s() { # after one failure at this N, not again: it can take the whole bound
    [ -n "$mpi" ] && [ ! -e "$out/mpi-failed-$n" ] || return 0
    if s=$(BENCH_LOG=$out/mpi.log secs timeout -k 5 "$tmo" mpirun $asroot --oversubscribe \
        -n "$n" "$mpi" 2>/dev/null); then echo "mpi $s"; else : >"$out/mpi-failed-$n"; fi
}

echo "== start-up at scale: rally-run -n N of rally_init + one allreduce + rally_finalize" \
    "beside mpirun --oversubscribe -n N of MPI_Init + MPI_Finalize, $rounds rounds A B B A (s) =="
for n in $ns; do
    load0=$(load1) gbs0=$(memcpy_gbs "$build")
    abba "$rounds" rally_s mpi_s >"$out/n$n"
    load_after=$(load1) gbs1=$(memcpy_gbs "$build")
    echo "-- N = $n: load $load0 -> $load_after, memcpy $gbs0 -> $gbs1 GB/s (min median max)"
    got_r=$(grep -c ' rally ' "$out/n$n" || true) got_m=$(grep -c ' mpi ' "$out/n$n" || true)
    row "rally-run -n $n" s "$out/n$n" rally
    if [ "$got_m" -gt 0 ]; then
        row "mpirun -n $n" s "$out/n$n" mpi
        row "mpirun / rally (x, above 1: rally starts faster)" x "$out/n$n" mpi rally
    elif [ -n "$mpi" ]; then
        why=$(grep -v '^ *$' "$out/mpi.log" | grep -v -- '---' | head -n 2 | tr '\n' ' ')
        echo "  mpirun could not start $n ranks here within $tmo s:" \
            "${why:-no output, still starting when the bound stopped it}"
    else
        echo "  no OpenMPI peer: mpicc or mpirun missing (Debian: openmpi-bin libopenmpi-dev)"
    fi
    [ "$got_r" = "$rounds" ] || echo "  rally-run: $((rounds - got_r)) of $rounds runs failed:" \
        "$(tail -n 2 "$out/rally.log" | tr '\n' ' ')"
    med_r=$(spread "$out/n$n" rally | awk '{ printf "%.2f s", $2 }')
    med_m=$(spread "$out/n$n" mpi | awk '{ printf "%.2f s", $2 }')
    x=$(spread "$out/n$n" mpi rally | awk '{ printf "%.2fx (%.2f-%.2f)", $2, $1, $3 }')
    peer=${med_m:-${mpi:+mpirun failed}}
    summary_row "start-up, $n workers" "${med_r:--}" "${peer:-no OpenMPI here}" "${x:--}" \
        "load $load0 -> $load_after, memcpy $gbs0 GB/s"
    goal=3 # s: 1024 workers in under 3 s, 256 (and fewer) in under 1 s
    [ "$n" -gt 256 ] || goal=1
    target_row "start-up: rally-run -n $n of a trivial worker, on this machine" \
        "$(spread "$out/n$n" rally | awk '{ printf "%.2f s (%.2f-%.2f)", $2, $1, $3 }')" \
        "$(spread "$out/n$n" rally | awk '{ print $2 }')" "<" "$goal s"
done
