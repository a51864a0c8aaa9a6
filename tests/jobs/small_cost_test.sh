#!/bin/sh
# small_cost_test.sh BOUND N VALGRIND CALLGRIND_ANNOTATE RALLY_RUN SMALL_COST CALLS
# — the instructions the public 8-byte allreduce (rally_allreduce) executes
# per call, less those spent waiting for its peers (rally__link_wait), in
# an N-worker job whose worker 0 (RALLY_TASK_ID) runs under callgrind,
# which counts the same whatever the machine's load.  The other workers run
# natively, some fifty times faster, so worker 0 finds its peers' bytes
# there at its first look: its loops take the same turns on every run.
# Fails when the count exceeds BOUND, or the job fails.  The job is bounded
# by run_job.sh (its processes cleaned up there); the profile goes to a
# directory removed on exit (KEEP=FILE copies it there first, for
# callgrind_annotate --auto=yes: where the instructions go).
bound=$1 n=$2 vg=$3 cga=$4 run=$5 prog=$6 calls=$7
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap '[ -n "$KEEP" ] && cp "$dir/cg.out" "$KEEP"; rm -rf "$dir"' EXIT INT TERM
cat >"$dir/worker.sh" <<EOS
#!/bin/sh
[ "\$RALLY_TASK_ID" = 0 ] && exec "$vg" --tool=callgrind --toggle-collect=rally_allreduce \\
    --callgrind-out-file="$dir/cg.out" "$prog" "$calls"
exec "$prog" "$calls"
EOS
chmod +x "$dir/worker.sh"
out=$dir/job.log
"$here/../rigs/run_job.sh" 0 240 "$run" -n "$n" "$dir/worker.sh" >"$out" 2>&1
rc=$?
grep -v "==[0-9]*==" "$out"
if [ "$rc" -ne 0 ] || [ ! -s "$dir/cg.out" ]; then
    echo "small_cost: the job failed, or worker 0 left no profile"
    exit 1
fi
# inclusive counts: the calls, and the waits inside them
"$cga" --inclusive=yes --threshold=100 "$dir/cg.out" 2>/dev/null |
    awk -v calls="$calls" -v bound="$bound" '
    { x = $1; gsub(",", "", x) }
    $0 ~ /:rally_allreduce / && !a { a = x + 0 }
    $0 ~ /:rally__link_wait / && !w { w = x + 0 }
    END {
        if (!a) { print "small_cost: no rally_allreduce in the profile"; exit 1 }
        per = (a - w) / calls
        printf "small_cost: %d instructions per call besides the wait (%d in the wait), bound %d\n",
               per, w / calls, bound
        exit per > bound
    }'
