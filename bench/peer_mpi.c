/*
 * peer_mpi.c — the OpenMPI peer: MPI_Allreduce (float32 sum, in place),
 * timed exactly as bench_allreduce.c times rally (see bench_common.h).
 * Built by bench/run.sh with mpicc, not by CMake.
 */
#include <mpi.h>

#include "bench_common.h"

static void die(const char *what, int rc)
{
    fprintf(stderr, "peer_mpi: %s failed (%d)\n", what, rc);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

int main(int argc, char **argv)
{
    bench_spec spec[BENCH_MAX_SPECS];
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int nspec = bench_parse(argc, argv, 1, spec, BENCH_MAX_SPECS);
    if (nspec <= 0) {
        if (rank == 0)
            fprintf(stderr, BENCH_USAGE, argv[0]);
        MPI_Finalize();
        return 2;
    }
    for (int s = 0; s < nspec; s++) {
        size_t count = spec[s].bytes / sizeof(float);
        float *buf = malloc(spec[s].bytes);
        double *t = malloc(sizeof(double) * ((size_t)spec[s].reps + 1)); /* + faults */
        if (!buf || !t)
            die("malloc", 0);
        float token = 0;
        int rc;

        bench_fill_check(buf, count, rank);
        if ((rc = MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM,
                                MPI_COMM_WORLD)) != MPI_SUCCESS)
            die("MPI_Allreduce", rc);
        long bad = bench_verify(buf, count, n);
        if (bad >= 0) {
            fprintf(stderr, "peer_mpi: rank %d: wrong sum at element %ld of %zu bytes\n", rank, bad,
                    spec[s].bytes);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        memset(buf, 0, spec[s].bytes);

        int warm = bench_warmup(spec[s].reps), batch = bench_batch(spec[s].bytes);
        double f0 = 0;
        for (int i = -warm; i < spec[s].reps; i++) {
            if (i == 0)
                f0 = bench_minflt();
            MPI_Allreduce(MPI_IN_PLACE, &token, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double t0 = bench_now_us();
            for (int b = 0; b < batch; b++)
                if ((rc = MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM,
                                        MPI_COMM_WORLD)) != MPI_SUCCESS)
                    die("MPI_Allreduce", rc);
            double t1 = bench_now_us();
            if (i >= 0)
                t[i] = (t1 - t0) / batch;
        }
        t[spec[s].reps] = (bench_minflt() - f0) / batch;
        MPI_Allreduce(MPI_IN_PLACE, t, spec[s].reps + 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (rank == 0)
            bench_report_as("RESULT", spec[s].bytes, t, spec[s].reps,
                            t[spec[s].reps] / spec[s].reps);
        free(buf);
        free(t);
    }
    MPI_Finalize();
    return 0;
}
