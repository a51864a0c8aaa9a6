#!/bin/sh
# install_test.sh BUILD_DIR SOURCE_DIR — what a user does: install rally
# into a prefix, build a program with pkg-config, run it with the installed
# rally-run.  Checks the sum that 3 workers compute.
set -eu
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
cat >"$tmp/hello.c" <<'C'
#include <rally/rally.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    rally_t *r;
    if (rally_init(&r, &argc, &argv) != RALLY_OK) {
        fprintf(stderr, "%s\n", rally_errmsg(r));
        return 1;
    }
    double v = rally_rank(r) + 1;
    if (rally_allreduce(r, &v, 1, RALLY_DOUBLE, RALLY_SUM, NULL, NULL) != RALLY_OK)
        return 1;
    printf("sum %g\n", v);
    return rally_finalize(r) == RALLY_OK ? 0 : 1;
}
C
# shellcheck disable=SC2046
cc "$tmp/hello.c" $(pkg-config --cflags --libs rally) -Wl,-rpath,"$tmp/prefix/lib" -o "$tmp/hello"
out=$("$src/tests/run_job.sh" 0 60 "$tmp/prefix/bin/rally-run" -n 3 "$tmp/hello")
echo "$out"
[ "$(echo "$out" | grep -c 'sum 6$')" -eq 3 ] || { echo "install_test: want 3 lines 'sum 6'"; exit 1; }
echo "install_test: passed"
