#!/bin/sh
# layers_negative_test.sh SOURCE_DIR — the layers test can fail: in a copy
# of the tree, api/ reaching into the robust engine's struct, a tool
# reaching into the collectives and an example reaching into src/ must each
# be reported.
set -eu
root=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -R "$root/src" "$root/tools" "$root/examples" "$tmp/"
echo '#include "robust/robust.h"' >>"$tmp/src/api/rally.c"
echo '#include "coll/coll.h"' >>"$tmp/tools/rally-run.c"
echo '#include "util/err.h"' >>"$tmp/examples/kmeans/kmeans.c"
if out=$(sh "$root/tests/house/layers_test.sh" "$tmp"); then
    echo "layers_negative_test: the layers test passed a tree that breaks the rules"
    exit 1
fi
echo "$out"
for want in "src/api/rally.c includes robust/robust.h" "tools/rally-run.c includes coll/coll.h" \
    "examples/kmeans/kmeans.c includes util/err.h"; do
    case $out in
    *"$want"*) ;;
    *) echo "layers_negative_test: not reported: $want"; exit 1 ;;
    esac
done
echo "layers_negative_test: each broken rule was reported"
