# trainer_lib.sh — what the trainer tests (kmeans, linear, gbdt) and other
# job tests share: failure-free jobs, the kill -9 of one worker or of a whole
# job, the check that nothing is left behind, and the input fingerprints a
# snapshot keeps.
# Sourced; the test defines fail and sets here, run, build and tmp.

job() { # out-file N prog args... : a failure-free job that must succeed
    o=$1 n=$2
    shift 2
    "$here/../rigs/run_job.sh" 0 60 "$run" -n "$n" "$@" >"$o" 2>&1 || { cp "$o" "$tmp/out"; fail "job failed: $*"; }
}

tagged() { # the rally processes whose environment carries RALLY_TEST_TAG=$1
    for p in $(grep -lzx "RALLY_TEST_TAG=$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do
        case $(cat "/proc/$p/comm" 2>/dev/null) in rally* | timeout) echo "$p" ;; esac
    done
}

wait_line() { # file pattern what tries step: until the pattern shows in file
    i=0
    until grep -q "$2" "$1" 2>/dev/null; do
        i=$((i + 1))
        [ $i -gt "$4" ] && fail "$3 never came"
        sleep "$5"
    done
}

kill_worker() { # out rank: kill -9 of the rank's newest worker ("[R] shard R ... pid P")
    victim=$(sed -n "s/^\[$2\] shard $2 fingerprint .* pid \([0-9]*\)\$/\1/p" "$1" | tail -1)
    kill -9 "$victim" || fail "no worker $victim to kill"
}

kill_job() { # tag: the whole job at once, every rally process of it frozen, then killed
    ps=$(tagged "$1")
    kill -STOP $ps 2>/dev/null
    kill -9 $ps 2>/dev/null
}

no_leftovers() { # tag: no process carrying it may outlive the job
    sleep 0.3
    left=$(grep -lzx "RALLY_TEST_TAG=$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3)
    [ -z "$left" ] || { kill -9 $left 2>/dev/null; fail "processes left behind: $left"; }
}

inputs_kept() { # out snapshot N: the manifest keeps each rank's shard fingerprint (rally_set_input)
    "$build/rally-snapshot" show "$2" >"$tmp/show" || fail "rally-snapshot show $2 failed"
    grep -q "^partitioning *range$" "$tmp/show" || { cat "$tmp/show"; fail "no partitioning kept"; }
    for r in $(seq 0 $(($3 - 1))); do
        fp=$(sed -n "s/^\[$r\] shard $r fingerprint \([0-9a-f]*\) .*/\1/p" "$1" | head -1)
        [ -n "$fp" ] || fail "rank $r named no fingerprint"
        grep -q "input $fp" "$tmp/show" || { cat "$tmp/show"; fail "rank $r's fingerprint $fp not kept"; }
    done
}
