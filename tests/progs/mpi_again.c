/*
 * mpi_again.c — librally_mpi initialises MPI once per process.
 *
 *   mpirun -n N mpi_again
 *
 * The first handle starts MPI (the program did not) and its rally_finalize
 * ends it, as the program expects of a library that started it; MPI cannot
 * start twice, so a second rally_init must fail with RALLY_ESTATE and say
 * why, not crash.  Prints "again_ok rank=R".
 */
#include <stdio.h>
#include <string.h>

#include "rally/rally.h"

int main(int argc, char **argv)
{
    rally_t *r;
    if (rally_init(&r, &argc, &argv) != RALLY_OK) {
        fprintf(stderr, "mpi_again: rally_init: %s\n", rally_errmsg(r));
        return 1;
    }
    int rank = rally_rank(r);
    double x = 1;
    if (rally_allreduce(r, &x, 1, RALLY_DOUBLE, RALLY_SUM, NULL, NULL) != RALLY_OK ||
        x != rally_world_size(r) || rally_finalize(r) != RALLY_OK) {
        fprintf(stderr, "mpi_again: rank %d: the first handle failed\n", rank);
        return 1;
    }
    int rc = rally_init(&r, &argc, &argv);
    if (rc != RALLY_ESTATE || strstr(rally_errmsg(r), "finalized") == NULL) {
        fprintf(stderr, "mpi_again: a second rally_init gave %s: %s\n", rally_strstatus(rc),
                rally_errmsg(r));
        return 1;
    }
    printf("again_ok rank=%d: %s\n", rank, rally_errmsg(r));
    rally_finalize(r);
    return 0;
}
