#!/bin/bash
# bench/cursor.sh <builddir> — what the data cursor costs a step
# (bench/bench_cursor.c): rally_cursor_next for rank 1 of 4 against a plain
# index slice out of a shuffled table (DistributedSampler's way), the
# medians of interleaved reps, 10,000,000 samples; then what that table
# costs, which the cursor does without, and this machine's memcpy.
set -euo pipefail
build=$(cd "$1" && pwd)
echo "data cursor: a step's share (rank 1 of 4) by rally_cursor_next against a slice of a shuffled table"
printf '%-8s %-7s %12s %12s %8s %12s\n' batch share cursor_ns slice_ns ratio ns_per_id
"$build/bench/bench_cursor" | awk '
    $1 == "CURSOR" { printf "%-8s %-7s %12s %12s %8s %12s\n", $2, $3, $4, $5, $6 "x", $7 }
    $1 == "TABLE" { printf "the slice'"'"'s table: %s ids, %.0f MB, %s ms to shuffle once an epoch on every rank; the cursor: 64 bytes\n", $2, $4 / 1e6, $3 }'
"$build/bench/ceiling" memcpy | awk '{ printf "memcpy (this machine): %.1f GB/s\n", $3 }'
