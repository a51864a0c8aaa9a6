/*
 * bench_allreduce.c — rally's allreduce benchmark (float32 sum, in place).
 *
 *   rally-run -n N bench_allreduce BYTES:REPS [BYTES:REPS ...] [rally_key=value ...]
 *
 * The method (bench_common.h) is the one peer_mpi.c and peer_gloo.cc use:
 * per size a correctness check, warm-up reps, then timed reps, each behind a
 * 1-float allreduce as a barrier; per-rep times are MAX-reduced over ranks
 * and rank 0 prints "RESULT <bytes> <reps> <median_us> <min_us> <max_us>".
 * Uses only the public API.
 */
#include <rally/rally.h>

#include "bench_common.h"

static int fail(rally_t *r, int joined, const char *what, int rc)
{
    fprintf(stderr, "bench_allreduce: rank %d: %s: %s: %s\n", joined ? rally_rank(r) : -1, what,
            rally_strstatus(rc), rally_errmsg(r));
    rally_finalize(r);
    return 1;
}

int main(int argc, char **argv)
{
    rally_t *r = NULL;
    int rc = rally_init(&r, &argc, &argv);
    if (rc != RALLY_OK)
        return fail(r, 0, "rally_init", rc);
    bench_spec spec[BENCH_MAX_SPECS];
    int nspec = bench_parse(argc, argv, 1, spec, BENCH_MAX_SPECS);
    if (nspec <= 0) {
        fprintf(stderr, BENCH_USAGE, argv[0]);
        rally_finalize(r);
        return 2;
    }
    const int rank = rally_rank(r), n = rally_world_size(r);
    for (int s = 0; s < nspec; s++) {
        size_t count = spec[s].bytes / sizeof(float);
        float *buf = malloc(spec[s].bytes);
        double *t = malloc(sizeof(double) * (size_t)spec[s].reps);
        if (!buf || !t) {
            fprintf(stderr, "bench_allreduce: out of memory for %zu bytes\n", spec[s].bytes);
            rally_finalize(r);
            return 1;
        }
        float token = 0;

        bench_fill_check(buf, count, rank);
        if ((rc = rally_allreduce(r, buf, count, RALLY_FLOAT, RALLY_SUM, NULL, NULL)) != RALLY_OK)
            return fail(r, 1, "rally_allreduce", rc);
        long bad = bench_verify(buf, count, n);
        if (bad >= 0) {
            fprintf(stderr, "bench_allreduce: rank %d: wrong sum at element %ld of %zu bytes\n",
                    rank, bad, spec[s].bytes);
            rally_finalize(r);
            return 1;
        }
        memset(buf, 0, spec[s].bytes);

        int warm = bench_warmup(spec[s].reps);
        for (int i = -warm; i < spec[s].reps; i++) {
            if ((rc = rally_allreduce(r, &token, 1, RALLY_FLOAT, RALLY_SUM, NULL, NULL)) !=
                RALLY_OK)
                return fail(r, 1, "rally_allreduce (barrier)", rc);
            double t0 = bench_now_us();
            rc = rally_allreduce(r, buf, count, RALLY_FLOAT, RALLY_SUM, NULL, NULL);
            double t1 = bench_now_us();
            if (rc != RALLY_OK)
                return fail(r, 1, "rally_allreduce", rc);
            if (i >= 0)
                t[i] = t1 - t0;
            /* untimed, as an iterative job would: drops the recovery cache */
            if ((rc = rally_checkpoint(r, NULL, 0, NULL, 0)) != RALLY_OK)
                return fail(r, 1, "rally_checkpoint", rc);
        }
        if ((rc = rally_allreduce(r, t, (size_t)spec[s].reps, RALLY_DOUBLE, RALLY_MAX, NULL,
                                  NULL)) != RALLY_OK)
            return fail(r, 1, "rally_allreduce (max)", rc);
        if (rank == 0)
            bench_report(spec[s].bytes, t, spec[s].reps);
        free(buf);
        free(t);
    }
    rc = rally_finalize(r);
    if (rc != RALLY_OK) {
        fprintf(stderr, "bench_allreduce: rally_finalize: %s\n", rally_strstatus(rc));
        return 1;
    }
    return 0;
}
