#!/bin/sh
# load_faults_test.sh RALLY_RUN LOAD_FAULTS — what a restarted worker's load
# of a 16 MiB global model costs in page faults (tests/progs/load_faults.c:
# rank 1 of 4 gets kill -9; its replacement checks every byte it loads):
# the survivors take fewer than a quarter of the model's pages in faults
# over their stall: those holding the checkpoint send it from their own
# copies and receive nothing (each received it whole, into a fresh buffer,
# before: one fault a page).  The replacement's own faults are printed
# (two fresh buffers: its store's copy and the caller's).
set -u
run=$1 prog=$2
here=$(dirname "$0")
out=$("$here/run_job.sh" 0 60 "$run" -n 4 --max-restarts 1 "$prog" 16777216 4 2) || {
    echo "$out"; echo "load_faults_test: the job failed"; exit 1; }
echo "$out"
line=$(echo "$out" | grep 'FAULTS stall=')
stall=$(echo "$line" | sed -n 's/.*stall=\([0-9]*\).*/\1/p')
load=$(echo "$line" | sed -n 's/.*load=\([0-9]*\).*/\1/p')
pages=$(echo "$line" | sed -n 's/.*pages=\([0-9]*\).*/\1/p')
[ -n "$stall" ] && [ -n "$load" ] && [ -n "$pages" ] || { echo "load_faults_test: no FAULTS line"; exit 1; }
if [ "$stall" -ge $((pages / 4)) ]; then
    echo "load_faults_test: a survivor took $stall faults over its stall (model: $pages pages)"
    exit 1
fi
