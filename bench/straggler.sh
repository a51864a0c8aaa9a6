#!/bin/sh
# bench/straggler.sh <builddir> — what the straggler accounting costs
# (docs/status.md, "Who the others wait for"): an 8-byte allreduce
# (bench_allreduce's public call, 50 calls a rep, 200 reps) with the window
# on (rally_lateness_window=200, the default) and off (0), at N = 2 and 4,
# and at N = 1 (the call without peers to wait for: the accounting's own cost),
# run after run interleaved A B B A (bench/lib.sh abba), BENCH_STRAGGLER_ROUNDS
# rounds (default 6).  "off" leaves the window unkept; the two stamps a call
# takes are the progress watch's and are taken either way.  A row: min,
# median, max over the rounds of each run's median time per call, and of
# the ratio on / off round by round.
set -eu
build=$(cd "$1" && pwd)
. "$(dirname "$0")/lib.sh"
rounds=${BENCH_STRAGGLER_ROUNDS:-6}
res=$(mktemp)
trap 'rm -f "$res"' EXIT
one() { # N WINDOW KEY: one job, "KEY median_us" from its RESULT line
    timeout "${BENCH_TIMEOUT:-900}" "$build/rally-run" -n "$1" "$build/bench/bench_allreduce" \
        8:200 "rally_lateness_window=$2" 2>&1 | awk -v k="$3" '$2 == "RESULT" { print k, $5 * 1000 }'
}
echo "straggler accounting: an 8-byte allreduce, window on (200) and off, $rounds rounds A B B A"
echo "  (min, median, max over the rounds)"
for n in 1 2 4; do
    on() { one "$n" 200 on; }
    off() { one "$n" 0 off; }
    abba "$rounds" on off >"$res"
    row "N = $n, window on: ns a call" ns "$res" on
    row "N = $n, window off: ns a call" ns "$res" off
    row "N = $n, on / off" x "$res" on off
done
