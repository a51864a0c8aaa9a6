#!/bin/sh
# rabit_recover_test.sh RALLY_RUN PLAIN MOCK N DEATHS MODE mock=...  — rabit's
# checkpoint example (tests/rabit/model_recover.c, MODE plain, local or
# lazy) once without failures (PLAIN, linked with librally) and once with
# rabit's mock= kill points (MOCK, linked with librally_mock): both succeed,
# the digests are equal, and rally-run counts exactly DEATHS deaths, each
# recovered.  Each run is bounded in time (as in recover_test.sh: about ten
# times a healthy run); run_job.sh checks that no process is left behind.
set -u
run=$1 plain=$2 mock=$3 n=$4 deaths=$5 mode=$6
shift 6
here=$(dirname "$0")
[ "$mode" = plain ] && mode=""
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
plain_s=$((10 + 3 * n)) mock_s=$((20 + 6 * n))
# shellcheck disable=SC2086 # an empty mode is no argument
"$here/../rigs/run_job.sh" 0 "$plain_s" "$run" -n "$n" "$plain" 200 4 $mode >"$tmp/plain" 2>&1 || {
    cat "$tmp/plain"; echo "rabit_recover_test: the failure-free run failed"; exit 1; }
# shellcheck disable=SC2086
"$here/../rigs/run_job.sh" 0 "$mock_s" "$run" -n "$n" --max-restarts 4 "$mock" 200 4 $mode "$@" \
    >"$tmp/mock" 2>&1 || { cat "$tmp/mock"; echo "rabit_recover_test: the run with failures failed"; exit 1; }
cat "$tmp/mock"
d0=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/plain")
d1=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/mock")
fail=0
if [ -z "$d0" ] || [ "$d0" != "$d1" ]; then
    echo "rabit_recover_test: digests differ: without failures '$d0', with failures '$d1'"
    fail=1
fi
grep -q "summary: deaths=$deaths recovered=$deaths " "$tmp/mock" || {
    echo "rabit_recover_test: want deaths=$deaths recovered=$deaths"; fail=1; }
kills=$(grep -c "rally mock: killing rank" "$tmp/mock")
[ "$kills" -eq "$deaths" ] || { echo "rabit_recover_test: $kills kill points hit, want $deaths"; fail=1; }
[ "$fail" -eq 0 ] && echo "rabit_recover_test: passed ($d1, $deaths deaths)"
exit $fail
