#!/bin/sh
# python_pip_test.sh BUILD_DIR SOURCE_DIR PYTHON VERSION — the Python package
# as pip gives it, offline: a fresh venv over PYTHON (--system-site-packages,
# for Debian's numpy), `pip install --no-build-isolation --no-index` of a copy
# of bindings/python (LIBRALLY_BUILD_DIR=BUILD_DIR, whose libraries and programs
# the wheel bundles), and with no RALLY_LIBRARY nor PYTHONPATH:
#   - python3 -m rally --version says VERSION (CMake's project version), and
#     the library loaded is the bundled copy;
#   - `pip wheel` makes rally-VERSION-py3-none-<platform>.whl carrying the
#     library, the programs and py.typed; a second venv installs that file;
#   - a 4-rank job under the venv's rally-run, with rank 1 killed by
#     SIGKILL, recovers and ends with the failure-free run's digest.
set -eu
build=$1 src=$2 py=$3 version=$4
tmp=$(mktemp -d)
tag="pip-$$-$(date +%s%N)"
cleanup() {
    left=$(grep -l "RALLY_TEST_TAG=$tag" /proc/[0-9]*/environ 2>/dev/null | grep -v "/proc/$$/" | cut -d/ -f3)
    [ -n "$left" ] && kill -9 $left 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "python_pip_test: $*"; exit 1; }
unset RALLY_LIBRARY RALLY_MOCK_LIBRARY RALLY_PYTHON_MOCK PYTHONPATH
export PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 LIBRALLY_BUILD_DIR="$build"
cp -r "$src/bindings/python" "$tmp/pkg"
rm -rf "$tmp/pkg/build" "$tmp"/pkg/*.egg-info

"$py" -m venv --system-site-packages "$tmp/venv"
"$tmp/venv/bin/pip" install -q --no-build-isolation --no-index "$tmp/pkg" || fail "pip install failed"
cd "$tmp"
v=$("$tmp/venv/bin/python" -m rally --version)
[ "$v" = "rally $version" ] || fail "python3 -m rally --version says '$v', want 'rally $version'"
lib=$("$tmp/venv/bin/python" -m rally | sed -n 's/^library //p')
case "$lib" in
    "$tmp"/venv/lib/python*/site-packages/rally/_bundled/librally.so) ;;
    *) fail "the venv's package loads '$lib', not its bundled copy" ;;
esac

"$tmp/venv/bin/pip" wheel -q --no-build-isolation --no-index --no-deps -w "$tmp/wheels" "$tmp/pkg" ||
    fail "pip wheel failed"
whl=$(ls "$tmp"/wheels/rally-"$version"-py3-none-linux_*.whl) || fail "no py3-none-linux wheel in $(ls "$tmp/wheels")"
for f in rally/_bundled/librally.so rally/_bundled/librally_mock.so rally/_bundled/rally-run \
    rally/_bundled/rally-tracker rally/py.typed rally/__main__.py; do
    "$py" -m zipfile -l "$whl" | grep -q "^$f " || fail "$whl lacks $f"
done
"$py" -m venv --system-site-packages "$tmp/venv2"
"$tmp/venv2/bin/pip" install -q --no-index "$whl" || fail "pip install of the wheel failed"
"$tmp/venv2/bin/python" -c "import rally, numpy as np; assert rally._lib.load() and '/venv2/' in rally._lib.path(), rally._lib.path()" ||
    fail "the wheel's venv does not load its own library"

# A job under the venv's launcher and interpreter, failure-free and with rank
# 1 killed a few iterations in: the same digest.
prog="$src/bindings/python/tests/progs/ckpt.py"
job() { # OUT ARGS...
    o=$1
    shift
    RALLY_TEST_TAG=$tag timeout -k 5 120 "$tmp/venv/bin/rally-run" -n 4 "$tmp/venv/bin/python" "$prog" "$@" >"$o" 2>&1
}
job "$tmp/clean.out" 12 || { cat "$tmp/clean.out"; fail "the failure-free job failed"; }
want=$(sed -n 's/^\[0\] digest //p' "$tmp/clean.out")
[ -n "$want" ] || { cat "$tmp/clean.out"; fail "no digest"; }
job "$tmp/kill.out" 12 --pause-ms 200 &
jpid=$!
i=0
pid=""
while [ -z "$pid" ]; do
    i=$((i + 1))
    [ "$i" -le 600 ] || { cat "$tmp/kill.out"; fail "rank 1 never said its pid"; }
    sleep 0.1
    pid=$(sed -n 's/^\[1\] pid 1 \([0-9]*\)$/\1/p' "$tmp/kill.out")
done
sleep 0.5 # a few iterations in
kill -9 "$pid"
rc=0
wait "$jpid" || rc=$?
cat "$tmp/kill.out"
[ "$rc" -eq 0 ] || fail "the job with a kill -9 exited $rc"
grep -q "summary: deaths=1 recovered=1" "$tmp/kill.out" || fail "want one death, one recovery"
got=$(sed -n 's/^\[0\] digest //p' "$tmp/kill.out")
[ "$got" = "$want" ] || fail "digest $got after the kill, $want without"
sleep 0.2
left=$(grep -l "RALLY_TEST_TAG=$tag" /proc/[0-9]*/environ 2>/dev/null | grep -v "/proc/$$/" | cut -d/ -f3 || true)
[ -z "$left" ] || fail "processes left behind: $left"
# A venv of its own (ensurepip's setuptools, no wheel package): the offline
# build says what it lacks and how to get it, not a bare ModuleNotFoundError.
if ! "$py" -c "import setuptools.command.bdist_wheel" 2>/dev/null; then
    "$py" -m venv "$tmp/bare"
    if ! "$tmp/bare/bin/python" -c "import wheel" 2>/dev/null; then
        "$tmp/bare/bin/pip" install --no-build-isolation --no-index "$tmp/pkg" >"$tmp/bare.out" 2>&1 &&
            fail "pip install without the wheel package succeeded"
        grep -q "rally: building the wheel needs the 'wheel' package" "$tmp/bare.out" ||
            fail "the build without wheel does not say so: $(tail -5 "$tmp/bare.out")"
    fi
fi
echo "python_pip_test: passed ($whl)"
