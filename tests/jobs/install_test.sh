#!/bin/sh
# install_test.sh BUILD_DIR SOURCE_DIR [rally|rally_mpi] — what a user does:
# `make install PREFIX=...` (through a path with "..", which the .pc files
# must not keep), then, with no LD_LIBRARY_PATH and no rpath of our own:
#   - `cc prog.c $(pkg-config --cflags --libs rally)`, run with the
#     installed rally-run (or mpirun for rally_mpi): the sum of 3 workers;
#   - (rally_mpi) the same through CMake's find_package(rally) and
#     rally::rally_mpi, under mpirun;
#   - (rally) the same program through rally_mock.pc and through CMake's
#     find_package(rally) with rally::rally_mock and rally::rally, run with
#     a mock death of rank 1: the restarted rank reports attempt 1 and the
#     model equals the failure-free run's;
#   - a program written to rabit's C++ API (tests/rabit/recover.cc) built as
#     rabit users build it, `c++ prog.cc -I$prefix/include -L$prefix/lib
#     -lrabit` (-lrabit_mock with a mock= death, -lrabit_mpi under mpirun)
#     and run with LD_LIBRARY_PATH; through rabit.pc (rabit_mpi.pc); and
#     (rally) through CMake's find_package(rally) in a C++ project: the
#     same digest each time.
set -eu
build=$1 src=$2 lib=${3:-rally}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset LD_LIBRARY_PATH
fail() { echo "install_test: $*"; exit 1; }
mkdir -p "$tmp/x"
# The Makefile's own target (its build step is a no-op on a built tree).
make -s -C "$src" install BUILD="$build" PREFIX="$tmp/x/../prefix" >/dev/null
prefix=$tmp/prefix
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
for pc in "$lib" ${lib%_mpi}_mock; do
    [ "$pc" = rally_mpi_mock ] && continue
    for v in prefix libdir includedir; do
        p=$(pkg-config --variable=$v "$pc")
        case "$p" in
        *..* | *//* | */./* | */) fail "$pc.pc: $v=$p is not a normalised path" ;;
        "$prefix"*) ;;
        *) fail "$pc.pc: $v=$p is not under $prefix" ;;
        esac
    done
done
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
    printf("rank %d attempt %d\n", rally_rank(r), rally_attempt(r));
    void *g = NULL;
    uint64_t gn = 0, version = 0;
    double model = 0;
    if (rally_load_checkpoint(r, &g, &gn, NULL, NULL, &version) != RALLY_OK)
        return 1;
    if (version > 0 && gn == sizeof model)
        model = *(double *)g;
    rally_free(g);
    for (uint64_t it = version; it < 3; it++) {
        double v = rally_rank(r) + 1 + (double)it;
        if (rally_allreduce(r, &v, 1, RALLY_DOUBLE, RALLY_SUM, NULL, NULL) != RALLY_OK)
            return 1;
        if (it == 0)
            printf("sum %g of %d\n", v, rally_world_size(r));
        model = model * 3 + v;
        if (rally_checkpoint(r, &model, sizeof model, NULL, 0) != RALLY_OK) {
            fprintf(stderr, "%s\n", rally_errmsg(r));
            return 1;
        }
    }
    if (rally_rank(r) == 0)
        printf("model_digest=%016llx\n",
               (unsigned long long)rally_digest64(&model, sizeof model));
    return rally_finalize(r) == RALLY_OK ? 0 : 1;
}

C

# cmake_hello EXE:TARGET...: builds hello.c into $tmp/cm/build/EXE against
# rally::TARGET through CMake's find_package(rally), for each pair
cmake_hello() {
    mkdir -p "$tmp/cm"
    printf 'cmake_minimum_required(VERSION 3.16)\nproject(hello C)\nfind_package(rally 0.1 REQUIRED)\n' \
        >"$tmp/cm/CMakeLists.txt"
    for p in "$@"; do
        printf 'add_executable(%s hello.c)\ntarget_link_libraries(%s rally::%s)\n' \
            "${p%%:*}" "${p%%:*}" "${p#*:}" >>"$tmp/cm/CMakeLists.txt"
    done
    cp "$tmp/hello.c" "$tmp/cm/"
    cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null ||
        fail "find_package(rally) failed"
    cmake --build "$tmp/cm/build" >/dev/null || fail "building against rally::${1#*:} failed"
}

# rabit_cxx NAME LINK...: the C++ recovery program, compiled once with only
# -I against the installed headers, linked with LINK... (-L and -lrabit, or
# a .pc file's flags); the compile is the slow part
rabit_cxx() {
    name=$1
    shift
    [ -f "$tmp/recover.o" ] || c++ -c "$src/tests/rabit/recover.cc" -I"$prefix/include" \
        -o "$tmp/recover.o" || fail "tests/rabit/recover.cc does not compile with -I$prefix/include"
    c++ "$tmp/recover.o" "$@" -o "$tmp/$name" || fail "recover.o does not link with $*"
}
# rabit_digest LOG WANT: the C++ program's digest in LOG is WANT (or sets it)
rabit_digest() {
    got=$(grep -o 'model_digest=[0-9a-f]*' "$1")
    [ -n "$got" ] || { cat "$1"; fail "no digest from the rabit C++ program"; }
    [ -z "$2" ] || [ "$got" = "$2" ] || { cat "$1"; fail "the rabit C++ program's digest $got, want $2"; }
    rabit_want=$got
}

# shellcheck disable=SC2046
cc "$tmp/hello.c" $(pkg-config --cflags --libs "$lib") -o "$tmp/hello"
if [ "$lib" = rally_mpi ]; then
    out=$("$src/tests/rigs/mpi_job.sh" 0 60 3 "$tmp/hello")
    echo "$out"
    [ "$(echo "$out" | grep -c 'sum 6 of 3$')" -eq 3 ] || fail "want 3 lines 'sum 6 of 3'"
    # the same through CMake's find_package(rally) and rally::rally_mpi
    cmake_hello "hello_cm_mpi:rally_mpi"
    out=$("$src/tests/rigs/mpi_job.sh" 0 60 3 "$tmp/cm/build/hello_cm_mpi")
    echo "$out"
    [ "$(echo "$out" | grep -c 'sum 6 of 3$')" -eq 3 ] || fail "cmake: want 3 lines 'sum 6 of 3'"
    # rabit's C++ API: -lrabit_mpi, then rabit_mpi.pc; the digest of rally-run's
    # engine (the program's values are exact in any order of reduction)
    rabit_cxx rabit_rally -L"$prefix/lib" -lrabit
    LD_LIBRARY_PATH=$prefix/lib "$src/tests/rigs/run_job.sh" 0 60 "$prefix/bin/rally-run" -n 3 \
        "$tmp/rabit_rally" 3 local >"$tmp/rabit.log" 2>&1 || { cat "$tmp/rabit.log"; fail "-lrabit: the job failed"; }
    rabit_digest "$tmp/rabit.log" ""
    rabit_cxx rabit_mpi -L"$prefix/lib" -lrabit_mpi
    LD_LIBRARY_PATH=$prefix/lib "$src/tests/rigs/mpi_job.sh" 0 60 3 "$tmp/rabit_mpi" 3 local \
        >"$tmp/rabit.log" 2>&1 || { cat "$tmp/rabit.log"; fail "-lrabit_mpi: the job failed"; }
    rabit_digest "$tmp/rabit.log" "$rabit_want"
    # shellcheck disable=SC2046
    rabit_cxx rabit_pc $(pkg-config --libs rabit_mpi)
    "$src/tests/rigs/mpi_job.sh" 0 60 3 "$tmp/rabit_pc" 3 local >"$tmp/rabit.log" 2>&1 ||
        { cat "$tmp/rabit.log"; fail "rabit_mpi.pc: the job failed"; }
    rabit_digest "$tmp/rabit.log" "$rabit_want"
    echo "install_test: rabit's C++ API with -lrabit_mpi and rabit_mpi.pc: $rabit_want"
    echo "install_test: $lib passed"
    exit 0
fi
run=$prefix/bin/rally-run
out=$("$src/tests/rigs/run_job.sh" 0 60 "$run" -n 3 "$tmp/hello")
echo "$out"
[ "$(echo "$out" | grep -c 'sum 6 of 3$')" -eq 3 ] || fail "want 3 lines 'sum 6 of 3'"
want=$(echo "$out" | grep -o 'model_digest=[0-9a-f]*')
[ -n "$want" ] || fail "no model_digest"

# the installed reader (rally/snapshot.h): a C program reads the final
# snapshot's global model with no job running, and it is the job's model
"$src/tests/rigs/run_job.sh" 0 60 "$run" -n 3 --snapshot-dir "$tmp/snaps" --snapshot-final \
    "$tmp/hello" >/dev/null || fail "the job with --snapshot-final failed"
cat >"$tmp/reader.c" <<'C'
#include <rally/snapshot.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    rally_snapshot_t *s;
    char err[512];
    void *g;
    uint64_t n;
    if (argc != 2 || rally_snapshot_open(argv[1], &s, err, sizeof err) != RALLY_OK ||
        rally_snapshot_read(s, -1, &g, &n, err, sizeof err) != RALLY_OK) {
        fprintf(stderr, "reader: %s\n", argc == 2 ? err : "usage: reader SNAP");
        return 1;
    }
    printf("version %llu app %s model_digest=%016llx\n",
           (unsigned long long)rally_snapshot_version(s), rally_snapshot_field(s, "job"),
           (unsigned long long)rally_digest64(g, (size_t)n));
    rally_free(g);
    rally_snapshot_close(s);
    return 0;
}
C
# shellcheck disable=SC2046
cc "$tmp/reader.c" $(pkg-config --cflags --libs rally) -o "$tmp/reader" ||
    fail "reader.c does not build against the installed rally/snapshot.h"
got=$("$tmp/reader" "$tmp/snaps/hello/latest") || fail "the reader failed: $got"
echo "reader: $got"
[ "$(echo "$got" | grep -o 'model_digest=[0-9a-f]*')" = "$want" ] ||
    fail "the snapshot's model ($got) is not the job's ($want)"

# deathjob LABEL PROG: rank 1 dies entering version 1's allreduce, and recovers
deathjob() {
    out=$("$src/tests/rigs/run_job.sh" 0 60 "$run" -n 3 "$2" rally_mock=1,1,0,0)
    echo "$out"
    echo "$out" | grep -q "\[1\] rank 1 attempt 1$" || fail "$1: rank 1 was not restarted as attempt 1"
    [ "$(echo "$out" | grep -o 'model_digest=[0-9a-f]*')" = "$want" ] ||
        fail "$1: the model differs from the failure-free run's ($want)"
}
# shellcheck disable=SC2046
cc "$tmp/hello.c" $(pkg-config --cflags --libs rally_mock) -o "$tmp/hello_mock"
deathjob "pkg-config rally_mock" "$tmp/hello_mock"

cmake_hello "hello_cm:rally" "hello_cm_mock:rally_mock"
out=$("$src/tests/rigs/run_job.sh" 0 60 "$run" -n 3 "$tmp/cm/build/hello_cm")
echo "$out"
[ "$(echo "$out" | grep -o 'model_digest=[0-9a-f]*')" = "$want" ] || fail "cmake: another model"
deathjob "cmake rally::rally_mock" "$tmp/cm/build/hello_cm_mock"

# rabit's C++ API: -lrabit (and LD_LIBRARY_PATH, as rabit's guide says),
# -lrabit_mock with two of rabit's mock= deaths, rabit.pc (its rpath: no
# LD_LIBRARY_PATH), and find_package(rally) in a C++ project
rabit_cxx rabit_plain -L"$prefix/lib" -lrabit
LD_LIBRARY_PATH=$prefix/lib "$src/tests/rigs/run_job.sh" 0 60 "$run" -n 3 "$tmp/rabit_plain" 3 local \
    >"$tmp/rabit.log" 2>&1 || { cat "$tmp/rabit.log"; fail "-lrabit: the job failed"; }
rabit_digest "$tmp/rabit.log" ""
rabit_cxx rabit_mock -L"$prefix/lib" -lrabit_mock
LD_LIBRARY_PATH=$prefix/lib "$src/tests/rigs/run_job.sh" 0 60 "$run" -n 3 "$tmp/rabit_mock" 3 local \
    mock=1,1,1,0 mock=2,1,3,0 >"$tmp/rabit.log" 2>&1 || { cat "$tmp/rabit.log"; fail "-lrabit_mock: the job failed"; }
grep -q "summary: deaths=2 recovered=2 " "$tmp/rabit.log" || { cat "$tmp/rabit.log"; fail "-lrabit_mock: want 2 deaths recovered"; }
rabit_digest "$tmp/rabit.log" "$rabit_want"
case " $(pkg-config --cflags rabit) " in
*" -I$prefix/include "*) ;;
*) fail "rabit.pc: Cflags $(pkg-config --cflags rabit) lack -I$prefix/include" ;;
esac
# shellcheck disable=SC2046
rabit_cxx rabit_pc $(pkg-config --libs rabit)
"$src/tests/rigs/run_job.sh" 0 60 "$run" -n 3 "$tmp/rabit_pc" 3 local >"$tmp/rabit.log" 2>&1 ||
    { cat "$tmp/rabit.log"; fail "rabit.pc: the job failed"; }
rabit_digest "$tmp/rabit.log" "$rabit_want"
mkdir -p "$tmp/cx"
cp "$src/tests/rabit/recover.cc" "$tmp/cx/"
printf 'cmake_minimum_required(VERSION 3.16)\nproject(rabitprog CXX)\nfind_package(rally 0.1 REQUIRED)\nadd_executable(recover recover.cc)\ntarget_link_libraries(recover rally::rally)\n' \
    >"$tmp/cx/CMakeLists.txt"
cmake -S "$tmp/cx" -B "$tmp/cx/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null &&
    cmake --build "$tmp/cx/build" >/dev/null || fail "recover.cc does not build through find_package(rally)"
"$src/tests/rigs/run_job.sh" 0 60 "$run" -n 3 "$tmp/cx/build/recover" 3 local >"$tmp/rabit.log" 2>&1 ||
    { cat "$tmp/rabit.log"; fail "find_package(rally): the rabit job failed"; }
rabit_digest "$tmp/rabit.log" "$rabit_want"
echo "install_test: rabit's C++ API with -lrabit, -lrabit_mock, rabit.pc and CMake: $rabit_want"
echo "install_test: $lib passed"
