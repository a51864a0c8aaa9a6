#!/bin/sh
# python_install_test.sh BUILD_DIR SOURCE_DIR PYTHON MODULE_DIR — the Python
# package as a user gets it, with no RALLY_LIBRARY: the build tree's copy
# (PYTHONPATH=BUILD_DIR/python), then an installed one (cmake --install into
# a prefix, PYTHONPATH=prefix/MODULE_DIR) under the installed rally-run; each
# must load the library of its own tree and compute the same sum on 3 ranks.
set -eu
build=$1 src=$2 py=$3 moddir=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset RALLY_LIBRARY RALLY_MOCK_LIBRARY RALLY_PYTHON_MOCK
cat >"$tmp/sum.py" <<'PY'
import numpy as np
import rally
with rally.init() as r:
    v = np.array([r.rank() + 1.0])
    r.allreduce(v, rally.SUM)
    print("sum %g from %s" % (v[0], rally._lib._loaded[1]._name), flush=True)
PY
check() { # LABEL WANT_LIBRARY_DIR RALLY_RUN
    out=$(PYTHONPATH=$pp PYTHONDONTWRITEBYTECODE=1 "$src/tests/rigs/run_job.sh" 0 60 "$3" -n 3 "$py" "$tmp/sum.py")
    echo "$out"
    n=$(echo "$out" | grep -c "sum 6 from $2/librally.so")
    [ "$n" -eq 3 ] || { echo "python_install_test: $1: want 3 lines 'sum 6 from $2/librally.so'"; exit 1; }
}
pp=$build/python
check "build tree" "$build" "$build/rally-run"
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
pp=$tmp/prefix/$moddir
[ -f "$pp/rally/_paths.py" ] || { echo "python_install_test: no package in $pp"; exit 1; }
check "installed" "$tmp/prefix/lib" "$tmp/prefix/bin/rally-run"
echo "python_install_test: passed"
