#!/bin/sh
# port_busy_test.sh RALLY_RUN RALLY_TRACKER PROG — a tracker port already in
# use is a clear error (exit 1, the address named), never a hang.  A
# standalone rally-tracker holds a port; rally-run is asked for the same one.
set -u
run=$1 tracker=$2 prog=$3
tmp=$(mktemp -d)
trap 'kill "$holder" 2>/dev/null; rm -rf "$tmp"' EXIT
"$tracker" -n 1 --host 127.0.0.1 --port 0 --secret-file "$tmp/secret" >"$tmp/env" 2>&1 &
holder=$!
i=0
until grep -q '^RALLY_TRACKER=' "$tmp/env"; do
    i=$((i + 1)); [ "$i" -gt 100 ] && { echo "port_busy_test: rally-tracker printed nothing"; exit 1; }
    sleep 0.05
done
port=$(sed -n 's/^RALLY_TRACKER=.*:\([0-9]*\)$/\1/p' "$tmp/env")
timeout 20 "$run" --host 127.0.0.1 --port "$port" -n 2 "$prog" >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
[ "$rc" -eq 1 ] || { echo "port_busy_test: exit $rc, want 1"; exit 1; }
grep -q "Address already in use" "$tmp/out" || { echo "port_busy_test: no clear error"; exit 1; }
echo "port_busy_test: passed"
