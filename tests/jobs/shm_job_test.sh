#!/bin/sh
# shm_job_test.sh RALLY_RUN RECOVER TRANSPORT WANT
#
# Runs a job of three workers on this host with rally_transport=TRANSPORT and
# looks, while it runs, at the workers' memory maps for the shared-memory
# links' segments (memfd "rally-link").  WANT is "shm" (some worker must map
# one: the job really runs over shared memory) or "tcp" (none may: the
# setting forces TCP, which is also what shows that the look can fail).
set -u
run=$1 prog=$2 transport=$3 want=$4
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
SHM_JOB_TAG="shm-job-$$-$(date +%s%N)" # how this job's workers are told from others
export SHM_JOB_TAG
"$here/../rigs/run_job.sh" 0 120 "$run" -n 3 "$prog" 1000000 30 rally_transport="$transport" \
    >"$tmp/out" 2>&1 &
job=$!
seen=0
while kill -0 "$job" 2>/dev/null; do
    for d in /proc/[0-9]*; do
        if grep -q "memfd:rally-link" "$d/maps" 2>/dev/null &&
            tr '\0' '\n' <"$d/environ" 2>/dev/null | grep -qx "SHM_JOB_TAG=$SHM_JOB_TAG"; then
            seen=1
        fi
    done
    [ "$seen" = 1 ] && [ "$want" = shm ] && break
    sleep 0.05
done
wait "$job"
rc=$?
if [ "$rc" -ne 0 ]; then
    cat "$tmp/out"
    echo "shm_job_test: the job failed ($rc)"
    exit 1
fi
case $want in
shm) [ "$seen" = 1 ] || { echo "shm_job_test: no worker mapped a shared-memory link"; exit 1; } ;;
tcp) [ "$seen" = 0 ] || { echo "shm_job_test: a worker mapped a shared-memory link under tcp"; exit 1; } ;;
esac
echo "shm_job_test: rally_transport=$transport: links over $want, as expected"
