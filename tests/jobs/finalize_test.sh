#!/bin/sh
# finalize_test.sh BUILD_DIR — a rally_finalize that fails (the worker's
# tracker was killed after the job started) still leaves its sentence to
# rally_errmsg(r), as every call does: tests/progs/finalize_fail.c prints it
# after the call.  It used to read freed memory (garbage, or a heap
# use-after-free under ASan).  Bounded; kills what it started.
set -u
build=$1
tmp=$(mktemp -d)
tracker=
trap '[ -n "$tracker" ] && kill -9 "$tracker" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "finalize_test: $*"; cat "$tmp/out" 2>/dev/null; exit 1; }

"$build/rally-tracker" -n 1 --bind 127.0.0.1 --startup-timeout-ms 20000 >"$tmp/tracker" 2>&1 &
tracker=$!
i=0
until grep -q '^RALLY_SECRET_FILE=' "$tmp/tracker"; do
    i=$((i + 1))
    [ $i -lt 200 ] || fail "the tracker said nothing"
    sleep 0.05
done
RALLY_TRACKER=$(sed -n 's/^RALLY_TRACKER=//p' "$tmp/tracker")
RALLY_SECRET_FILE=$(sed -n 's/^RALLY_SECRET_FILE=//p' "$tmp/tracker")
export RALLY_TRACKER RALLY_SECRET_FILE
RALLY_TASK_ID=0 timeout -k 5 30 "$build/tests/finalize_fail" "$tmp/gate" >"$tmp/out" 2>&1 &
worker=$!
i=0
until grep -q '^joined$' "$tmp/out"; do
    i=$((i + 1))
    [ $i -lt 400 ] || fail "the worker never joined"
    sleep 0.05
done
kill -9 "$tracker"
wait "$tracker" 2>/dev/null
tracker=
touch "$tmp/gate"
wait "$worker" || fail "the worker exited $? (0: its finalize failed and it printed why)"
grep -q "^finalize: RALLY_E[A-Z]*: tracker 127.0.0.1:[0-9]* closed the connection$" "$tmp/out" ||
    fail "the sentence after a failed rally_finalize is not rally_errmsg's"
echo "finalize_test: passed"
