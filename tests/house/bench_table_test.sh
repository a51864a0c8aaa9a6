#!/bin/bash
# bench_table_test.sh <srcdir> — bench/run.sh --table (bench/table.awk) on a
# made-up results file whose answers are known: the floor, the ratios, the
# allocation-bound marker, and issue 12's bars met or missed with their
# margins.  No benchmark runs; nothing is timed.
set -euo pipefail
src=${1:?usage: bench_table_test.sh <srcdir>}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rally-bench-table.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; echo "--- output:" >&2; cat "$tmp/out" >&2; exit 1; }
want() { grep -qE -- "$1" "$tmp/out" || fail "no line matching: $1"; }
refuse() { if grep -qE -- "$1" "$tmp/out"; then fail "a line matches: $1"; fi; }

# Ceilings: 2 cores; copy rates (GB/s) best over threads: 1M 20, 16M 5, 64M 5;
# first touch 1 GB/s.  Columns: column N bytes reps median_us min max faults.
cat >"$tmp/results.txt" <<'RES'
ceiling memcpy 5
ceiling tcp 2
ceiling cores 2
ceiling pagesize 4096
ceiling fresh 1.0
ceiling memcpy-at 4096 1 30
ceiling memcpy-at 65536 1 30
ceiling memcpy-at 1048576 1 10
ceiling memcpy-at 1048576 2 20
ceiling memcpy-at 16777216 1 5
ceiling memcpy-at 16777216 2 4
ceiling memcpy-at 67108864 1 5
ceiling tcp-par 1 2
ceiling tcp-par 4 4
rally-shm 4 8 9 10 10 10 0.0
rally-shm-plain 4 8 9 5 5 5 0.0
mpi-shm 4 8 9 12 12 12 0.0
rally-tcp 4 65536 9 100 100 100 0.0
mpi-tcp 4 65536 9 150 150 150 0.0
rally-shm 4 1048576 9 1000 1000 1000 0.0
mpi-shm 4 1048576 9 1300 1300 1300 0.0
rally-shm 4 16777216 9 10000 10000 10000 0.0
rally-shm-plain 4 16777216 9 9600 9600 9600 0.0
mpi-shm 4 16777216 9 11000 11000 11000 1.0
rally-shm 4 67108864 9 50000 50000 50000 0.0
mpi-shm 4 67108864 9 100000 100000 100000 8194.0
RES
"$src/bench/run.sh" --table "$tmp/results.txt" >"$tmp/out"

# 16M floor, N = 4, f = 3/4, on the ring (from 256K the robust call writes
# the 2 of 4 pieces it keeps, +0.5): 4 x (4.25 x 16M / (2 x 5e3) + 3 x 16M /
# (2 x 20e3)) us = 33554.4 us, i.e. bus bandwidth 1.5 x 16M / 33554.4 us =
# 0.750 GB/s.
want '^4 +16M \| +0\.75 '
# 1M (halving-doubling, in place: +0.5 too): 4 x (4.25 x 1M / (2 x 20e3)
# + 3 x 1M / (2 x 20e3)) = 760.2 us
want '^4 +1M \| +760 +708 '
# shm plain floor 16M: 4 x (3.75 x 16M / 1e4 + 1258.3) = 30198.8 us; TCP: 6 x 16M / 4e3 = 25165.8 us
want '^4 +16M \| +33554 +30199 +25166 \| +0\.3 '
# ratios on the same transport, and the overhead
want '^4 +1M \| .* 1\.30 \|'
want '^4 +16M \| .* \+4% .* 1\.10 \|'
# mpi-shm at 64M: 8194 faults x 4 KiB at 1 GB/s = 33.6 ms of 100 ms: allocation-bound
want '^4 +64M \| .*\*'
want 'mpi-shm N=4 64M: 8194 page faults per call \(50% .*>= ~33563 of its 100000 us \(34%\)'
refuse 'rally-shm N=4 64M'
# the bars
want 'rally-shm >= 1\.2x mpi-shm bus bw +1M .*x1\.30 +met +margin \+8%'
want 'rally-shm >= 1\.2x mpi-shm bus bw +16M .*x1\.10 +MISSED by 8% \(needs x1\.09 its speed\)'
want 'rally-shm >= 1\.2x mpi-shm bus bw +64M .*x2\.00 +met +margin \+67% +\(mpi-shm allocation-bound here\)'
want 'rally-shm 8 B latency <= mpi-shm +8 +10\.0 vs 12\.0 us +met +margin \+20%'
want 'rally-tcp >= 1\.2x mpi-tcp bus bw +64K .*x1\.50 +met +margin \+25%'
want 'robust / plain <= 1\.5 \(shm\) +8 .*x2\.00 +MISSED by 25%'
want 'robust overhead <= 10% \(shm\) +16M .*\+4\.2% +met +margin \+6%'
want '5 of 7 bars met\.'
want 'neither side is allocation-bound there'

# Without N = 4 the bars are not checked, and say so.
awk '$1 != "ceiling" {$2 = 2} {print}' "$tmp/results.txt" >"$tmp/n2.txt"
"$src/bench/run.sh" --table "$tmp/n2.txt" >"$tmp/out"
want 'bars: not checked'
refuse 'bars met'
# The summary (bench/summary.awk): medians and ranges of the ratio over the
# rounds, each round's peer against the same round's rally; the floor and
# the load by round; only the sizes a user compares.
cat >"$tmp/rounds.txt" <<'RND'
1 0.5 rally-shm 2 8 1.0
1 0.5 mpi-shm 2 8 0.6
1 0.6 rally-shm 2 64 2.0
1 0.6 mpi-shm 2 64 2.0
1 0.6 rally-shm 2 1048576 200
1 0.7 mpi-shm 2 1048576 260
1 0.7 rally-tcp 2 1048576 400
1 0.7 gloo 2 1048576 800
memcpy 1 0.8 9.5
2 1.5 mpi-shm 2 8 0.8
2 1.5 rally-shm 2 8 0.5
2 1.6 mpi-shm 2 1048576 250
2 1.6 rally-shm 2 1048576 125
2 1.9 gloo 2 1048576 700
2 1.9 rally-tcp 2 1048576 350
1 0.7 rally-shm 2 16777216 1000
1 0.7 mpi-shm 2 16777216 1100
memcpy 2 2.0 9.1
2 1.9 mpi-shm 2 16777216 1000
2 1.9 rally-shm 2 16777216 1000
RND
awk -v targets="$tmp/targets" -f "$src/bench/summary.awk" "$tmp/rounds.txt" >"$tmp/out"
want 'median over 2 round'
want '^\| 2 \| 8 B \| 0\.8 us \| 0\.7 us \| 1\.10x \(0\.60-1\.60\) \|'
want '^\| 2 \| 1 MiB \| 6\.45 GB/s \| 4\.11 GB/s \| 1\.65x \(1\.30-2\.00\) \| 2\.80 GB/s \| - \| - \| 1\.40 GB/s \| 2\.00x \(2\.00-2\.00\) \|'
refuse '\| 64 B \|'
want 'round 1: memcpy 9\.5 GB/s, load 0\.5-0\.7; round 2: memcpy 9\.1 GB/s, load 1\.5-1\.9'
want '^\| part \| rally \| peer \| x \(range\) \|'
# The targets the allreduce's medians decide (8 B: at least 1.0x at N = 2;
# 1, 16 and 64 MiB: 1.2x), and the parts' rows (bench/lib.sh target_row):
# a median on the goal meets it, an empty one is not measured.
(
    BENCH_TARGETS=$tmp/targets
    . "$src/bench/lib.sh"
    target_row "start-up 256" "0.90 s (0.8-1.2)" 0.90 "<" "1 s"
    target_row "start-up 1024" "3.00 s" 3.00 "<" "3 s"
    target_row "recovery" "0.25 s" 0.25 "<=" "0.25 s"
    target_row "torch" "0.99x" 0.99 ">=" 1.0x
    target_row "torch 4" "" "" ">=" 1.0x
)
mv "$tmp/targets" "$tmp/out"
want '^\| target \| measured: median \(range\) \| goal \| verdict \|'
want '^\| the allreduce at 8 B, N = 2: .* \| 1\.10x \(0\.60-1\.60\) \| >= 1\.0x \| met \|$'
want '^\| the allreduce at 1 MiB, N = 2: .* \| 1\.65x \(1\.30-2\.00\) \| >= 1\.2x \| met \|$'
want '^\| the allreduce at 16 MiB, N = 2: .* \| 1\.05x \(1\.00-1\.10\) \| >= 1\.2x \| missed \|$'
want '^\| the allreduce at 64 MiB, N = 2: .* \| - \| >= 1\.2x \| not measured \|$'
refuse 'N = 4'
want '^\| start-up 256 \| 0\.90 s \(0\.8-1\.2\) \| < 1 s \| met \|$'
want '^\| start-up 1024 \| 3\.00 s \| < 3 s \| missed \|$'
want '^\| recovery \| 0\.25 s \| <= 0\.25 s \| met \|$'
want '^\| torch \| 0\.99x \| >= 1\.0x \| missed \|$'
want '^\| torch 4 \| - \| >= 1\.0x \| not measured \|$'
echo "bench_table_test: ok"
