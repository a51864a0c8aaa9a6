#!/bin/sh
# snapshot_fuzz.sh FUZZER GOLDEN_MANIFEST SECONDS — runs the manifest
# fuzzer (tests/fuzz/fuzz_manifest.c) for a few seconds from a fresh seed
# corpus: the golden manifest and broken copies of it.  A crash leaves its
# input in RALLY_FUZZ_ARTIFACTS (default /tmp/rally-fuzz-artifacts) and fails.
set -eu
fuzzer=$1 m=$2 secs=$3
d=$(mktemp -d /tmp/rally-fuzz-manifest-XXXXXX)
trap 'rm -rf "$d"' EXIT
mkdir "$d/corpus"
c=$d/corpus
cp "$m" "$c/golden"
head -c 300 "$m" > "$c/cut"
sed 's/"world_size": 2/"world_size": 3/' "$m" > "$c/world"
sed 's|"global.bin"|"../global.bin"|' "$m" > "$c/name"
sed 's/"format_version": 1/"format_version": 2/' "$m" > "$c/format"
printf '{}' > "$c/empty"
cd "$d"
status=0
"$fuzzer" -max_total_time="$secs" -max_len=8192 -timeout=10 -print_final_stats=1 "$c" \
    > "$d/log" 2>&1 || status=$?
tail -n 12 "$d/log"
if [ "$status" -ne 0 ]; then
    art=${RALLY_FUZZ_ARTIFACTS:-/tmp/rally-fuzz-artifacts}
    mkdir -p "$art"
    cp "$d"/crash-* "$d"/leak-* "$d"/timeout-* "$d"/oom-* "$art"/ 2>/dev/null || true
    grep -E 'ERROR|fuzz_manifest:' "$d/log" | head -n 5
    echo "snapshot_fuzz: the manifest fuzzer failed (status $status); inputs copied to $art"
fi
exit "$status"
