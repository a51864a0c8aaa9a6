#!/bin/sh
# rally-datagen end to end: usage errors, determinism, the centres file,
# both formats.  $1 is the rally-datagen binary.
set -eu
gen=$1
d=$(mktemp -d /tmp/rally-datagen-XXXXXX)
trap 'rm -rf "$d"' EXIT
fail() { echo "datagen_test: $*" >&2; exit 1; }

"$gen" --help | grep -q '^usage: rally-datagen' || fail "--help"
if "$gen" --rows 10 -o "$d/x" 2>"$d/err"; then fail "missing --features accepted"; fi
grep -q 'are required' "$d/err" || fail "no message for missing options"
if "$gen" --rows -3 --features 2 --centers 2 -o "$d/x" 2>"$d/err"; then fail "--rows -3 accepted"; fi
if "$gen" --rows 3 --features 2 --centers 2 --format xml -o "$d/x" 2>"$d/err"; then
    fail "--format xml accepted"
fi
grep -q "format 'xml'" "$d/err" || fail "no message for a bad format"
[ ! -e "$d/x" ] || fail "a failed run left a file"

"$gen" --rows 1000 --features 5 --centers 4 --spread 0.5 --seed 7 --format csv --header \
    --centers-out "$d/c1" -o "$d/a.csv" 2>/dev/null
"$gen" --rows 1000 --features 5 --centers 4 --spread 0.5 --seed 7 --format csv --header \
    --centers-out "$d/c2" -o "$d/b.csv" 2>/dev/null
cmp -s "$d/a.csv" "$d/b.csv" || fail "same seed, different bytes"
cmp -s "$d/c1" "$d/c2" || fail "same seed, different centres"
[ "$(head -n 1 "$d/a.csv")" = "label,f0,f1,f2,f3,f4" ] || fail "header: $(head -n 1 "$d/a.csv")"
[ "$(wc -l < "$d/a.csv")" -eq 1001 ] || fail "want 1001 lines"
[ "$(wc -l < "$d/c1")" -eq 4 ] || fail "want 4 centres"
ls "$d" | grep -q tmp && fail "temporary file left behind"

"$gen" --rows 50 --features 3 --centers 2 --seed 8 -o "$d/a.svm" 2>/dev/null
head -n 1 "$d/a.svm" | grep -Eq '^[01] 1:[-0-9.e+]+ 2:[-0-9.e+]+ 3:[-0-9.e+]+$' ||
    fail "libsvm line: $(head -n 1 "$d/a.svm")"
echo "datagen_test: ok"
