# bench/lib.sh — what the benchmarks share (sourced by bench/run.sh and its
# parts; POSIX sh): timing a command, interleaving (abba, interleave), medians
# and ranges (spread, row), make bench's summary and target rows
# (summary_row, target_row), the snapshot benchmarks' writer and dd, and
# the Swift rig's start and stop.

# writer_ms PROG ROOT MIB VERSION: the snapshot writer alone (PROG is
# snapshot_bench; --write runs rally__snap_write_part, checksums included)
# writing a MIB-MiB model into ROOT (a directory or s3://BUCKET/PREFIX) as
# version VERSION of the job "w", once: the ms it took, in the process
writer_ms() {
    _w=$("$1" --write "$2" "$3" 1 "$4" 2>&1) || { echo "$_w" >&2; return 1; }
    echo "$_w" | sed -n 's/.*ms=\([0-9.]*\).*/\1/p'
}

# dd_fsync_s FILE MIB: the seconds dd bs=1M conv=fsync takes to write MIB
# MiB of zeros to FILE, a fresh file
dd_fsync_s() {
    rm -f "$1"
    { dd if=/dev/zero of="$1" bs=1M count="$2" conv=fsync 2>&1; } |
        sed -n 's/.* copied, \([0-9.]*\) s.*/\1/p'
}

# memcpy_gbs BUILD: this machine's memcpy rate now, GB/s (bench/ceiling);
# load1: its load average over the last minute
memcpy_gbs() {
    "$1/bench/ceiling" memcpy | awk '$1 == "CEILING" && $2 == "memcpy" { print $3 }'
}
load1() { cut -d' ' -f1 /proc/loadavg; }

# secs CMD...: runs CMD (its output kept in $BENCH_LOG, else dropped) and
# prints its wall time in seconds; on failure, says so with the output
secs() {
    _t0=$(date +%s%N)
    "$@" >"${BENCH_LOG:-/dev/null}" 2>&1 || {
        echo "bench: failed: $*" >&2
        [ -n "${BENCH_LOG:-}" ] && tail -n 20 "$BENCH_LOG" >&2
        return 1
    }
    _t1=$(date +%s%N)
    awk -v a="$_t0" -v b="$_t1" 'BEGIN { printf "%.6f\n", (b - a) / 1e9 }'
}

# abba ROUNDS A B: the functions A and B, ROUNDS times each, interleaved
# A B B A A B B A ... (a load that drifts slows both alike), each called with
# the round's number; their lines "KEY VALUE" come out as "ROUND KEY VALUE"
abba() {
    _i=1
    while [ "$_i" -le "$1" ]; do
        if [ $((_i % 2)) = 1 ]; then
            _a=$("$2" "$_i")
            _b=$("$3" "$_i")
        else
            _b=$("$3" "$_i")
            _a=$("$2" "$_i")
        fi
        printf '%s\n%s\n' "$_a" "$_b" | sed -n "/./s/^/$_i /p"
        _i=$((_i + 1))
    done
}

# interleave ROUNDS F1 F2 ... Fk: abba for k functions: F1 .. Fk on odd
# rounds, Fk .. F1 on even ones, each called with the round's number; their
# lines "KEY VALUE" come out as "ROUND KEY VALUE"
interleave() {
    _n=$1
    shift
    _r=
    for _f in "$@"; do _r="$_f $_r"; done
    _i=1
    while [ "$_i" -le "$_n" ]; do
        if [ $((_i % 2)) = 1 ]; then _fs="$*"; else _fs=$_r; fi
        for _f in $_fs; do
            _o=$("$_f" "$_i")
            printf '%s\n' "$_o" | sed -n "/./s/^/$_i /p"
        done
        _i=$((_i + 1))
    done
}

# rig_start DIR: the Swift rig (tests/rigs/swift_rig.sh, S3 API on 127.0.0.1)
# started in DIR, outside any timing; its variables set (. DIR/env) and the
# bucket "bench" made.  On failure: its output, and 1.  rig_stop DIR ends it
# (safe twice, or before start: for a trap).  s3curl ARGS...: curl signed
# for the rig (SigV4, UNSIGNED-PAYLOAD, its netrc)
_rig_sh=$(cd "$(dirname "$0")/.." && pwd)/tests/rigs/swift_rig.sh
rig_start() {
    sh "$_rig_sh" start "$1" 2>"$1.out" ||
        { cat "$1.out" >&2; echo "bench: the Swift rig did not start" >&2; return 1; }
    . "$1/env"
    s3curl -o /dev/null -X PUT "$AWS_ENDPOINT_URL/bench"
}
rig_stop() {
    sh "$_rig_sh" stop "$1" 2>/dev/null
}
# rig_scratch BUILD NAME: $tmp, a new directory under BUILD, and $rig in it
# for rig_start; on exit (or a signal) the rig is stopped and $tmp removed
rig_scratch() {
    tmp=$(mktemp -d "$1/$2.XXXXXX") || exit 1
    rig=$tmp/rig
    trap 'trap "" TERM INT HUP; rig_stop "$rig"; rm -rf "$tmp"' EXIT
    trap 'exit 143' TERM INT HUP
}
s3curl() {
    curl -sSf -m 120 --netrc-file "$SWIFT_RIG_NETRC" --aws-sigv4 "aws:amz:$AWS_DEFAULT_REGION:s3" \
        -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$@"
}

# spread FILE KEY [KEY2]: "min median max" over the rounds of KEY's values
# in FILE (lines "ROUND KEY VALUE"); with KEY2, of the ratios KEY / KEY2,
# round by round
spread() {
    awk -v k="$2" -v k2="${3:-}" '$2 == k { a[$1] = $3 } $2 == k2 { b[$1] = $3 }
    END { for (r in a) if (k2 == "") v[++n] = a[r]; else if (b[r] > 0) v[++n] = a[r] / b[r]
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
        if (n) print v[1], (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2), v[n] }' "$1"
}

# row LABEL UNIT FILE KEY [KEY2]: a table line, spread's min, median, max
# (UNIT x, s: 2 decimals; n, ms: none; else 1)
row() {
    spread "$3" "$4" "${5:-}" | awk -v l="$1" -v u="$2" '{
        f = (u == "x" || u == "s") ? "%9.2f" : (u == "n" || u == "ms") ? "%9.0f" : "%9.1f"
        printf "  %-54s " f " " f " " f "  %s\n", l, $1, $2, $3, u }'
}

# summary_row PART RALLY PEER X NOTE: one row of make bench's summary table
# (bench/summary.awk prints its header), when bench/run.sh collects one
# ($BENCH_SUMMARY); a part run alone prints its own tables only
summary_row() {
    [ -n "${BENCH_SUMMARY:-}" ] || return 0
    printf '| %s | %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" "$5" >>"$BENCH_SUMMARY"
}

# target_row TARGET MEASURED VALUE CMP GOAL: one row of make bench's table
# of targets ($BENCH_TARGETS; bench/summary.awk prints its header): "met"
# when the number VALUE (the median MEASURED shows) CMP GOAL holds (CMP:
# <, <= or >=), "missed" when not, "not measured" for an empty VALUE
target_row() {
    [ -n "${BENCH_TARGETS:-}" ] || return 0
    _v=$(awk -v v="$3" -v c="$4" -v g="$5" 'BEGIN {
        if (v == "") { print "not measured"; exit }
        ok = c == "<" ? v + 0 < g + 0 : c == "<=" ? v + 0 <= g + 0 : v + 0 >= g + 0
        print ok ? "met" : "missed" }')
    printf '| %s | %s | %s %s | %s |\n' "$1" "${2:--}" "$4" "$5" "$_v" >>"$BENCH_TARGETS"
}
