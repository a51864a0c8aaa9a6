#!/bin/sh
# install_test.sh BUILD_DIR SOURCE_DIR [rally|rally_mpi] — what a user does:
# install rally into a prefix, build a program with `pkg-config rally` (or
# rally_mpi), run it with the installed rally-run (or mpirun).  Checks the
# sum that 3 workers compute.
set -eu
build=$1 src=$2 lib=${3:-rally}
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
    printf("sum %g of %d\n", v, rally_world_size(r));
    return rally_finalize(r) == RALLY_OK ? 0 : 1;
}
C
# shellcheck disable=SC2046
cc "$tmp/hello.c" $(pkg-config --cflags --libs "$lib") -Wl,-rpath,"$tmp/prefix/lib" -o "$tmp/hello"
if [ "$lib" = rally_mpi ]; then
    out=$("$src/tests/mpi_job.sh" 0 60 3 "$tmp/hello")
else
    out=$("$src/tests/run_job.sh" 0 60 "$tmp/prefix/bin/rally-run" -n 3 "$tmp/hello")
fi
echo "$out"
[ "$(echo "$out" | grep -c 'sum 6 of 3$')" -eq 3 ] || { echo "install_test: want 3 lines 'sum 6 of 3'"; exit 1; }
echo "install_test: $lib passed"
