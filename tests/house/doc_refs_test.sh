#!/bin/sh
# doc_refs_test.sh SOURCE_DIR — every page docs/<name>.md that the sources,
# the tools' help, the docs and the READMEs name exists (four named a
# snapshots page that never was), and so does every file of tests/ they name
# (tests/*.c, tests/progs/*.py: a name with a wildcard is a pattern, not
# a file), from the top or, inside bindings/python/, from the package's own
# tests/ (three named test files that had moved or been renamed).
set -u
src=$1
cd "$src" || exit 1
bad=0
for f in $(git ls-files 2>/dev/null || find . -type f ! -path './.git/*' ! -path './build*'); do
    case $f in *.png | *.gz) continue ;; esac
    for d in $(grep -oE 'docs/[A-Za-z0-9_.-]+\.md' "$f" 2>/dev/null | sort -u); do
        [ -f "$d" ] || { echo "doc_refs_test: $f names $d, which does not exist"; bad=1; }
    done
    for t in $(grep -oE '(^|[^A-Za-z0-9_./*-])tests/[A-Za-z0-9_/.-]+\.(c|h|cc|sh|py|cmake)\b' "$f" \
        2>/dev/null | sed -E 's/^[^t]*//' | sort -u); do
        [ -f "$t" ] && continue
        case $f in bindings/python/*) [ -f "bindings/python/$t" ] && continue ;; esac
        echo "doc_refs_test: $f names $t, which does not exist"
        bad=1
    done
done
[ $bad -eq 0 ] && echo "doc_refs_test: passed"
exit $bad
