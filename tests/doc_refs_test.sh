#!/bin/sh
# doc_refs_test.sh SOURCE_DIR — every page docs/<name>.md that the sources,
# the tools' help, the docs and the READMEs name exists (four named a
# snapshots page that never was).
set -u
src=$1
cd "$src" || exit 1
bad=0
for f in $(git ls-files 2>/dev/null || find . -type f ! -path './.git/*' ! -path './build*'); do
    case $f in *.png | *.gz) continue ;; esac
    for d in $(grep -oE 'docs/[A-Za-z0-9_.-]+\.md' "$f" 2>/dev/null | sort -u); do
        [ -f "$d" ] || { echo "doc_refs_test: $f names $d, which does not exist"; bad=1; }
    done
done
[ $bad -eq 0 ] && echo "doc_refs_test: passed"
exit $bad
