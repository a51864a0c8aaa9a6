#!/bin/bash
# multihost.sh BUILD_DIR — allreduce bus bandwidth across 4 "hosts" (network
# namespaces with sshd, tests/rigs/netns_rig.sh) whose cables tc tbf limits to a
# rate, as a fraction of that rate: rally (bench_allreduce, started through
# ssh from host 1) beside OpenMPI over TCP (peer_mpi under mpirun, its
# daemons started through the same ssh).  Standalone; needs root.
# bench/multihost.md says what is measured and how to read it.
#
# Knobs: MH_RATES="none 1gbit 10gbit" (tc's units; "none": unshaped cables),
# MH_PEERS="rally mpi-tcp", MH_BYTES=67108864, MH_REPS=5, MH_TIMEOUT=600
# (seconds per program run).  Raw results: BUILD_DIR/bench-results/multihost.txt
# ("peer rate_bits bytes reps median_us min_us max_us"), each run's output
# beside it (multihost-<peer>-<rate>.log).
set -u
die() {
    echo "bench/multihost: $*" >&2
    exit 1
}
[ $# -eq 1 ] || die "usage: bench/multihost.sh BUILD_DIR"
BUILD=$(cd "$1" && pwd) || die "no build directory $1"
SRC=$(cd "$(dirname "$0")" && pwd)
RATES=${MH_RATES:-"none 1gbit 10gbit"}
PEERS=${MH_PEERS:-"rally mpi-tcp"}
BYTES=${MH_BYTES:-67108864}
REPS=${MH_REPS:-5}
TMO=${MH_TIMEOUT:-600}
N=4
OUT=$BUILD/bench-results
PEERDIR=$BUILD/bench-peers
RALLY_RUN=$BUILD/rally-run
RALLY_BENCH=$BUILD/bench/bench_allreduce
[ -x "$RALLY_RUN" ] && [ -x "$RALLY_BENCH" ] || die "$RALLY_RUN or $RALLY_BENCH is missing: make build first"
mkdir -p "$OUT" "$PEERDIR"
RESULTS=$OUT/multihost.txt
: >"$RESULTS"

# OpenMPI and sshd (Debian), then the MPI peer, as bench/run.sh builds it
"$SRC/../scripts/deps.sh" || die "scripts/deps.sh failed"
case " $PEERS " in
*" mpi-tcp "*)
    mpicc -O3 -Wall -Wextra -Werror -std=c11 -D_GNU_SOURCE -o "$PEERDIR/peer_mpi" "$SRC/peer_mpi.c" ||
        die "the MPI peer (bench/peer_mpi.c) failed to build"
    ;;
esac

. "$SRC/../tests/rigs/netns_rig.sh"
rig_up $N
rc=$?
[ $rc -eq 77 ] && die "cannot run here: $RIG_SKIP"
[ $rc -eq 0 ] || die "the namespaces could not be set up (above)"
hosts=""
for i in $(seq 1 $N); do hosts=$hosts${hosts:+,}${RIG_IP[$i]}:1; done

# run_peer PEER RATE LOG: one program run on the shaped hosts; rank 0's
# RESULT line on stdout
run_peer() {
    local peer=$1 log=$3
    case $peer in
    rally)
        rig_job "$RALLY_RUN" "$log" "$TMO" -- "$RALLY_BENCH" "$BYTES:$REPS"
        wait "$RIG_JOB" || return 1
        sed -n 's/^\[0\] *\(RESULT .*\)$/\1/p' "$log"
        ;;
    mpi-tcp)
        rig_in 1 timeout "$TMO" mpirun --allow-run-as-root -np $N --host "$hosts" --bind-to none \
            --mca plm_rsh_agent "$RIG_SSH" --mca pml ob1 --mca btl tcp,self \
            --mca btl_tcp_if_include "$RIG_IF" --mca oob_tcp_if_include "$RIG_IF" \
            "$PEERDIR/peer_mpi" "$BYTES:$REPS" >"$log" 2>&1 || return 1
        grep '^RESULT ' "$log"
        ;;
    esac
}

for rate in $RATES; do
    if [ "$rate" = none ]; then
        bits=0
    else
        bits=$(tc_rate_bits "$rate") || die "MH_RATES: '$rate' is not a rate like 1gbit"
    fi
    rig_tbf "$rate" || die "tc tbf $rate failed"
    for peer in $PEERS; do
        log=$OUT/multihost-$peer-$rate.log
        line=$(run_peer "$peer" "$rate" "$log") && [ -n "$line" ] ||
            die "$peer at $rate failed: see $log"
        set -- $line
        echo "$peer $bits $2 $3 $4 $5 $6" >>"$RESULTS"
    done
done
rig_down
trap - EXIT INT TERM

# --- the table ---------------------------------------------------------------
echo "# multihost allreduce: $N hosts (network namespaces, veth to a bridge), one rank each,"
echo "# float32 sum of $BYTES bytes in place, median of $REPS reps, tc tbf on both directions"
echo "# of every cable; busbw = 2(N-1)/N x bytes / time; 'of link' = busbw / the tbf rate"
echo "# $(date -u '+%F %T UTC'); $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1);" \
    "$(nproc) cores; $(uname -sr); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(mpirun --version 2>/dev/null | head -1); $(ssh -V 2>&1)"
printf '%-8s %-8s %12s %12s %10s\n' rate peer "median ms" "busbw Gb/s" "of link"
awk -v n=$N '{
    busbw = 2 * (n - 1) / n * $3 / ($5 * 1e-6) * 8 / 1e9
    rate = $2 == 0 ? "none" : ($2 >= 1e9 ? $2 / 1e9 "gbit" : $2 / 1e6 "mbit")
    frac = $2 == 0 ? "-" : sprintf("%.1f %%", 100 * busbw * 1e9 / $2)
    printf "%-8s %-8s %12.1f %12.3f %10s\n", rate, $1, $5 / 1e3, busbw, frac
}' "$RESULTS"
