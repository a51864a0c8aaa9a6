#!/bin/sh
# Runs a fuzzer for a few seconds from a fresh seed corpus.
#   run_fuzz.sh FUZZER libsvm|csv|msg SECONDS RALLY-DATAGEN
# A data seed is one option byte (see fuzz_data.c) followed by a file:
# small generated data sets, and the malformed shapes the unit tests pin.
# A msg seed is a mode byte then a frame body or a job script (fuzz_msg.c).
# A crash leaves its input in the working directory (crash-*) and fails.
set -eu
fuzzer=$1 fmt=$2 secs=$3 gen=$4
d=$(mktemp -d /tmp/rally-fuzz-XXXXXX)
trap 'rm -rf "$d"' EXIT
mkdir "$d/corpus"
seed() { # name, option byte (octal), text
    printf "\\$2" > "$d/corpus/$1"
    printf '%b' "$3" >> "$d/corpus/$1"
}
if [ "$fmt" = msg ]; then
    # one body per message (mode byte: type - 16), little-endian as on the
    # wire; then a job of 2 (mode 0x81) that runs, loses rank 1 and takes it back
    seed register 000 '\0001\0000\0000\00007\0377\0377\0377\0377\0002\0000\0000\0000\0240\0017\0000\0000\0000\0000\0001\0000\0000\0000p'
    seed assign 001 '\0001\0000\0000\0000\0002\0000\0000\0000\0001\0000\0000\0000\0001\0000\0000\0000a\0001\0000\0001\0000\0000\0000\0002\0000\0000\0000bb\0002\0000\0002\0000\0000\0000\0003\0000\0000\0000'
    seed print 004 '\0005\0000\0000\0000hello'
    seed error 005 '\0011\0000\0000\0000\0003\0000\0000\0000bad'
    seed reset 011 '\0002\0000\0000\0000\0004\0000\0000\0000lost'
    seed rejoin 012 '\0002\0000\0000\0000\0007\0000\0000\0000\0003\0000\0000\0200\0003\0000\0000\0000'
    seed link 014 '\0001\0000\0000\0000\0002\0000\0000\0000no'
    seed empty 002 ''
    # REPORT (type 33): VALUE "loss" = 1.5 at version 3
    seed report 021 '\0001\0003\0000\0000\0000\0000\0000\0000\0000\0000\0000\0000\0000\0000\0000\0370\0077\0000\0000\0000\0000\0000\0000\0000\0000\0004\0000\0000\0000loss\0000\0000\0000\0000'
    seed job 201 '\0000\0000\0000\0001\0000\0000\0040\0000\0027\0001\0000\0000\00000\0377\0377\0377\0377\0000\0000\0000\0000\0240\0017\0000\0000\0000\0000\0000\0000\0000\0000\0041\0000\0027\0001\0000\0000\00001\0377\0377\0377\0377\0000\0000\0000\0000\0241\0017\0000\0000\0000\0000\0000\0000\0000\0000\0040\0002\0000\0041\0002\0000\0011\0000\0000\0002\0000\0000\0042\0000\0027\0001\0000\0000\00001\0377\0377\0377\0377\0000\0000\0000\0000\0242\0017\0000\0000\0000\0000\0000\0000\0000\0000\0040\0012\0020\0002\0000\0000\0000\0005\0000\0000\0000\0000\0000\0000\0000\0001\0000\0000\0000\0042\0002\0000\0040\0002\0000\0030È\0000'
elif [ "$fmt" = libsvm ]; then
    "$gen" --rows 12 --features 4 --centers 2 --seed 1 -o "$d/g" 2>/dev/null
    { printf '\000'; cat "$d/g"; } > "$d/corpus/gen"
    seed ok 000 '1 1:0.5 3:-2e-3\n0 2:7 10:.25\n'
    seed crlf 000 '1 1:1\r\n0 2:2\r\n1 3:3'
    seed qid 002 '+1 qid:3 1:0.5 # comment\n\n-1\t2:7\n'
    seed base0 001 '1 0:1 7:2\n0 1:1\n'
    seed bad 000 '1 2:1 2:3\n1 0:1\nx 1:nan\n1 1:1e99 2:0x1\n'
    seed long 100 '1 1:1 2:2 3:3 4:4 5:5 6:6 7:7 8:8 9:9 10:10 11:11 12:12 13:13\n1 1:1\n'
else
    "$gen" --rows 12 --features 4 --centers 2 --seed 1 --format csv --header -o "$d/g" 2>/dev/null
    { printf '\005'; cat "$d/g"; } > "$d/corpus/gen"
    seed ok 000 '1,2.5,3\n0,,-1\n4, 5 ,6'
    seed header 001 'y,"a",b\n1,2,3\r\n0,1,2\r\n'
    seed auto 002 '1,2\n3,4\n\n5,6\n'
    seed label 014 'a,b,c\n1,2,3\n4,,6\n'
    seed tabs 040 '1\t2\t3\n4\t5\t6\n'
    seed bad 000 '1,2,3\n4,5\n6,x,7\n1,2,3,4\n'
    seed long 100 '1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25\n'
fi
cd "$d"
status=0
"$fuzzer" -max_total_time="$secs" -max_len=4096 -timeout=10 -print_final_stats=1 \
    "$d/corpus" > "$d/log" 2>&1 || status=$?
tail -n 12 "$d/log"
if [ "$status" -ne 0 ]; then
    art=${RALLY_FUZZ_ARTIFACTS:-/tmp/rally-fuzz-artifacts}
    mkdir -p "$art"
    cp "$d"/crash-* "$d"/leak-* "$d"/timeout-* "$d"/oom-* "$art"/ 2>/dev/null || true
    grep -E 'ERROR|fuzz_data:|fuzz_msg:' "$d/log" | head -n 5
    echo "run_fuzz: $fmt fuzzer failed (status $status); failing inputs copied to $art"
fi
exit "$status"
