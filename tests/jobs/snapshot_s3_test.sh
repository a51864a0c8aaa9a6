#!/bin/sh
# snapshot_s3_test.sh — snapshots on a real object store: starts the Swift
# rig (tests/rigs/swift_rig.sh: S3 API, tempauth, on 127.0.0.1), makes a bucket,
# runs the torture cases of snapshot_s3_test.c against it, then
# rally-snapshot ls, show, verify, dump, cp and rm on s3:// URLs, and
# stops the rig.  Bounded by timeout ($SNAP_S3_LIMIT, 300 s); the trap stops
# the rig and removes its files whatever happens.
#
#   snapshot_s3_test.sh SNAPSHOT_S3_TEST RALLY_SNAPSHOT SNAPSHOT_MK [PYTHON PYDIR]
# With PYTHON and PYDIR (the build's python/), rally.snapshot reads the
# copy on the store too.
set -u
here=$(cd "$(dirname "$0")" && pwd)
limit=${SNAP_S3_LIMIT:-300}
[ -z "${SNAP_S3_INNER:-}" ] && SNAP_S3_INNER=1 exec timeout -k 20 "$limit" sh "$0" "$@"
unit=$1 tool=$2 mk=$3 py=${4:-} pydir=${5:-}
tmp=$(mktemp -d)
cleanup() {
    trap '' TERM INT HUP
    sh "$here/../rigs/swift_rig.sh" stop "$tmp/rig"
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP
failed=0
fail() {
    echo "FAIL $*"
    failed=1
}

sh "$here/../rigs/swift_rig.sh" start "$tmp/rig" || { echo "FAIL the Swift rig did not start"; exit 1; }
. "$tmp/rig/env" # AWS_ENDPOINT_URL and the credentials, as a user sets them
code=$(curl -sS -m 30 -o "$tmp/body" -w '%{http_code}' --netrc-file "$SWIFT_RIG_NETRC" \
    --aws-sigv4 "aws:amz:$AWS_DEFAULT_REGION:s3" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
    -X PUT "$AWS_ENDPOINT_URL/rally")
[ "$code" = 200 ] || { echo "FAIL cannot make the bucket: HTTP $code"; cat "$tmp/body"; exit 1; }

"$unit" s3://rally/unit || fail "snapshot_s3_test"

# expect NAME STATUS REGEX -- CMD...: CMD exits STATUS, its output matches REGEX
expect() {
    name=$1 want=$2 re=$3
    shift 4
    "$@" >"$tmp/out" 2>&1
    got=$?
    if [ "$got" != "$want" ]; then
        fail "$name: exit $got, want $want"
        cat "$tmp/out"
    elif ! grep -Eq -- "$re" "$tmp/out"; then
        fail "$name: output lacks /$re/"
        cat "$tmp/out"
    else
        echo "ok   $name"
    fi
}

# the tool on the store: a snapshot written to a directory, copied there
"$mk" "$tmp/local" km 0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0 2026-11-30T12:00:00.000000Z 3 2 \
    --locals >/dev/null || fail "snapshot_mk"
expect cp 0 "copied to s3://rally/tool/km/snap-00000003 \(verified\)" -- \
    "$tool" cp "$tmp/local/km/snap-00000003" s3://rally/tool
expect ls_root 0 "s3://rally/tool/km:" -- "$tool" ls s3://rally/tool
expect ls_job 0 "\* snap-00000003 +complete +3 +2" -- "$tool" ls s3://rally/tool/km
expect verify 0 "verified" -- "$tool" verify s3://rally/tool/km/snap-00000003
expect verify_latest 0 "latest is s3://rally/tool/km/snap-00000003" -- \
    "$tool" verify s3://rally/tool/km/latest
expect show 0 "checkpoint +version 3" -- "$tool" show s3://rally/tool/km/snap-00000003
if "$tool" dump "$tmp/local/km/snap-00000003" --rank 1 >"$tmp/dump.local" 2>&1 &&
    "$tool" dump s3://rally/tool/km/snap-00000003 --rank 1 >"$tmp/dump.s3" 2>&1 &&
    sed 's|s3://rally/tool|'"$tmp/local"'|' "$tmp/dump.s3" | cmp -s "$tmp/dump.local" -; then
    echo "ok   dump_same"
else
    fail "dump of the copy differs from the original's"
fi
expect cp_back 0 "copied to $tmp/back/km/snap-00000003" -- \
    "$tool" cp s3://rally/tool/km/latest "$tmp/back"
for f in MANIFEST.json global.bin local-0000.bin local-0001.bin; do
    cmp -s "$tmp/local/km/snap-00000003/$f" "$tmp/back/km/snap-00000003/$f" ||
        fail "cp_back: $f differs"
done
if [ -n "$py" ]; then
    expect python_reader 0 "^3 2 64 verified$" -- env PYTHONPATH="$pydir" "$py" -c '
import rally.snapshot
with rally.snapshot.open("s3://rally/tool/km/latest") as s:
    s.verify()
    print(s.version, s.world, len(s.read()), "verified")
assert [e.name for e in rally.snapshot.list("s3://rally/tool/km")] == ["snap-00000003"]'
fi
expect rm 0 "removed" -- "$tool" rm s3://rally/tool/km/snap-00000003
expect rm_again 1 "does not exist" -- "$tool" rm s3://rally/tool/km/snap-00000003
expect ls_gone 0 "no snapshots" -- "$tool" ls s3://rally/tool
expect verify_gone 3 "does not exist" -- "$tool" verify s3://rally/tool/km/snap-00000003
exit $failed
