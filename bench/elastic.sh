#!/bin/bash
# bench/elastic.sh <builddir> — how long an elastic job stands still when its
# workers change, beside a recovery in place in the same run (docs/recovery.md,
# "Elastic jobs"): N = 8 and a 100 MiB global model, interleaved A B B A.
#   shrink   rank 1 dies (rally_mock, --max-restarts 0 --min-workers 7): from the
#            loss to the 7 back in step, the reload included (no transfer: every
#            survivor holds the version), no shard re-read (none here)
#   grow     rank 0 sends rally-run SIGUSR2 (-n 7 --max-workers 8): from the
#            checkpoint that takes the new worker in to the 8 back in step (its
#            start-up runs beside the job before that; the model goes to it)
#   in place rank 1 dies and is restarted (--max-restarts 2): bench_recovery's
#            recovery_s, the model sent to the new process
# Each cell: median (min-max) over BENCH_ELASTIC_REPS runs (default 3 of each).
set -euo pipefail
build=$(cd "$1" && pwd)
run=$build/rally-run
reps=${BENCH_ELASTIC_REPS:-3}
m=104857600
shrink() { "$run" -n 8 --min-workers 7 --max-restarts 0 "$build/bench/bench_elastic" $m 10 \
    rally_mock=1,5,0,0 2>&1 | awk '$2 == "ELASTIC" { print "shrink", $7 }'; }
grow() { "$run" -n 7 --max-workers 8 "$build/bench/bench_elastic" $m 12 grow=4 2>&1 |
    awk '$2 == "ELASTIC" { print "grow", $7 }'; }
inplace() { "$run" -n 8 --max-restarts 2 "$build/bench/bench_recovery" $m 8 rally_mock=1,4,0,0 2>&1 |
    awk '$2 == "RECOVERY" { print "inplace", $4 }'; }
echo "elastic: N = 8, model 100 MiB, seconds the job stands still (median, min-max of $reps)"
for ((i = 0; i < reps; i++)); do
    if ((i % 2 == 0)); then shrink; grow; inplace; else inplace; grow; shrink; fi
done | awk '
    { v[$1, ++c[$1]] = $2 }
    function cell(k,   i, j, t, a, n) { n = c[k]; for (i = 1; i <= n; i++) a[i] = v[k, i]
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        med[k] = a[int((n + 1) / 2)]; return sprintf("%.3f (%.3f-%.3f)", med[k], a[1], a[n]) }
    END { printf "%-34s %s\n", "shrink 8 -> 7 (loss to back in step)", cell("shrink")
          printf "%-34s %s\n", "grow 7 -> 8 (checkpoint to in step)", cell("grow")
          printf "%-34s %s\n", "recovery in place at 8", cell("inplace")
          printf "shrink / in place: %.2f; target: shrink within 1 s plus the shard re-read\n",
              med["shrink"] / med["inplace"] }'
