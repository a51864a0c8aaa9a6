#!/bin/sh
# makefile_test.sh SOURCE_DIR — every target the Makefile declares .PHONY has
# a rule of its own: a phony target without one runs nothing and exits 0, as
# `make test-quick` once did.
set -u
src=$1
bad=0
for t in $(sed -n 's/^\.PHONY:[[:space:]]*//p' "$src/Makefile"); do
    grep -q "^$t:" "$src/Makefile" || { echo "makefile_test: .PHONY names '$t', which has no rule"; bad=1; }
done
[ $bad -eq 0 ] && echo "makefile_test: passed"
exit $bad
