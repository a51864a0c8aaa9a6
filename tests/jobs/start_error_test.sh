#!/bin/sh
# start_error_test.sh CASE BUILD_DIR — errors a job finds at its start are
# the job's error (tools/launch/policy.h, RALLY__LAUNCH_EXIT_CONFIG): rally-run
# prints the cause once, starts no epoch, restarts nobody, counts deaths=0
# and exits 4.
#   typo        an unknown RALLY_* variable: every worker's rally_init refuses
#               it before it reached the tracker, and reports it there
#   mock_lib    rally_mock= on rally-kmeans, built without librally_mock
#   resume_args --resume latest with another -k than the snapshot's run: every
#               rank's rally_load_checkpoint refuses it and reports it
set -u
case_=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
run=$build/rally-run km=$build/rally-kmeans
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "start_error_test $case_: $*"; [ -f "$tmp/out" ] && tail -40 "$tmp/out"; exit 1; }
. "$here/../rigs/trainer_lib.sh"

"$build/rally-datagen" --rows 2000 --features 4 --centers 3 --seed 7 --format csv \
    -o "$tmp/d.csv" >/dev/null 2>&1 || fail "rally-datagen failed"
KM="--data $tmp/d.csv --data-opt csv_label=0"

# verdict out sentence: the sentence once, as rally-run's cause; exit 4
# (checked by run_job.sh), no epoch, no restart, no death
verdict() {
    n=$(grep -c -- "$2" "$1")
    [ "$n" -eq 1 ] || fail "the cause is printed $n times, want once"
    grep -q "^rally-run: .*$2" "$1" || fail "rally-run does not name the cause"
    ! grep -q "epoch [0-9]*:" "$1" || fail "a recovery round started"
    ! grep -q "restarting it" "$1" || fail "a worker was restarted"
    grep -q "rally-run: summary: deaths=0 recovered=0 epochs=0 restarts=0 " "$1" ||
        fail "want deaths=0: $(grep summary "$1")"
}

case $case_ in
typo)
    RALLY_SNAPSHOT_EVRY=2 "$here/../rigs/run_job.sh" 4 60 "$run" -n 3 "$km" $KM -k 3 >"$tmp/out" 2>&1 ||
        fail "want exit status 4"
    verdict "$tmp/out" "the environment variable RALLY_SNAPSHOT_EVRY is not a rally setting"
    ;;
mock_lib)
    "$here/../rigs/run_job.sh" 4 60 "$run" -n 3 "$km" $KM -k 3 rally_mock=1,1,0,0 >"$tmp/out" 2>&1 ||
        fail "want exit status 4"
    verdict "$tmp/out" "rally_mock=1,1,0,0 needs the failure-injection library"
    ;;
resume_args)
    job "$tmp/first" 3 --snapshot-dir "$tmp/s" --snapshot-every 2 --keep-snapshots --job j \
        "$km" $KM -k 3
    "$here/../rigs/run_job.sh" 4 60 "$run" -n 3 --snapshot-dir "$tmp/s" --job j --resume latest \
        "$km" $KM -k 4 >"$tmp/out" 2>&1 || fail "want exit status 4"
    verdict "$tmp/out" "the snapshot's configuration is \"$KM -k 3\""
    ;;
*) fail "unknown case" ;;
esac
echo "start_error_test $case_: ok"
