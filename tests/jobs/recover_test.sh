#!/bin/sh
# recover_test.sh RALLY_RUN PLAIN MOCK N DEATHS [rally_mock=... | other args]...
# (rally_mock= arguments go to the run with failures only, the others to
# both; EXPECT=pattern, when set, must appear in the output with failures;
# RUN_OPTS, rally-run's options, and MOCK_ARGS, the program's, apply to the
# run with failures only)
#
# Runs the recover job once without failures (PLAIN, linked with librally)
# and once with the given kill points (MOCK, linked with librally_mock), and
# checks that
#   - both runs succeed and print the same model digest (bit-identical);
#   - rally-run's summary counts exactly DEATHS deaths, and a recovery for each;
#   - every rank printed one "pid" line per incarnation: survivors kept their
#     process (one line), a rank that died d times printed d + 1.
# Each run is bounded in time (about ten times what a healthy run of N
# workers takes on a loaded 2-core machine, so a build that hangs fails in
# seconds); run_job.sh checks no process is left behind.
set -u
run=$1 plain=$2 mock=$3 n=$4 deaths=$5
shift 5
here=$(dirname "$0")
points="" common=""
for a in "$@"; do
    case $a in
    rally_mock=*) points="$points $a" ;;
    *) common="$common $a" ;;
    esac
done
size=${RECOVER_SIZE:-2000}
iters=${RECOVER_ITERS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
plain_s=$((10 + 3 * n)) mock_s=$((20 + 6 * n))

# shellcheck disable=SC2086 # the argument lists split on purpose
"$here/../rigs/run_job.sh" 0 "$plain_s" "$run" -n "$n" "$plain" "$size" "$iters" $common >"$tmp/plain" 2>&1 || {
    cat "$tmp/plain"; echo "recover_test: the failure-free run failed"; exit 1; }
# shellcheck disable=SC2086
"$here/../rigs/run_job.sh" 0 "$mock_s" "$run" -n "$n" --max-restarts 4 ${RUN_OPTS:-} "$mock" "$size" "$iters" \
    $common $points ${MOCK_ARGS:-} \
    >"$tmp/mock" 2>&1 || { cat "$tmp/mock"; echo "recover_test: the run with failures failed"; exit 1; }
cat "$tmp/mock"

d0=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/plain")
d1=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/mock")
fail=0
if [ -z "$d0" ] || [ "$d0" != "$d1" ]; then
    echo "recover_test: digests differ: without failures '$d0', with failures '$d1'"
    fail=1
fi
summary=$(grep 'rally-run: summary:' "$tmp/mock")
got=$(echo "$summary" | sed -n 's/.*summary: deaths=\([0-9]*\).*/\1/p')
rec=$(echo "$summary" | sed -n 's/.*recovered=\([0-9]*\).*/\1/p')
if [ "$got" != "$deaths" ] || [ "$rec" != "$deaths" ]; then
    echo "recover_test: summary '$summary': want deaths=$deaths recovered=$deaths"
    fail=1
fi
per=$(echo "$summary" | sed -n 's/.*per-rank-deaths=\([0-9:,]*\).*/\1/p')
r=0
while [ "$r" -lt "$n" ]; do
    dr=$(echo "$per" | tr ',' '\n' | sed -n "s/^$r:\([0-9]*\)$/\1/p")
    dr=${dr:-0}
    lines=$(grep -c "^\[$r\] pid $r " "$tmp/mock")
    if [ "$lines" -ne $((dr + 1)) ]; then
        echo "recover_test: rank $r printed $lines pid lines after $dr deaths (want $((dr + 1)))"
        fail=1
    fi
    r=$((r + 1))
done
if [ -n "${EXPECT:-}" ] && ! grep -qF -- "$EXPECT" "$tmp/mock"; then
    echo "recover_test: the output lacks '$EXPECT'"
    fail=1
fi
[ "$fail" -eq 0 ] && echo "recover_test: passed ($d1, $deaths deaths)"
exit $fail
