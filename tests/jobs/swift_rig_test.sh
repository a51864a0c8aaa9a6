#!/bin/sh
# swift_rig_test.sh — the Swift rig (tests/rigs/swift_rig.sh) comes up, answers
# the S3 calls the S3 backend makes, signed by curl's --aws-sigv4 (the
# libcurl code CURLOPT_AWS_SIGV4 runs), and goes away again:
#   PUT bucket, PUT object (1 MiB, key a/b/obj.bin), GET (byte-identical),
#   ListObjectsV2 (list-type=2&prefix=a%2Fb: the key, its size), HEAD
#   (Content-Length), DELETE object (then GET is 404), DELETE bucket; after
#   stop no server of the rig runs.
# Any step that fails fails the test.  It bounds itself (timeout, limit
# $SWIFT_RIG_TEST_LIMIT, 180 s) and its trap stops the rig and removes its
# files.  curl 7.88 (bookworm) sends no x-amz-content-sha256 and s3api wants
# one, so every request carries "x-amz-content-sha256: UNSIGNED-PAYLOAD";
# the access key test:tester has a colon, so it comes from a netrc file
# (--user would split it at the colon).
set -u
here=$(cd "$(dirname "$0")" && pwd)
limit=${SWIFT_RIG_TEST_LIMIT:-180}
[ -z "${SWIFT_RIG_TEST_INNER:-}" ] &&
    SWIFT_RIG_TEST_INNER=1 exec timeout -k 20 "$limit" sh "$0" "$@"
rig=$here/../rigs/swift_rig.sh
tmp=$(mktemp -d)
cleanup() {
    trap '' TERM INT HUP # timeout signals us and then our group: finish this
    sh "$rig" stop "$tmp/rig"
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP
fail() {
    echo "swift_rig_test: $*"
    [ -s "$tmp/body" ] && { echo "--- response:"; head -c 2000 "$tmp/body" | tr -cd '[:print:]\n'; echo; }
    [ -f "$tmp/rig/proxy.log" ] && { echo "--- last lines of proxy.log:"; tail -n 20 "$tmp/rig/proxy.log"; }
    exit 1
}

sh "$rig" start "$tmp/rig" || fail "the rig did not start"
. "$tmp/rig/env"
ep=$AWS_ENDPOINT_URL

# s3 WANT ARGS...: a signed request whose HTTP status must be WANT; the
# response (or, with -I, the headers) in $tmp/body
s3() {
    want=$1
    shift
    got=$(curl -sS -m 30 -o "$tmp/body" -w '%{http_code}' --netrc-file "$SWIFT_RIG_NETRC" \
        --aws-sigv4 "aws:amz:$AWS_DEFAULT_REGION:s3" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$@") ||
        fail "curl $* failed"
    [ "$got" = "$want" ] || fail "curl $*: HTTP $got, want $want"
}

head -c 1048576 /dev/urandom >"$tmp/obj"
s3 200 -X PUT "$ep/bucket1"
s3 200 -T "$tmp/obj" "$ep/bucket1/a/b/obj.bin"
s3 200 "$ep/bucket1/a/b/obj.bin"
cmp -s "$tmp/obj" "$tmp/body" || fail "GET gave other bytes than were PUT"
s3 200 "$ep/bucket1?list-type=2&prefix=a%2Fb"
grep -q '<Key>a/b/obj.bin</Key>' "$tmp/body" && grep -q '<Size>1048576</Size>' "$tmp/body" &&
    grep -q '<KeyCount>1</KeyCount>' "$tmp/body" || fail "ListObjectsV2 does not list a/b/obj.bin of 1048576 bytes"
s3 200 "$ep/bucket1?list-type=2&prefix=zzz"
grep -q '<KeyCount>0</KeyCount>' "$tmp/body" || fail "ListObjectsV2 prefix=zzz is not empty"
s3 200 -I "$ep/bucket1/a/b/obj.bin"
tr -d '\r' <"$tmp/body" | grep -qix 'content-length: 1048576' || fail "HEAD has no Content-Length: 1048576"
s3 204 -X DELETE "$ep/bucket1/a/b/obj.bin"
s3 404 "$ep/bucket1/a/b/obj.bin"
s3 204 -X DELETE "$ep/bucket1"
s3 404 "$ep/bucket1?list-type=2"

pids=$SWIFT_RIG_PIDS
sh "$rig" stop "$tmp/rig"
for p in $pids; do
    [ -d "/proc/$p" ] && [ "$(sed 's/.*) \(.\).*/\1/' "/proc/$p/stat" 2>/dev/null)" != Z ] &&
        fail "server $p still runs after stop"
done
echo "swift_rig_test: PUT bucket, PUT, GET, ListObjectsV2, HEAD, DELETE through s3api on Swift: ok"
