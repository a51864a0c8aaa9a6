/*
 * bench_algos.c — rally's allreduce algorithms side by side in one job,
 * interleaved rep by rep, so that a machine whose load drifts (a shared
 * host) affects every algorithm alike.
 *
 *   rally-run -n N bench_algos BYTES:REPS rally_ring_threshold_bytes=BYTES
 *       rally_hd_threshold_bytes=BYTES+4
 *
 * The algorithm follows the size (docs/determinism.md), so each rep times
 * three float32 sums of nearly the same size: BYTES (at the ring threshold:
 * the tree), BYTES + 4 (halving-doubling) and BYTES + 8 (the ring), each
 * behind a 1-float allreduce as a barrier, through the public call, each
 * result checked once.  Per-rep times are MAX-reduced over ranks; rank 0
 * prints "ALGOS <bytes> <reps> <tree_us> <hd_us> <ring_us>" (medians).
 * Uses only the public API.
 */
#include <rally/rally.h>

#include "bench_common.h"

enum { NALG = 3 };

static int fail(rally_t *r, const char *what)
{
    fprintf(stderr, "bench_algos: %s: %s\n", what, rally_errmsg(r));
    rally_finalize(r);
    return 1;
}

int main(int argc, char **argv)
{
    rally_t *r = NULL;
    if (rally_init(&r, &argc, &argv) != RALLY_OK)
        return fail(r, "rally_init");
    bench_spec spec[BENCH_MAX_SPECS];
    int nspec = bench_parse(argc, argv, 1, spec, BENCH_MAX_SPECS);
    if (nspec <= 0) {
        fprintf(stderr, BENCH_USAGE, argv[0]);
        rally_finalize(r);
        return 2;
    }
    const int rank = rally_rank(r), n = rally_world_size(r);
    for (int s = 0; s < nspec; s++) {
        int reps = spec[s].reps;
        size_t count[NALG];
        float *buf[NALG];
        for (int a = 0; a < NALG; a++) {
            count[a] = spec[s].bytes / sizeof(float) + (size_t)a;
            if ((buf[a] = malloc(count[a] * sizeof(float))) == NULL)
                return fail(r, "out of memory");
            bench_fill_check(buf[a], count[a], rank);
            if (rally_allreduce(r, buf[a], count[a], RALLY_FLOAT, RALLY_SUM, NULL, NULL) !=
                RALLY_OK)
                return fail(r, "rally_allreduce");
            if (bench_verify(buf[a], count[a], n) >= 0)
                return fail(r, "wrong sum");
            memset(buf[a], 0, count[a] * sizeof(float));
        }
        double *t = malloc(sizeof(double) * NALG * (size_t)reps),
               *p = malloc(sizeof(double) * (size_t)reps);
        if (t == NULL || p == NULL)
            return fail(r, "out of memory");
        float token = 0;
        for (int i = -bench_warmup(reps); i < reps; i++) {
            for (int a = 0; a < NALG; a++) {
                int b = (a + (i < 0 ? 0 : i)) % NALG; /* rotate which algorithm goes first */
                if (rally_allreduce(r, &token, 1, RALLY_FLOAT, RALLY_SUM, NULL, NULL) != RALLY_OK)
                    return fail(r, "barrier");
                double t0 = bench_now_us();
                if (rally_allreduce(r, buf[b], count[b], RALLY_FLOAT, RALLY_SUM, NULL, NULL) !=
                    RALLY_OK)
                    return fail(r, "rally_allreduce");
                double t1 = bench_now_us();
                if (i >= 0)
                    t[NALG * i + b] = t1 - t0;
                if (rally_checkpoint(r, NULL, 0, NULL, 0) != RALLY_OK) /* untimed */
                    return fail(r, "rally_checkpoint");
            }
        }
        if (rally_allreduce(r, t, NALG * (size_t)reps, RALLY_DOUBLE, RALLY_MAX, NULL, NULL) !=
            RALLY_OK)
            return fail(r, "rally_allreduce (max)");
        double med[NALG];
        for (int a = 0; a < NALG; a++) {
            for (int i = 0; i < reps; i++)
                p[i] = t[NALG * i + a];
            qsort(p, (size_t)reps, sizeof *p, bench_cmp_double);
            med[a] = p[reps / 2];
        }
        if (rank == 0)
            printf("ALGOS %zu %d %.3f %.3f %.3f\n", spec[s].bytes, reps, med[0], med[1], med[2]);
        fflush(stdout);
        for (int a = 0; a < NALG; a++)
            free(buf[a]);
        free(t);
        free(p);
    }
    return rally_finalize(r) == RALLY_OK ? 0 : 1;
}
