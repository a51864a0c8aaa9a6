#!/bin/bash
# hier.sh BUILD_DIR — the hierarchical allreduce (rally_hier=auto, the
# default) against the flat ring (rally_hier=off) with several ranks per
# "host": network namespaces with sshd (tests/rigs/netns_rig.sh) whose cables tc
# tbf limits to a rate, ranks filling the hosts in order (RIG_SLOTS).  Per
# layout the two modes run interleaved flat, hier, hier, flat (ABBA), round
# after round, and every run also reads each host's cable byte counters, so
# the table shows time, bus bandwidth, the hier/flat ratio and the bytes
# that crossed the cables, beside what each algorithm should send.
# Standalone; needs root.  bench/multihost.md ("Hierarchical allreduce")
# says what is measured and how to read it.
#
# Knobs: HIER_LAYOUTS="2x2 4x2 2x2c" (HOSTSxRANKS_PER_HOST; a trailing c:
# the ranks dealt over the hosts in turn, rank r on host r mod HOSTS, as
# Slurm's cyclic distribution places them), HIER_RATES="1gbit"
# (tc's units; "none": unshaped cables), HIER_BYTES=67108864, HIER_REPS=5,
# HIER_ROUNDS=2, HIER_TIMEOUT=600 (seconds per run).  Raw results:
# BUILD_DIR/bench-results/hier.txt (one line per run, columns named in its
# first line), each run's output beside it (hier-<layout>-<rate>-r<round>-
# <seq>-<mode>.log).
set -u
die() {
    echo "bench/hier: $*" >&2
    exit 1
}
[ $# -eq 1 ] || die "usage: bench/hier.sh BUILD_DIR"
BUILD=$(cd "$1" && pwd) || die "no build directory $1"
SRC=$(cd "$(dirname "$0")" && pwd)
LAYOUTS=${HIER_LAYOUTS:-"2x2 4x2 2x2c"}
RATES=${HIER_RATES:-"1gbit"}
BYTES=${HIER_BYTES:-67108864}
REPS=${HIER_REPS:-5}
ROUNDS=${HIER_ROUNDS:-2}
TMO=${HIER_TIMEOUT:-600}
OUT=$BUILD/bench-results
RALLY_RUN=$BUILD/rally-run
RALLY_BENCH=$BUILD/bench/bench_allreduce
[ -x "$RALLY_RUN" ] && [ -x "$RALLY_BENCH" ] || die "$RALLY_RUN or $RALLY_BENCH is missing: make build first"
for l in $LAYOUTS; do
    l=${l%c}
    case $l in
    [1-9]x[1-9] | [1-9][0-9]x[1-9] | [1-9]x[1-9][0-9] | [1-9][0-9]x[1-9][0-9]) ;;
    *) die "HIER_LAYOUTS: '$l' is not HOSTSxRANKS like 2x2" ;;
    esac
    [ "${l%x*}" -le 99 ] || die "HIER_LAYOUTS: $l: at most 99 hosts"
done
for v in "$BYTES" "$REPS" "$ROUNDS" "$TMO"; do
    case $v in '' | 0* | *[!0-9]*) die "HIER_BYTES, HIER_REPS, HIER_ROUNDS and HIER_TIMEOUT want positive integers" ;; esac
done
[ $((BYTES % 4)) -eq 0 ] || die "HIER_BYTES: $BYTES is not a multiple of 4 (float32)"
mkdir -p "$OUT"
RESULTS=$OUT/hier.txt

# bench_allreduce makes 1 + warm-up + REPS allreduces of BYTES
# (bench_common.h: the correctness check, bench_warmup(REPS), the timed reps;
# bench_batch is 1 at these sizes), beside small ones (a 1-float barrier
# before each rep, the per-rep times' MAX at the end, rally_checkpoint's
# agreement after each rep); the byte counters count all of them, and the
# job's start (ssh, the tracker) as well.
WARM=$((REPS >= 10 ? REPS / 5 : 1))
CALLS=$((1 + WARM + REPS))

# The flat ring is asked for with the setting rally_hier=off, which reaches
# the workers as the environment variable RALLY_HIER (docs/config.md: a key
# rally_<name> is read from RALLY_<NAME>).  A library without the key refuses
# an unknown RALLY_* variable, so ask it first: without the key both modes
# are the flat ring, and the table says so.
if probe=$(env -u RALLY_TRACKER RALLY_HIER=off timeout 30 "$RALLY_BENCH" 4:1 2>&1); then
    HAVE_HIER=1
    FLAT_OPTS=(-x RALLY_HIER=off)
elif echo "$probe" | grep -q 'RALLY_HIER is not a rally setting'; then
    HAVE_HIER=0
    FLAT_OPTS=()
    echo "bench/hier: this library has no setting rally_hier: both modes run the flat ring" >&2
else
    die "bench_allreduce alone (rank 0 of 1) failed: $probe"
fi

. "$SRC/../tests/rigs/netns_rig.sh"

# counters H: "tx rx" of each host's cable (its rh0), one host a line
counters() {
    local i d=/sys/class/net/$RIG_IF/statistics
    for i in $(seq 1 "$1"); do
        rig_in "$i" cat "$d/tx_bytes" "$d/rx_bytes" | paste -sd' ' || return 1
    done
}

# run_one LAYOUT RATE BITS ROUND SEQ MODE: one job on the rig (up, shaped),
# its line appended to $RESULTS
run_one() {
    local layout=$1 rate=$2 bits=$3 round=$4 seq=$5 mode=$6 h=${1%x*} s=${1#*x} cyc=
    case $s in *c) s=${s%c} cyc=1 ;; esac
    local log=$OUT/hier-$layout-$rate-r$round-$seq-$mode.log before after line opts=()
    [ "$mode" = flat ] && opts=("${FLAT_OPTS[@]}")
    before=$(counters "$h") || die "cannot read the byte counters of $RIG_IF"
    RIG_SLOTS=$s RIG_CYCLIC=$cyc rig_job "$RALLY_RUN" "$log" "$TMO" "${opts[@]}" -- "$RALLY_BENCH" "$BYTES:$REPS" ||
        die "rig_job failed"
    wait "$RIG_JOB" || die "$layout $mode at $rate (round $round) failed: see $log"
    after=$(counters "$h") || die "cannot read the byte counters of $RIG_IF"
    line=$(sed -n 's/^\[0\] *\(RESULT .*\)$/\1/p' "$log")
    [ -n "$line" ] || die "$layout $mode at $rate (round $round): no RESULT line in $log"
    set -- $line
    # per host: tx and rx deltas
    local d
    d=$(paste -d' ' <(echo "$before") <(echo "$after") |
        awk '{ tx = $3 - $1; rx = $4 - $2; T += tx; R += rx; l = l (NR > 1 ? "," : "") sprintf("%.0f", tx) }
             END { printf "%.0f %.0f %s", T, R, l }')
    echo "$layout $h $s $bits $round $seq $mode $2 $3 $4 $5 $6 $CALLS $d" >>"$RESULTS"
    awk -v l="$layout" -v m="$mode" -v r="$round" -v us="$4" -v c="$CALLS" -v d="$d" -v h="$h" \
        -v rate="$rate" 'BEGIN {
        split(d, f, " ")
        printf "bench/hier: %s %s round %d %-4s %9.1f ms, %7.1f MiB/host/allreduce out\n",
            l, rate, r, m, us / 1e3, f[1] / h / c / 1048576
    }' >&2
}

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "layout hosts slots rate_bits round seq mode bytes reps median_us min_us max_us" \
    "allreduces tx_total rx_total tx_per_host" >"$RESULTS"
for layout in $LAYOUTS; do
    h=${layout%x*}
    rig_up "$h"
    rc=$?
    [ $rc -eq 77 ] && die "cannot run here: $RIG_SKIP"
    [ $rc -eq 0 ] || die "the namespaces could not be set up (above)"
    for rate in $RATES; do
        if [ "$rate" = none ]; then
            bits=0
        else
            bits=$(tc_rate_bits "$rate") || die "HIER_RATES: '$rate' is not a rate like 1gbit"
        fi
        rig_tbf "$rate" || die "tc tbf $rate failed"
        for round in $(seq 1 "$ROUNDS"); do
            seq=0
            for mode in flat hier hier flat; do
                seq=$((seq + 1))
                run_one "$layout" "$rate" "$bits" "$round" "$seq" "$mode"
            done
        done
    done
    rig_down
done
trap - EXIT INT TERM

# --- the table ---------------------------------------------------------------
echo "# hierarchical (rally_hier=auto) vs flat ring (rally_hier=off): HOSTSxRANKS, ranks filling"
echo "# hosts in order; float32 sum of $BYTES bytes in place, $REPS reps + $WARM warm-up + 1 check"
echo "# = $CALLS allreduces a run; runs flat,hier,hier,flat x $ROUNDS rounds; tc tbf both ways on every cable"
[ "$HAVE_HIER" = 1 ] ||
    echo "# NOTE: this library has no rally_hier setting: the 'hier' rows are the flat ring too"
echo "# median ms: median over the runs of each run's median rep (max over ranks);"
echo "# busbw = 2(N-1)/N x bytes / time, N = all ranks; hier/flat = busbw ratio, per round"
echo "# (sum of its 2 flat times / sum of its 2 hier times), median [min-max] over rounds;"
echo "# out MiB = bytes sent on the hosts' cables (frames: payload + TCP/IP/Ethernet headers,"
echo "# ACKs, the small calls, the job's start) / hosts / allreduces, median over runs;"
echo "# ideal MiB = payload each host sends per allreduce: flat 2(N-1)/N x bytes (cyclic: x ranks per host), hier 2(H-1)/H x bytes"
echo "# $(date -u '+%F %T UTC'); $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1);" \
    "$(nproc) cores; $(uname -sr);"
echo "# load average $LOAD0 before the runs, $(cut -d' ' -f1-3 /proc/loadavg) after (the runs' own ranks count)"
printf '%-6s %-7s %-5s %10s %11s %8s %17s %9s %10s\n' layout rate mode "median ms" "busbw Gb/s" \
    "of link" "hier/flat" "out MiB" "ideal MiB"
awk -v B="$BYTES" '
function median(a, n,    i, j, t) {
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
NR == 1 { next }
{
    k = $1 " " $4
    if (!(k in seen)) { seen[k] = 1; keys[++nk] = k; H[k] = $2; S[k] = $3 }
    km = k " " $7
    n[km]++; T[km, n[km]] = $10; X[km, n[km]] = $14 / $2 / $13
    tr[k, $5, $7] += $10; rounds[k, $5] = 1
}
END {
    for (i = 1; i <= nk; i++) {
        k = keys[i]; split(k, f, " "); h = H[k]; N = h * S[k]
        rate = f[2] == 0 ? "none" : (f[2] >= 1e9 ? f[2] / 1e9 "gbit" : f[2] / 1e6 "mbit")
        nr = 0; delete q; delete t; delete x
        for (r = 1; (k, r) in rounds; r++) if (tr[k, r, "hier"] > 0) q[++nr] = tr[k, r, "flat"] / tr[k, r, "hier"]
        lo = hi = q[1]; for (j = 2; j <= nr; j++) { if (q[j] < lo) lo = q[j]; if (q[j] > hi) hi = q[j] }
        qm = median(q, nr)
        for (m = 1; m <= 2; m++) {
            mode = m == 1 ? "flat" : "hier"; km = k " " mode
            for (j = 1; j <= n[km]; j++) { t[j] = T[km, j]; x[j] = X[km, j] }
            us = median(t, n[km]); mib = median(x, n[km]) / 1048576
            busbw = 2 * (N - 1) / N * B / (us * 1e-6) * 8 / 1e9
            frac = f[2] == 0 ? "-" : sprintf("%.1f %%", 100 * busbw * 1e9 / f[2])
            # cyclic (a trailing c): every ring edge leaves its host, S ranks sending per cable
            cyc = f[1] ~ /c$/ ? S[k] : 1
            ideal = (mode == "flat" ? cyc * 2 * (N - 1) / N : 2 * (h - 1) / h) * B / 1048576
            ratio = mode == "flat" ? "" : sprintf("%.2f [%.2f-%.2f]", qm, lo, hi)
            printf "%-6s %-7s %-5s %10.1f %11.3f %8s %17s %9.1f %10.1f\n", f[1], rate, mode,
                us / 1e3, busbw, frac, ratio, mib, ideal
        }
        printf "%-6s %-7s ceiling hier/flat (cable-bound, ideal bytes): %.2f\n", f[1], rate,
            (f[1] ~ /c$/ ? S[k] : 1) * (2 * (N - 1) / N) / (2 * (h - 1) / h)
    }
}' "$RESULTS"
