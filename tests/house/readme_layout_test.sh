#!/bin/sh
# readme_layout_test.sh SOURCE_DIR — the README's "Layout" block names every
# folder of src/ (as src/X/) and of examples/, and its src/net line every
# transport that src/net/transport.h declares (rally__X_transport), so a new
# part cannot go undocumented there.
set -u
src=$1
block=$(sed -n '/^## Layout$/,/^## /p' "$src/README.md")
[ -n "$block" ] || { echo "readme_layout: README.md has no '## Layout' section"; exit 1; }
bad=0
for d in "$src"/src/*/; do
    d=$(basename "$d")
    echo "$block" | grep -q "^src/$d/ " || { echo "readme_layout: src/$d/ is not in README's Layout"; bad=1; }
done
for d in "$src"/examples/*/; do
    d=$(basename "$d")
    echo "$block" | grep -qw -- "$d" || { echo "readme_layout: examples/$d is not in README's Layout"; bad=1; }
done
net=$(echo "$block" | grep '^src/net/ ')
for t in $(sed -n 's/.*rally__\([a-z0-9]*\)_transport;.*/\1/p' "$src/src/net/transport.h"); do
    echo "$net" | grep -qw -- "$t" || { echo "readme_layout: the $t transport is not on README's src/net line"; bad=1; }
done
[ $bad -eq 0 ] && echo "readme_layout: passed"
exit $bad
