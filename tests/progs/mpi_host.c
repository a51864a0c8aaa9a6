/*
 * mpi_host.c — librally_mpi inside a program that uses MPI itself.
 *
 *   mpirun -n N mpi_host
 *
 * The program initialises MPI, then opens and closes two rally handles one
 * after the other, each running collectives.  Checks: MPI is still running
 * after rally_finalize (rally did not initialise it, so it must not end it),
 * MPI_COMM_WORLD keeps its error handler (rally returns errors on its own
 * communicator), the program's own MPI traffic still works, and an MPI error
 * inside the engine (a broadcast from a root that does not exist, passed
 * straight to the engine past the API's check) comes back as a status whose
 * message names the MPI call, not as an abort.  Also: a NaN on any rank
 * makes a float MAX NaN everywhere, as rally.h promises (MPI's own MAX
 * may drop it).  Prints "host_ok rank=R".
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "rally/rally.h"

static int rank = -1;

static int bad(const char *what)
{
    printf("HOST_BAD rank=%d: %s\n", rank, what);
    fflush(stdout);
    return 1;
}

static int one_handle(int round)
{
    rally_t *r;
    if (rally_init(&r, NULL, NULL) != RALLY_OK)
        return bad(rally_errmsg(r));
    rank = rally_rank(r);
    int n = rally_world_size(r), world = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (n != world)
        return bad("world size differs from MPI_COMM_WORLD's");
    long x = rank + round;
    if (rally_allreduce(r, &x, 1, RALLY_INT64, RALLY_SUM, NULL, NULL) != RALLY_OK ||
        x != (long)n * (n - 1) / 2 + (long)n * round)
        return bad("allreduce");
    for (int nan_rank = 0; nan_rank < n; nan_rank++) {
        double y[2] = {rank == nan_rank ? NAN : rank, rank == nan_rank ? rank : NAN};
        if (rally_allreduce(r, y, 2, RALLY_DOUBLE, RALLY_MAX, NULL, NULL) != RALLY_OK ||
            !isnan(y[0]) || (n > 1 && !isnan(y[1])))
            return bad("a NaN operand did not make MAX NaN");
        float z = rank == nan_rank ? NAN : (float)rank;
        if (rally_allreduce(r, &z, 1, RALLY_FLOAT, RALLY_MIN, NULL, NULL) != RALLY_OK || !isnan(z))
            return bad("a NaN operand did not make MIN NaN");
    }
    if (round == 1) { /* an MPI error, returned */
        char b[4] = {0};
        int rc = rally__engine.broadcast(rally__api_engine(r), b, sizeof b, n + 5);
        if (rc == RALLY_OK || strstr(rally_errmsg(r), "MPI_Bcast") == NULL)
            return bad("a broadcast from a bad root did not fail naming MPI_Bcast");
        printf("rank %d: error returned: %s: %s\n", rank, rally_strstatus(rc), rally_errmsg(r));
    }
    rally_finalize(r);
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int round = 0; round < 2; round++)
        if (one_handle(round) != 0)
            MPI_Abort(MPI_COMM_WORLD, 1);
    int done = 1;
    MPI_Finalized(&done);
    if (done)
        return bad("rally finalized the host program's MPI");
    MPI_Errhandler h;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &h);
    if (h != MPI_ERRORS_ARE_FATAL)
        return bad("MPI_COMM_WORLD's error handler changed");
    MPI_Errhandler_free(&h);
    int one = 1, sum = 0, world = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != world)
        return bad("the program's own allreduce");
    printf("host_ok rank=%d\n", rank);
    MPI_Finalize();
    return 0;
}
