/*
 * bench_robust.c — what fault tolerance costs: the same float32 sum through
 * the public (robust) allreduce and through the plain collective underneath
 * it (the engine's plain_allreduce: src/coll, no copies, no cache),
 * interleaved rep by rep.  A third
 * variant, the plain collective out of place (into a second buffer, as the
 * robust call does so that its input survives a failed attempt), splits the
 * overhead into keeping the input and the rest (the copy back, the cache).
 *
 *   rally-run -n N bench_robust BYTES:REPS [BYTES:REPS ...]
 *
 * Each rep: a barrier, the timed call, and (untimed) a rally_checkpoint of an
 * empty model, as an iterative job would take, so the result cache is
 * dropped and its buffers reused.  Per-rep times are MAX-reduced over ranks;
 * rank 0 prints
 *   "ROBUST <bytes> <reps> <plain_us> <robust_us> <out_of_place_us>" (medians),
 * then the three minimums in the same order, then the medians of the per-rep
 * ratios robust / plain and out_of_place / plain (interleaved reps see the
 * same load, so on a shared machine these ratios are steadier than the
 * ratio of the medians).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "bench_common.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    rally_t *r;
    if (rally_init(&r, &argc, &argv) != RALLY_OK) {
        fprintf(stderr, "bench_robust: %s\n", rally_errmsg(r));
        return 1;
    }
    struct rally__engine *en = rally__api_engine(r);
    bench_spec spec[BENCH_MAX_SPECS];
    int nspec = bench_parse(argc, argv, 1, spec, BENCH_MAX_SPECS);
    if (nspec <= 0) {
        fprintf(stderr, "usage: bench_robust BYTES:REPS ...\n");
        return 2;
    }
    enum { PLAIN, ROBUST, OUT_OF_PLACE, NV };
    for (int s = 0; s < nspec; s++) {
        size_t count = spec[s].bytes / sizeof(float);
        int reps = spec[s].reps;
        float *buf = calloc(count ? count : 1, sizeof(float));
        float *out = calloc(count ? count : 1, sizeof(float));
        double *t = calloc(NV * (size_t)reps, sizeof *t), token = 0;
        if (buf == NULL || out == NULL || t == NULL) {
            fprintf(stderr, "bench_robust: out of memory\n");
            return 1;
        }
        for (int i = -2; i < reps; i++) {
            for (int v = 0; v < NV; v++) {
                rally_allreduce(r, &token, 1, RALLY_DOUBLE, RALLY_SUM, NULL, NULL);
                double t0 = bench_now_us();
                int rc = v == ROBUST
                             ? rally_allreduce(r, buf, count, RALLY_FLOAT, RALLY_SUM, NULL, NULL)
                             : rally__engine.plain_allreduce(en, buf, v == PLAIN ? buf : out,
                                                             count, RALLY_FLOAT, RALLY_SUM);
                double t1 = bench_now_us();
                if (rc != RALLY_OK || rally_checkpoint(r, NULL, 0, NULL, 0) != RALLY_OK) {
                    fprintf(stderr, "bench_robust: %s\n", rally_errmsg(r));
                    return 1;
                }
                if (i >= 0)
                    t[NV * i + v] = t1 - t0;
            }
        }
        rally_allreduce(r, t, NV * (size_t)reps, RALLY_DOUBLE, RALLY_MAX, NULL, NULL);
        double med[NV], lo[NV], ratio[NV], *p = malloc((size_t)reps * sizeof *p);
        for (int v = 0; v < NV; v++) {
            for (int i = 0; i < reps; i++)
                p[i] = t[NV * i + v];
            qsort(p, (size_t)reps, sizeof *p, cmp);
            med[v] = p[reps / 2];
            lo[v] = p[0];
            for (int i = 0; i < reps; i++)
                p[i] = t[NV * i + PLAIN] > 0 ? t[NV * i + v] / t[NV * i + PLAIN] : 1;
            qsort(p, (size_t)reps, sizeof *p, cmp);
            ratio[v] = p[reps / 2];
        }
        if (rally_rank(r) == 0)
            printf("ROBUST %zu %d %.3f %.3f %.3f %.3f %.3f %.3f %.4f %.4f\n", spec[s].bytes, reps,
                   med[PLAIN], med[ROBUST], med[OUT_OF_PLACE], lo[PLAIN], lo[ROBUST],
                   lo[OUT_OF_PLACE], ratio[ROBUST], ratio[OUT_OF_PLACE]);
        fflush(stdout);
        free(p);
        free(buf);
        free(out);
        free(t);
    }
    return rally_finalize(r) == RALLY_OK ? 0 : 1;
}
