/*
 * mpi_die.c — a job in which one process dies, for the MPI backend's
 * promise that a death ends the job (MPI is not fault tolerant).
 *
 *   mpirun -n N mpi_die
 *
 * Every rank runs allreduces; after the tenth, the last rank kills itself
 * with SIGKILL while the others go on calling allreduce.  The job must end
 * with a non-zero status (mpirun stops the survivors, or their calls fail
 * with an error naming the MPI call), never hang and never print "finished".
 */
#include <signal.h>
#include <stdio.h>

#include "rally/rally.h"

int main(int argc, char **argv)
{
    rally_t *r;
    if (rally_init(&r, &argc, &argv) != RALLY_OK) {
        fprintf(stderr, "mpi_die: rally_init: %s\n", rally_errmsg(r));
        return 1;
    }
    int rank = rally_rank(r), n = rally_world_size(r);
    for (int i = 0; i < 100000; i++) {
        if (i == 10 && rank == n - 1)
            raise(SIGKILL);
        double x = rank + i;
        if (rally_allreduce(r, &x, 1, RALLY_DOUBLE, RALLY_SUM, NULL, NULL) != RALLY_OK) {
            fprintf(stderr, "mpi_die: rank %d: %s\n", rank, rally_errmsg(r));
            rally_finalize(r);
            return 1;
        }
    }
    printf("mpi_die: rank %d finished\n", rank);
    return rally_finalize(r) == RALLY_OK ? 0 : 1;
}
