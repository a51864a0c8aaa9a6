#!/bin/sh
# bench/hostloss.sh <builddir> — what keeping local models safe from a
# whole host costs, full copies (rally_local_replica=2) against XOR parity
# (rally_local_scheme=xor, sets of one rank per host), on hosts of 4 ranks
# made on this machine (rally_host_group=4), at N = 8 and 12 (docs/
# recovery.md, "Failure domains"; called by bench/run.sh, runs alone too):
#   1. a checkpoint with a local model of B bytes a rank: its time (median
#      over the job's checkpoints, max over ranks) and the most one rank
#      holds for the newest version, in B;
#   2. the 4 ranks of one host killed at once (a rally_mock group) and
#      restarted: the time from the kill to the job back in step
#      (bench_recovery local: the iteration with the loss minus the median).
# Copies and XOR run job after job interleaved A B B A, BENCH_HOSTLOSS_ROUNDS
# rounds (default 4); each row gives min, median and max over the rounds,
# and the ratio XOR / copies round by round.  This machine's memcpy comes
# first, in the same block.
set -eu
build=$(cd "$1" && pwd)
. "$(dirname "$0")/lib.sh"
rounds=${BENCH_HOSTLOSS_ROUNDS:-4}
run=$build/rally-run
res=$(mktemp)
sync=$(mktemp -d)
trap 'rm -rf "$res" "$sync"' EXIT

echo "whole-host safety of local models: copies (k=2) against XOR parity, hosts of 4 ranks,"
echo " $rounds rounds A B B A (min, median, max over the rounds)"
"$build/bench/ceiling" memcpy | awk '{ printf "  %-54s %9.1f  GB/s\n", "memcpy (this machine, same block)", $3 }'
for n in 8 12; do
    for m in 1048576 16777216; do
        mib=$((m / 1048576))
        ckpt() { # KEY SETTING: "KEY_us T" and "KEY_held B" of one job
            "$run" -n "$n" "$build/bench/bench_ckpt" "$m" 5 local rally_host_group=4 "$2" 2>&1 |
                awk -v k="$1" -v m="$m" '$2 == "CKPT" { print k "_us", $5; print k "_held", $8 / m }'
        }
        lose() { # KEY SETTING: "KEY_s T", the time from the kill to the job back in step
            RALLY_MOCK_SYNC=$sync "$run" -n "$n" --max-restarts 2 "$build/bench/bench_recovery" \
                "$m" 8 local rally_host_group=4 "$2" rally_mock=4,4,0,0,op,h \
                rally_mock=5,4,0,0,op,h rally_mock=6,4,0,0,op,h rally_mock=7,4,0,0,op,h 2>&1 |
                awk -v k="$1" '$2 == "RECOVERY" { print k "_s", $4 }'
        }
        copies() { ckpt copies rally_local_replica=2; lose copies rally_local_replica=2; }
        xor() { ckpt xor rally_local_scheme=xor; lose xor rally_local_scheme=xor; }
        abba "$rounds" copies xor >"$res"
        row "N = $n, $mib MiB: checkpoint, copies" us "$res" copies_us
        row "N = $n, $mib MiB: checkpoint, xor" us "$res" xor_us
        row "N = $n, $mib MiB: checkpoint, xor / copies" x "$res" xor_us copies_us
        row "N = $n, $mib MiB: held by a rank, copies" B "$res" copies_held
        row "N = $n, $mib MiB: held by a rank, xor" B "$res" xor_held
        row "N = $n, $mib MiB: host lost to back in step, copies" s "$res" copies_s
        row "N = $n, $mib MiB: host lost to back in step, xor" s "$res" xor_s
        row "N = $n, $mib MiB: host lost, xor / copies" x "$res" xor_s copies_s
    done
done
