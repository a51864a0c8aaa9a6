#!/bin/sh
# load_faults_test.sh RALLY_RUN LOAD_FAULTS — what a restarted worker's load
# of a 16 MiB global model costs in page faults (tests/progs/load_faults.c:
# rank 1 of 4 gets kill -9; its replacement checks every byte it loads):
# the survivors take fewer than a quarter of the model's pages in faults
# over their stall: those holding the checkpoint send it from their own
# copies and receive nothing (each received it whole, into a fresh buffer,
# before: one fault a page).  The replacement's own faults are printed
# (two fresh buffers: its store's copy and the caller's).
#
# load_faults_test.sh RALLY_RUN LOAD_FAULTS order — the same job, and the
# recovery's clock (rally-run's "recovered" line, the events file's
# "recovered", rally_recovery_seconds) stops only once the replacement
# stands where the survivors do: its "back" report (sent as it enters that
# call, on the line its IN_STEP takes after it) comes before "recovered" in
# the events file.
set -u
run=$1 prog=$2 what=${3:-faults}
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$("$here/../rigs/run_job.sh" 0 60 "$run" -n 4 --max-restarts 1 --events "$tmp/events" "$prog" \
    16777216 4 2) || { echo "$out"; echo "load_faults_test: the job failed"; exit 1; }
echo "$out"
if [ "$what" = order ]; then
    grep -n '"event":"report".*"key":"back"\|"event":"recovered"' "$tmp/events"
    back=$(grep -n '"event":"report".*"key":"back"' "$tmp/events" | cut -d: -f1)
    rec=$(grep -n '"event":"recovered"' "$tmp/events" | cut -d: -f1)
    [ -n "$back" ] && [ -n "$rec" ] && [ "$back" -lt "$rec" ] && exit 0
    echo "load_faults_test: 'recovered' (line ${rec:-none}) not after the replacement's 'back'" \
        "(line ${back:-none}) in the events file"
    exit 1
fi
line=$(echo "$out" | grep 'FAULTS stall=')
stall=$(echo "$line" | sed -n 's/.*stall=\([0-9]*\).*/\1/p')
load=$(echo "$line" | sed -n 's/.*load=\([0-9]*\).*/\1/p')
pages=$(echo "$line" | sed -n 's/.*pages=\([0-9]*\).*/\1/p')
[ -n "$stall" ] && [ -n "$load" ] && [ -n "$pages" ] || { echo "load_faults_test: no FAULTS line"; exit 1; }
if [ "$stall" -ge $((pages / 4)) ]; then
    echo "load_faults_test: a survivor took $stall faults over its stall (model: $pages pages)"
    exit 1
fi
