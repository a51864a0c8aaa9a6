#!/bin/sh
# snapshot_no_s3_test.sh RALLY_SNAPSHOT LIBRALLY — a rally built with
# -DRALLY_S3=OFF: an s3:// root is refused with the sentence that says how
# to build it (not "unknown scheme"), a directory still works, and the
# shared library needs neither libcurl nor expat.
set -u
snap=$1 lib=$2
fail() { echo "snapshot_no_s3: $*"; exit 1; }
out=$("$snap" ls s3://tier/jobs 2>&1) && fail "ls s3:// succeeded: $out"
echo "$out"
echo "$out" | grep -q "built without s3:// storage (build it with -DRALLY_S3=ON" ||
    fail "s3:// was not refused with the option that builds it"
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
"$snap" ls "$d" >/dev/null 2>&1 || fail "ls of a directory failed: $("$snap" ls "$d" 2>&1)"
needed=$(objdump -p "$lib" | awk '$1 == "NEEDED" {print $2}')
echo "$lib needs: $(echo $needed)"
echo "$needed" | grep -q libsodium || fail "objdump saw no NEEDED at all"
echo "$needed" | grep -E -q "libcurl|libexpat" && fail "librally still needs libcurl or expat"
exit 0
