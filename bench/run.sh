#!/bin/bash
# bench/run.sh <builddir> — `make bench`: rally's allreduce over shared memory
# and over TCP (the public, robust call and the plain collective under it)
# beside OpenMPI (shared memory and TCP) and Gloo (ring, TCP), measured in
# the same run with the same N and sizes, against this machine's floor, and
# issue 12's bars at N = 4.  bench/README.md describes the method.
#
# Environment knobs (all optional):
#   BENCH_NS="2 4 8"                  world sizes (BENCH_NS=4: the bars' N only)
#   BENCH_PEERS="rally-shm mpi-shm rally-tcp mpi-tcp gloo"   which columns to measure
#                                     (each rally-* run also times its plain collective)
#   BENCH_PLAIN=0                     skip the plain collective (no ovh column, no overhead bars)
#   BENCH_BAR_N=4                     the N the bars are checked at
#   BENCH_QUICK=1                     fewer reps and no 64/256 MiB (a smoke test)
#   BENCH_SIZES="8 65536 1048576 16777216 67108864"   only these sizes (bytes): the summary's
#   BENCH_ROUNDS=2                    rounds of every column, A B B A (the summary's ranges)
#   BENCH_ROBUST=0                    skip bench/robust.sh (recovery and checkpoint costs)
#   BENCH_STARTUP=0                   skip bench/startup.sh (start-up at 256 and 1024 workers
#                                     beside mpirun's)
#   BENCH_ELASTIC=0                   skip bench/elastic.sh (a shrink and a grow at N = 8)
#   BENCH_EXACT=0                     skip bench/exact.sh (RALLY_SUM_EXACT against RALLY_SUM)
#   BENCH_STRAGGLER=0                 skip bench/straggler.sh (the straggler accounting's cost)
#   BENCH_CURSOR=0                    skip bench/cursor.sh (the data cursor against an index slice)
#   BENCH_HOSTLOSS=0                  skip bench/hostloss.sh (copies against XOR parity: memory,
#                                     checkpoint time, a whole host's recovery)
#   BENCH_TIMEOUT=900                 seconds allowed for one program run
#   BENCH_KMEANS=0, BENCH_TRAINERS=0  skip bench/kmeans.sh, bench/linear.sh + bench/gbdt.sh
#   BENCH_GBDT=0                      skip bench/gbdt.sh alone
#   BENCH_RAY=0                       skip bench/ray.sh (rally.ray beside Ray Train, a kill -9)
#   BENCH_TORCH=0                     skip bench/torch.sh (rally.torch beside torch.distributed Gloo)
#   BENCH_SPARK=0                     skip bench/spark.sh (rally.spark's GBDT beside xgboost.spark)
#   BENCH_HIER=0                      skip bench/hier.sh (the hierarchy across shaped hosts; root)
#   BENCH_SNAPSHOT=0                  skip bench/snapshot.sh (durable snapshots' cost),
#                                     bench/snapshot_s3.sh (the object-store tier) and
#                                     bench/snapshot_flush.sh (the second tier's flush lag)
#   BENCH_SNAPSHOT_S3=0               skip bench/snapshot_s3.sh and bench/snapshot_flush.sh
#   BENCH_SNAPSHOT_FLUSH=0            skip bench/snapshot_flush.sh alone
set -euo pipefail

die() { echo "bench: $*" >&2; exit 1; }

# print_table <results>: the table, the floor distances and the bars (bench/table.awk).
print_table() {
    awk -v bar_n="${BENCH_BAR_N:-4}" -f "$(dirname "$0")/table.awk" "$1"
}
if [ $# -eq 2 ] && [ "$1" = --table ]; then # re-print a table from a results file
    print_table "$2"
    exit 0
fi
[ $# -eq 1 ] || die "usage: bench/run.sh <builddir>  |  bench/run.sh --table <results.txt>"
BUILD=$(cd "$1" && pwd) || die "no build directory $1"
SRC=$(cd "$(dirname "$0")" && pwd)
NS=${BENCH_NS:-"2 4 8"}
PEERS=${BENCH_PEERS:-"rally-shm mpi-shm rally-tcp mpi-tcp gloo"}
TMO=${BENCH_TIMEOUT:-900}
PEERDIR=$BUILD/bench-peers
OUT=$BUILD/bench-results
mkdir -p "$PEERDIR" "$OUT"
RESULTS=$OUT/results.txt
: >"$RESULTS"

# --- packages the peers need (Debian) ----------------------------------------
need="openmpi-bin libopenmpi-dev libgloo-dev g++"
missing=""
for p in $need; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "bench: installing$missing"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

# --- build the peers (not part of CMake's default target) --------------------
CFLAGS_PEER="-O3 -Wall -Wextra -Werror"
mpicc $CFLAGS_PEER -std=c11 -D_GNU_SOURCE -o "$PEERDIR/peer_mpi" "$SRC/peer_mpi.c" ||
    die "the MPI peer (bench/peer_mpi.c) failed to build"
g++ $CFLAGS_PEER -std=c++17 -o "$PEERDIR/peer_gloo" "$SRC/peer_gloo.cc" -lgloo -pthread ||
    die "the Gloo peer (bench/peer_gloo.cc) failed to build"

RALLY_RUN=$BUILD/rally-run
RALLY_BENCH=$BUILD/bench/bench_allreduce
CEILING=$BUILD/bench/ceiling
case " $PEERS " in
*" rally-"*)
    [ -x "$RALLY_RUN" ] || die "$RALLY_RUN is missing: build first (make build)"
    [ -x "$RALLY_BENCH" ] || die "$RALLY_BENCH is missing: build first (make build)"
    ;;
esac
if [ ! -x "$CEILING" ]; then # normally built by CMake; tolerate a partial build
    CEILING=$PEERDIR/ceiling
    cc -O2 -std=c11 -D_GNU_SOURCE -pthread -o "$CEILING" "$SRC/ceiling.c" || die "bench/ceiling.c failed to build"
fi

# --- sizes and reps ----------------------------------------------------------
# BYTES:REPS; warm-up reps come on top (a fifth, at least one; bench_common.h).
LAT_SIZES="8 64 512 4096"
BW_SIZES="65536 1048576 16777216 67108864 268435456"
if [ -n "${BENCH_QUICK:-}" ]; then
    SPECS="8:20 64:20 512:20 4096:20 65536:10 1048576:5 16777216:5"
else # up to 4 KiB a rep is 50 calls in a row (bench_common.h)
    SPECS="8:200 64:200 512:200 4096:200 65536:100 1048576:30 16777216:10 67108864:7 268435456:5"
fi
if [ -n "${BENCH_SIZES:-}" ]; then # only these sizes, with their reps
    SPECS=$(for sp in $SPECS; do case " $BENCH_SIZES " in *" ${sp%%:*} "*) printf '%s ' "$sp" ;; esac; done)
    [ -n "$SPECS" ] || die "BENCH_SIZES=$BENCH_SIZES names none of the sizes measured"
fi

# --- launchers ---------------------------------------------------------------
# OpenMPI runs as an outside harness would start it: with its defaults
# (bound to cores, polling without yielding) while N <= cores, and with
# --oversubscribe --bind-to none beyond (which also makes it yield when
# idle, its own choice for an oversubscribed node).  Oversubscribing at
# N <= cores made its small messages up to 3x slower (bench/README.md).
mpirun_for() { # mpirun_for <N>: the launcher for N ranks, into MPIRUN
    MPIRUN=(mpirun --mca pml ob1)
    [ "$1" -gt "$(nproc)" ] && MPIRUN+=(--oversubscribe --bind-to none)
    [ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)
    return 0
}

# run_peer <peer> <N> <logfile>: runs one program over all sizes; RESULT lines
# on stdout (rank 0's), everything else in the log.
run_peer() {
    local peer=$1 n=$2 log=$3
    case $peer in
    rally-shm | rally-tcp)
        local plain=--plain
        [ "${BENCH_PLAIN:-1}" = 0 ] && plain=
        timeout "$TMO" "$RALLY_RUN" -n "$n" "$RALLY_BENCH" $plain $SPECS \
            "rally_transport=${peer#rally-}" >"$log" 2>&1 || return 1
        # rally-run prefixes each worker line with "[rank] ".
        sed -n 's/^\[0\] *\(\(RESULT\|PLAIN\) .*\)$/\1/p' "$log"
        ;;
    mpi-tcp)
        mpirun_for "$n"
        timeout "$TMO" "${MPIRUN[@]}" -n "$n" --mca btl tcp,self --mca btl_tcp_if_include lo \
            "$PEERDIR/peer_mpi" $SPECS >"$log" 2>&1 || return 1
        grep '^RESULT ' "$log"
        ;;
    mpi-shm)
        mpirun_for "$n"
        timeout "$TMO" "${MPIRUN[@]}" -n "$n" --mca btl vader,self \
            "$PEERDIR/peer_mpi" $SPECS >"$log" 2>&1 || return 1
        grep '^RESULT ' "$log"
        ;;
    gloo)
        local store pids=() r rc=0
        store=$(mktemp -d "${TMPDIR:-/tmp}/rally-bench-gloo.XXXXXX")
        : >"$log"
        for ((r = 0; r < n; r++)); do
            GLOO_RANK=$r GLOO_SIZE=$n GLOO_STORE=$store \
                timeout "$TMO" "$PEERDIR/peer_gloo" $SPECS >>"$log" 2>&1 &
            pids+=($!)
        done
        # A rank that fails leaves the others waiting for it: stop them.
        # (Polled: bash's `wait -n` loses jobs that exit at the same time.)
        local left=$n p
        while [ $left -gt 0 ] && [ $rc -eq 0 ]; do
            sleep 0.2
            for r in "${!pids[@]}"; do
                p=${pids[$r]}
                kill -0 "$p" 2>/dev/null && continue
                wait "$p" || rc=1
                unset "pids[$r]"
                left=$((left - 1))
            done
        done
        if [ $rc -ne 0 ] && [ ${#pids[@]} -gt 0 ]; then
            kill "${pids[@]}" 2>/dev/null || true
            wait "${pids[@]}" 2>/dev/null || true
        fi
        rm -rf "$store"
        [ $rc -eq 0 ] || return 1
        grep '^RESULT ' "$log"
        ;;
    *) die "unknown peer $peer" ;;
    esac
}

# --- header ------------------------------------------------------------------
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
ompi=$(mpirun --version 2>/dev/null | head -1)
gloo=$(dpkg-query -W -f='${Version}' libgloo-dev 2>/dev/null || echo "?")
read -r _ _ memcpy_gbs < <("$CEILING" memcpy)
read -r _ _ tcp_gbs < <("$CEILING" tcp)
[ -n "$memcpy_gbs" ] && [ -n "$tcp_gbs" ] || die "bench/ceiling failed"
cores=$(nproc)
{
    echo "ceiling memcpy $memcpy_gbs"
    echo "ceiling tcp $tcp_gbs"
    echo "ceiling cores $cores"
    echo "ceiling pagesize $(getconf PAGESIZE)"
    "$CEILING" fresh | awk '$1 == "CEILING" {print "ceiling", $2, $3}'
} >>"$RESULTS"
# the floor's rates (bench/table.awk takes the best of each): memcpy per
# working set (4 KiB to 64 MiB; and 1 MiB, a shm link's ring) at 1..min(N, cores)
# threads; 1..N loopback streams at once.
floor_sizes=$(for sp in $SPECS 1048576:1; do
    b=${sp%%:*}
    [ "$b" -lt 4096 ] && b=4096
    [ "$b" -gt 67108864 ] && b=67108864 # ceiling caps the working set there
    echo "$b"
done | sort -nu)
maxn=$(for n in $NS; do echo "$n"; done | sort -n | tail -1)
printf 'bench: the floor: memcpy per working set, parallel loopback streams ... ' >&2
for ((t = 1; t <= (maxn < cores ? maxn : cores); t++)); do
    for b in $floor_sizes; do
        "$CEILING" memcpy-at "$b" "$t" | awk '$1 == "CEILING" {print "ceiling", $2, $3, $4, $5}' >>"$RESULTS" ||
            die "bench/ceiling memcpy-at $b $t failed"
    done
done
for ((k = 1; k <= maxn; k++)); do
    "$CEILING" tcp-par "$k" | awk '$1 == "CEILING" {print "ceiling", $2, $3, $4}' >>"$RESULTS" ||
        die "bench/ceiling tcp-par $k failed"
done
echo "done" >&2
copy_line=$(awk '$2 == "memcpy-at" {
    if ($4 != t) { printf "%s%s thread(s):", (t == "" ? "" : "\n            "), $4; t = $4 }
    printf " %s %s", ($3 >= 1048576 ? $3 / 1048576 "M" : $3 / 1024 "K"), $5 }' "$RESULTS")
par_line=$(awk '$2 == "tcp-par" { printf " %s: %s", $3, $4 }' "$RESULTS")

cat <<HDR
== rally allreduce benchmark ==================================================
machine : ${cpu:-unknown CPU}, $(nproc) cores, $mem RAM, Linux $(uname -r)
compiler: $(gcc --version | head -1); peers: $ompi, Gloo $gloo
ceilings: memcpy $memcpy_gbs GB/s (1 thread, 64 MiB);  TCP loopback single stream $tcp_gbs GB/s
          aggregate memcpy GB/s by working set (warm buffers), at
            $copy_line
          aggregate TCP loopback GB/s by parallel streams:$par_line
          first touch (memset of fresh pages): $(awk '$2 == "fresh" {print $3}' "$RESULTS") GB/s
method  : float32 sum, in place.  Per size: 1 checked allreduce, warm-up reps (a fifth of
          the reps, >= 1), then timed reps; each rep = a 1-float allreduce as barrier, then
          the timed calls (clock_gettime; <= 4 KiB 50 calls in a row, the time per call).
          A rep's time is the max over ranks; the table shows the median over reps
          (reps: $SPECS).
          Columns, interleaved per N in this order: rally-shm and rally-tcp (rally-run,
          rally_transport=shm|tcp; "rally" is the public call, robust, with an untimed
          checkpoint after each; "plain" the collective under it, src/coll, interleaved
          rep by rep in the same job), mpi-shm (OpenMPI MPI_Allreduce, pml ob1, btl
          vader,self), mpi-tcp (btl tcp,self on lo), gloo (gloo::allreduce RING, tcp
          device 127.0.0.1, FileStore).  rally and Gloo unbound; OpenMPI with its defaults
          (bound, polling) at N <= $(nproc) cores, --oversubscribe --bind-to none above.
          <= 4 KiB: latency in us (lower is better).  >= 64 KiB: bus bandwidth in GB/s
          = 2(N-1)/N x bytes / time (higher is better; 1 GB = 1e9 B).
floor   : the fastest this machine allows (bench/table.awk, README "The floor").  shm:
          per rank and vector byte, f = (N-1)/N, a bandwidth-optimal allreduce through
          shm rings makes 9f memory accesses: reduce-scatter: read own to send f, write
          ring f, read ring + read own + write own 3f; allgather: read own f, write
          ring f, read ring + write own 2f; the robust call adds its cache copy, 2.
          The 5f (+2) on the vectors run at the best copy rate above at the vector's
          size, the 4f on the 1 MiB rings at the 1M rate (a copied byte = 2 accesses);
          all N ranks' traffic counted.  TCP: the 2(N-1) x bytes all ranks send, at
          the best parallel-stream rate above; reductions come on top.
HDR

# --- measure -----------------------------------------------------------------
# BENCH_ROUNDS rounds, the peers in order on odd rounds and in reverse on even
# ones (A B B A: a load that drifts slows every column alike); round 1 makes
# the table below, every round the summary's medians and ranges (rounds.txt:
# round load column N bytes median_us).
ROUNDS=${BENCH_ROUNDS:-2}
ROUNDS_FILE=$OUT/rounds.txt
: >"$ROUNDS_FILE"
rpeers=$(for p in $PEERS; do echo "$p"; done | tac | tr '\n' ' ')
for ((round = 1; round <= ROUNDS; round++)); do
    order=$PEERS
    [ $((round % 2)) = 0 ] && order=$rpeers
    for n in $NS; do
        for peer in $order; do
            log=$OUT/$peer-n$n.log
            printf 'bench: round %s N=%s %-8s ... ' "$round" "$n" "$peer" >&2
            start=$SECONDS
            if ! lines=$(run_peer "$peer" "$n" "$log"); then
                echo "FAILED" >&2
                tail -n 30 "$log" >&2
                die "$peer failed at N=$n (log: $log)"
            fi
            [ -n "$lines" ] || { tail -n 30 "$log" >&2; die "$peer printed no results at N=$n (log: $log)"; }
            echo "$((SECONDS - start)) s" >&2
            load=$(cut -d' ' -f1 /proc/loadavg)
            # column N bytes reps median_us min_us max_us faults_per_call
            rows=$(echo "$lines" | awk -v p="$peer" -v n="$n" '{print ($1 == "PLAIN" ? p "-plain" : p), n, $2, $3, $4, $5, $6, (NF >= 7 ? $7 : "")}')
            [ "$round" = 1 ] && echo "$rows" >>"$RESULTS"
            echo "$rows" | awk -v r="$round" -v l="$load" '{print r, l, $1, $2, $3, $5}' >>"$ROUNDS_FILE"
        done
    done
    read -r _ _ gbs < <("$CEILING" memcpy)
    echo "memcpy $round $(cut -d' ' -f1 /proc/loadavg) $gbs" >>"$ROUNDS_FILE"
done

# --- table -------------------------------------------------------------------
print_table "$RESULTS"
echo "raw results (column N bytes reps median_us min_us max_us faults_per_call; ceilings): $RESULTS"
# bytes moved, counted (bench_allreduce's MOVED lines; docs/architecture.md,
# "Bytes moved"): rank 0's checked calls, the same in every round
echo "bytes moved per byte of the call (rank 0; public / plain; floors, f = (N-1)/N: 4f a ring"
echo "of shared-memory rings, 2f any ring allreduce, the public call adds its keep):"
for n in $NS; do
    for peer in $PEERS; do
        case $peer in rally-*) ;; *) continue ;; esac
        sed -n 's/^\[0\] *MOVED \([0-9]*\) \([0-9.]*\) \([0-9.]*\)$/\1 \2 \3/p' "$OUT/$peer-n$n.log" |
            awk -v p="$peer" -v n="$n" '$1 >= 1048576 {
                printf "  %-9s N=%-2s %4d MiB  %5.2f / %5.2f   4f %4.2f  2f %4.2f\n", p, n, $1 / 1048576,
                    $2, $3, 4 * (n - 1) / n, 2 * (n - 1) / n }'
    done
done
# the summary's first part: the allreduce a user compares, over every round
# (bench/summary.awk); the parts below add their rows to $BENCH_SUMMARY, and
# to $BENCH_TARGETS what their figures say of their targets
export BENCH_SUMMARY=$OUT/summary.txt BENCH_TARGETS=$OUT/targets.txt
awk -v targets="$BENCH_TARGETS" -f "$SRC/summary.awk" "$ROUNDS_FILE" >"$BENCH_SUMMARY"
# the hierarchy across hosts: 2 and 4 shaped "hosts" of 2 ranks, filled in
# order and dealt cyclically, against the flat ring (bench/hier.sh: network
# namespaces, so root only; BENCH_HIER=0 skips it; BENCH_QUICK: one round)
if [ "${BENCH_HIER:-1}" != 0 ]; then
    echo
    if [ "$(id -u)" != 0 ]; then
        echo "bench: bench/hier.sh skipped: it needs root (network namespaces)"
    else
        [ -n "${BENCH_QUICK:-}" ] && export HIER_ROUNDS=${HIER_ROUNDS:-1}
        "$(dirname "$0")/hier.sh" "$BUILD" | grep -v '^bench/hier: ' ||
            echo "bench: bench/hier.sh failed (its reason above); the other parts go on"
    fi
fi
# start-up at scale: rally-run -n 256 and 1024 of a trivial worker beside
# mpirun's (bench/startup.sh; BENCH_QUICK: 2 rounds; BENCH_STARTUP=0 skips it)
if [ "${BENCH_STARTUP:-1}" != 0 ]; then
    echo
    [ -n "${BENCH_QUICK:-}" ] && export BENCH_STARTUP_ROUNDS=${BENCH_STARTUP_ROUNDS:-2}
    "$(dirname "$0")/startup.sh" "$BUILD"
fi
# what fault tolerance costs beyond the allreduce: recovery, checkpoints
# (bench/robust.sh; BENCH_ROBUST=0 skips it)
[ "${BENCH_ROBUST:-1}" = 0 ] || "$(dirname "$0")/robust.sh" "$BUILD"
# (bench/elastic.sh; BENCH_ELASTIC=0 skips it)
[ "${BENCH_ELASTIC:-1}" = 0 ] || { echo; "$(dirname "$0")/elastic.sh" "$BUILD"; }
# What an exact sum costs (bench/exact.sh; BENCH_EXACT=0 skips it)
[ "${BENCH_EXACT:-1}" = 0 ] || { echo; "$(dirname "$0")/exact.sh" "$BUILD"; }
# What the data cursor costs a step (bench/cursor.sh; BENCH_CURSOR=0 skips it)
[ "${BENCH_CURSOR:-1}" = 0 ] || { echo; "$(dirname "$0")/cursor.sh" "$BUILD"; }
# What the straggler accounting costs (bench/straggler.sh; BENCH_STRAGGLER=0 skips it)
[ "${BENCH_STRAGGLER:-1}" = 0 ] || { echo; "$(dirname "$0")/straggler.sh" "$BUILD"; }
# Copies against XOR parity over a whole host (bench/hostloss.sh; BENCH_HOSTLOSS=0 skips it)
[ "${BENCH_HOSTLOSS:-1}" = 0 ] || { echo; "$(dirname "$0")/hostloss.sh" "$BUILD"; }
# k-means beside scikit-learn (bench/kmeans.sh; BENCH_KMEANS=0 skips it)
[ "${BENCH_KMEANS:-1}" = 0 ] || "$(dirname "$0")/kmeans.sh" "$BUILD"
# durable snapshots: stall, slowdown, write throughput beside dd, resume
# (bench/snapshot.sh: 100 MiB at N = 4; BENCH_QUICK: 16 MiB, 0.2 s iterations)
if [ "${BENCH_SNAPSHOT:-1}" != 0 ]; then
    if [ -n "${BENCH_QUICK:-}" ]; then
        export BENCH_MIB=${BENCH_MIB:-16} BENCH_COMPUTE_MS=${BENCH_COMPUTE_MS:-200}
    fi
    "$(dirname "$0")/snapshot.sh" "$BUILD"
    # the object-store tier (a Swift rig on loopback) beside curl, and the
    # directory tier beside dd (bench/snapshot_s3.sh; BENCH_QUICK: 16 MiB)
    [ "${BENCH_SNAPSHOT_S3:-1}" = 0 ] || "$(dirname "$0")/snapshot_s3.sh" "$BUILD"
    # the second tier's flush lag: a real job copying every committed
    # version to a directory and to s3, beside no copy (bench/snapshot_flush.sh;
    # BENCH_QUICK: 16 MiB, 0.2 s iterations, 2 rounds)
    if [ "${BENCH_SNAPSHOT_S3:-1}" != 0 ] && [ "${BENCH_SNAPSHOT_FLUSH:-1}" != 0 ]; then
        [ -n "${BENCH_QUICK:-}" ] && export BENCH_FLUSH_ROUNDS=${BENCH_FLUSH_ROUNDS:-2}
        "$(dirname "$0")/snapshot_flush.sh" "$BUILD"
    fi
fi
# the trainers: rally-linear beside scikit-learn, rally-gbdt beside xgboost
# (bench/linear.sh, bench/gbdt.sh: 1M rows x 32 features at N = 1, 2, 4, 8;
# BENCH_QUICK: 20k rows at N = 1, 2 (gbdt 1, 2, 4); BENCH_TRAINERS=0 skips both)
if [ "${BENCH_TRAINERS:-1}" != 0 ]; then
    if [ -n "${BENCH_QUICK:-}" ]; then
        export BENCH_LINEAR_ROWS=${BENCH_LINEAR_ROWS:-20000} BENCH_LINEAR_NS=${BENCH_LINEAR_NS:-"1 2"}
        export BENCH_LINEAR_ITERS=${BENCH_LINEAR_ITERS:-8} BENCH_LINEAR_ADMM_ITERS=${BENCH_LINEAR_ADMM_ITERS:-8}
        export BENCH_LINEAR_RECOVERY_N=${BENCH_LINEAR_RECOVERY_N:-2}
        export BENCH_GBDT_ROWS=${BENCH_GBDT_ROWS:-20000} BENCH_GBDT_NS=${BENCH_GBDT_NS:-"1 2 4"}
        export BENCH_GBDT_TREES=${BENCH_GBDT_TREES:-4}
    fi
    "$(dirname "$0")/linear.sh" "$BUILD"
    [ "${BENCH_GBDT:-1}" = 0 ] || "$(dirname "$0")/gbdt.sh" "$BUILD"
fi
# rally.ray beside Ray Train's restart from its checkpoint: the seconds from a
# kill -9 to the job back in step (bench/ray.sh; BENCH_QUICK: one round;
# BENCH_RAY=0 skips it)
if [ "${BENCH_RAY:-1}" != 0 ]; then
    echo
    if [ -n "${BENCH_QUICK:-}" ]; then
        export BENCH_RAY_ROUNDS=${BENCH_RAY_ROUNDS:-1}
    fi
    "$(dirname "$0")/ray.sh" "$BUILD"
fi
# rally.torch beside torch.distributed with Gloo, an MLP's time per step
# (bench/torch.sh; BENCH_QUICK: 50 steps, one round; BENCH_TORCH=0 skips it)
if [ "${BENCH_TORCH:-1}" != 0 ]; then
    echo
    if [ -n "${BENCH_QUICK:-}" ]; then
        export BENCH_TORCH_STEPS=${BENCH_TORCH_STEPS:-50} BENCH_TORCH_ROUNDS=${BENCH_TORCH_ROUNDS:-1}
    fi
    "$(dirname "$0")/torch.sh" "$BUILD"
fi
# rally.spark's GBDTClassifier beside xgboost.spark on one Spark: s per tree,
# test quality, s to a model with an executor killed halfway (bench/spark.sh;
# BENCH_QUICK: 20000 rows, 50 trees, one round; BENCH_SPARK=0 skips it)
if [ "${BENCH_SPARK:-1}" != 0 ]; then
    echo
    if [ -n "${BENCH_QUICK:-}" ]; then
        export BENCH_SPARK_ROWS=${BENCH_SPARK_ROWS:-20000} BENCH_SPARK_TREES=${BENCH_SPARK_TREES:-50} \
            BENCH_SPARK_ROUNDS=${BENCH_SPARK_ROUNDS:-1}
    fi
    "$(dirname "$0")/spark.sh" "$BUILD"
fi
# the summary, every part's rows, and the targets met or missed
# (bench/summary.awk; bench/lib.sh summary_row, target_row)
echo
cat "$BENCH_SUMMARY"
echo
cat "$BENCH_TARGETS"
